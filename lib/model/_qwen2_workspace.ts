// Activation workspaces of the Qwen2 model: one native buffer (an Arena) per
// purpose, laid out by a BufferLayout for one batch shape and bound as named
// view tensors. Training keeps every activation the backward pass reads; the
// decode and head workspaces are scratch reused across layers.
//
// Shape legend: T tokens, B sequences, C hidden, QD = HQ * D, KVD = HKV * D,
// F intermediate, V vocabulary, N new tokens (decode), R logit rows.
import { type Kernels, Tensor } from "../../ffi/mod.ts";
import { hasQkNorm, type Qwen2Config } from "./config.ts";
import { ALIGN_WORDS, BufferLayout } from "./param_layout.ts";

/**
 * One growable native buffer. `bind` returns views for a layout; the buffer is
 * reallocated only when a layout needs more room than it has (older views then
 * stop working: their parent is freed), to at least `slack` times its old size
 * (so that slowly growing shapes, as in decoding, do not reallocate every call).
 */
export class Arena implements Disposable {
  readonly #kernels: Kernels;
  readonly #slack: number;
  #buffer: Tensor<"f32"> | null = null;
  #generation = 0;

  constructor(kernels: Kernels, slack = 1) {
    this.#kernels = kernels;
    this.#slack = slack;
  }

  /** A view getter over `layout`'s regions, growing the buffer if needed. */
  bind(layout: BufferLayout): (name: string, shape?: readonly number[]) => Tensor {
    if (this.#buffer === null || this.#buffer.size < layout.total) {
      const words = Math.max(layout.total, Math.ceil((this.#buffer?.size ?? 0) * this.#slack));
      this.free(); // (the views of the old buffer are stale from here, even if the next throws)
      this.#buffer = new Tensor(this.#kernels, [words], "f32");
    }
    const buffer = this.#buffer;
    return (name, shape) => BufferLayout.view(buffer, layout.get(name), shape);
  }

  /** Counts the buffers freed: views bound at another count may be stale. */
  get generation(): number {
    return this.#generation;
  }

  /** Bytes held now. */
  get byteSize(): number {
    return this.#buffer?.byteSize ?? 0;
  }

  /** Frees the buffer (views made from it stop working); a later bind allocates again. */
  free(): void {
    if (this.#buffer !== null) this.#generation++;
    this.#buffer?.free();
    this.#buffer = null;
  }

  [Symbol.dispose](): void {
    this.free();
  }
}

interface Dims {
  c: number;
  qd: number;
  kvd: number;
  f: number;
  hq: number;
  hkv: number;
  d: number;
  v: number;
  layers: number;
  qkNorm: boolean;
}

function dims(cfg: Qwen2Config): Dims {
  return {
    c: cfg.hidden_size,
    qd: cfg.num_attention_heads * cfg.head_dim,
    kvd: cfg.num_key_value_heads * cfg.head_dim,
    f: cfg.intermediate_size,
    hq: cfg.num_attention_heads,
    hkv: cfg.num_key_value_heads,
    d: cfg.head_dim,
    v: cfg.vocab_size,
    layers: cfg.num_hidden_layers,
    qkNorm: hasQkNorm(cfg),
  };
}

/**
 * Qwen3's per-head norms of queries and keys: the projections before the norm, as rows of
 * one head each (the norm's input, kept for its backward pass), and the norm's rstd.
 */
export interface QkNormActs {
  qp: Tensor; // (T, QD) q projection
  qp2: Tensor; // (T HQ, D) same memory
  rq: Tensor; // (T HQ)
  kp: Tensor; // (T, KVD) k projection
  kp2: Tensor; // (T HKV, D)
  rk: Tensor; // (T HKV)
  q2: Tensor; // (T HQ, D) the layer's q (the norm's output), by head
  k2: Tensor; // (T HKV, D)
}

/** Saved activations of one decoder layer (training). */
export interface LayerActs {
  h1: Tensor; // (T, C) input_layernorm output
  rstd1: Tensor; // (T)
  q: Tensor; // (T, QD) after RoPE
  q3: Tensor; // (T, HQ, D) same memory
  k: Tensor; // (T, KVD) after RoPE
  k3: Tensor; // (T, HKV, D)
  v: Tensor; // (T, KVD)
  v3: Tensor; // (T, HKV, D)
  a: Tensor; // (T, QD) attention output
  a3: Tensor; // (T, HQ, D)
  lse: Tensor; // (HQ, T)
  m: Tensor; // (T, C) residual after attention
  h2: Tensor; // (T, C) post_attention_layernorm output
  rstd2: Tensor; // (T)
  g: Tensor; // (T, F) gate
  u: Tensor; // (T, F) up
  s: Tensor; // (T, F) silu(gate) * up
  qkNorm: QkNormActs | null; // Qwen3 only
}

/** Every activation and backward scratch buffer of one (T, B) batch shape. */
export interface TrainActs {
  t: number;
  b: number;
  tokens: Tensor; // (T) i32
  positions: Tensor; // (T) i32
  targets: Tensor; // (T) i32
  cu: Tensor; // (B + 1) i32
  res: Tensor[]; // L + 1 residual streams (T, C): res[l] is layer l's input
  layers: LayerActs[];
  hf: Tensor; // (T, C) final norm output
  rstdf: Tensor; // (T)
  logp: Tensor; // (T)
  entropy: Tensor; // (T)
  lseLp: Tensor; // (T) log-sum-exp of the logits
  values: Tensor; // (T)
  values2: Tensor; // (T, 1) same memory
  // backward scratch, reused by every layer
  dres: Tensor; // (T, C) gradient of the residual stream
  dtmp: Tensor; // (T, C)
  dh: Tensor; // (T, C) gradient of a norm's output
  dq: Tensor; // (T, QD)
  dq3: Tensor;
  dk: Tensor; // (T, KVD)
  dk3: Tensor;
  dv: Tensor; // (T, KVD)
  dv3: Tensor;
  da: Tensor; // (T, QD)
  da3: Tensor;
  dg: Tensor; // (T, F)
  du: Tensor; // (T, F)
  ds: Tensor; // (T, F)
  dlogp: Tensor; // (T)
  dentropy: Tensor; // (T)
  dvalues: Tensor; // (T)
  /** Qwen3: the gradients of the q and k projections (before the norms), and dq, dk by head. */
  dqk: { dqp: Tensor; dqp2: Tensor; dkp: Tensor; dkp2: Tensor; dq2: Tensor; dk2: Tensor } | null;
}

/** Lays out and binds the training workspace for T tokens in B sequences. */
export function bindTrainActs(arena: Arena, cfg: Qwen2Config, t: number, b: number): TrainActs {
  const { c, qd, kvd, f, hq, hkv, d, layers, qkNorm } = dims(cfg);
  const L = new BufferLayout();
  L.add("tokens", [t], "i32");
  L.add("positions", [t], "i32");
  L.add("targets", [t], "i32");
  L.add("cu", [b + 1], "i32");
  for (let l = 0; l <= layers; l++) L.add(`res.${l}`, [t, c]);
  for (let l = 0; l < layers; l++) {
    for (
      const [n, shape] of [
        ["h1", [t, c]],
        ["rstd1", [t]],
        ["q", [t, qd]],
        ["k", [t, kvd]],
        ["v", [t, kvd]],
        ["a", [t, qd]],
        ["lse", [hq, t]],
        ["m", [t, c]],
        ["h2", [t, c]],
        ["rstd2", [t]],
        ["g", [t, f]],
        ["u", [t, f]],
        ["s", [t, f]],
      ] as const
    ) L.add(`${n}.${l}`, shape);
    if (qkNorm) {
      L.add(`qp.${l}`, [t, qd]);
      L.add(`kp.${l}`, [t, kvd]);
      L.add(`rq.${l}`, [t * hq]);
      L.add(`rk.${l}`, [t * hkv]);
    }
  }
  for (const n of ["hf", "dres", "dtmp", "dh"]) L.add(n, [t, c]);
  for (const n of ["rstdf", "logp", "entropy", "lseLp", "values", "dlogp", "dentropy", "dvalues"]) {
    L.add(n, [t]);
  }
  for (const n of ["dq", "da"]) L.add(n, [t, qd]);
  for (const n of ["dk", "dv"]) L.add(n, [t, kvd]);
  for (const n of ["dg", "du", "ds"]) L.add(n, [t, f]);
  if (qkNorm) {
    L.add("dqp", [t, qd]);
    L.add("dkp", [t, kvd]);
  }

  const get = arena.bind(L);
  const byHead = (x: Tensor, heads: number) => Tensor.viewOf(x, 0, [t * heads, d]);
  const q3 = (x: Tensor) => Tensor.viewOf(x, 0, [t, hq, d]);
  const kv3 = (x: Tensor) => Tensor.viewOf(x, 0, [t, hkv, d]);
  const layerActs: LayerActs[] = [];
  for (let l = 0; l < layers; l++) {
    const q = get(`q.${l}`), k = get(`k.${l}`), v = get(`v.${l}`), a = get(`a.${l}`);
    layerActs.push({
      h1: get(`h1.${l}`),
      rstd1: get(`rstd1.${l}`),
      q,
      q3: q3(q),
      k,
      k3: kv3(k),
      v,
      v3: kv3(v),
      a,
      a3: q3(a),
      lse: get(`lse.${l}`),
      m: get(`m.${l}`),
      h2: get(`h2.${l}`),
      rstd2: get(`rstd2.${l}`),
      g: get(`g.${l}`),
      u: get(`u.${l}`),
      s: get(`s.${l}`),
      qkNorm: qkNorm
        ? {
          qp: get(`qp.${l}`),
          qp2: byHead(get(`qp.${l}`), hq),
          rq: get(`rq.${l}`),
          kp: get(`kp.${l}`),
          kp2: byHead(get(`kp.${l}`), hkv),
          rk: get(`rk.${l}`),
          q2: byHead(q, hq),
          k2: byHead(k, hkv),
        }
        : null,
    });
  }
  const values = get("values");
  const [dq, dk, dv, da] = [get("dq"), get("dk"), get("dv"), get("da")];
  return {
    t,
    b,
    tokens: get("tokens"),
    positions: get("positions"),
    targets: get("targets"),
    cu: get("cu"),
    res: Array.from({ length: layers + 1 }, (_, l) => get(`res.${l}`)),
    layers: layerActs,
    hf: get("hf"),
    rstdf: get("rstdf"),
    logp: get("logp"),
    entropy: get("entropy"),
    lseLp: get("lseLp"),
    values,
    values2: Tensor.viewOf(values, 0, [t, 1]),
    dres: get("dres"),
    dtmp: get("dtmp"),
    dh: get("dh"),
    dq,
    dq3: q3(dq),
    dk,
    dk3: kv3(dk),
    dv,
    dv3: kv3(dv),
    da,
    da3: q3(da),
    dg: get("dg"),
    du: get("du"),
    ds: get("ds"),
    dlogp: get("dlogp"),
    dentropy: get("dentropy"),
    dvalues: get("dvalues"),
    dqk: qkNorm
      ? {
        dqp: get("dqp"),
        dqp2: byHead(get("dqp"), hq),
        dkp: get("dkp"),
        dkp2: byHead(get("dkp"), hkv),
        dq2: byHead(dq, hq),
        dk2: byHead(dk, hkv),
      }
      : null,
  };
}

/** Where a step's new tokens go: positions, slots and lens, one (3, idsStride) i32 upload. */
export interface Placement {
  placement: Tensor; // (3, idsStride) i32: the rows below
  positions: Tensor; // (N) i32
  slots: Tensor; // (N) i32
  lens: Tensor; // (N) i32 = positions + 1
}

/** Scratch of a cached (decode / prefill) step over N new tokens. */
export interface DecodeActs {
  n: number;
  ids: Tensor; // (4, idsStride) i32: the rows below, one upload
  idsStride: number;
  placement: Tensor; // (3, idsStride) i32: ids without tokens (for ids already on the device)
  /**
   * Two more placements, written in turn by steps whose ids are on the device under
   * AGENTRL_DECODE_ALTERNATE_PLACEMENT=1 (Tensor.writeAlternating).
   */
  alternates: [Placement, Placement];
  tokens: Tensor; // (N) i32
  positions: Tensor; // (N) i32
  slots: Tensor; // (N) i32
  lens: Tensor; // (N) i32 = positions + 1
  x: Tensor; // (N, C) residual stream
  h: Tensor; // (N, C) norm output
  rstd: Tensor; // (N)
  q: Tensor; // (N, QD)
  q3: Tensor; // (N, HQ, D)
  k: Tensor; // (N, KVD)
  k3: Tensor; // (N, HKV, D)
  v: Tensor;
  v3: Tensor;
  a: Tensor; // (N, QD)
  a3: Tensor;
  /** (1, QD + 2 KVD): q, k and v side by side, when N = 1 (else null). */
  qkv: Tensor | null;
  /** (1, 2F): g and u side by side, when N = 1 (else null). */
  gu: Tensor | null;
  g: Tensor; // (N, F)
  u: Tensor;
  s: Tensor;
  /**
   * Qwen3: q and k by head (the norms' inputs), the normed q and k (what RoPE, the cache and
   * the attention take then) and the norms' rstd.
   */
  qkNorm: {
    q2: Tensor; // (N HQ, D) view of q
    k2: Tensor; // (N HKV, D) view of k
    qn2: Tensor; // (N HQ, D)
    qn3: Tensor; // (N, HQ, D) same memory
    kn2: Tensor; // (N HKV, D)
    kn3: Tensor; // (N, HKV, D)
    rq: Tensor; // (N HQ)
    rk: Tensor; // (N HKV)
  } | null;
}

/** Lays out and binds the decode scratch for N new tokens. */
export function bindDecodeActs(arena: Arena, cfg: Qwen2Config, n: number): DecodeActs {
  const { c, qd, kvd, f, hq, hkv, d, qkNorm } = dims(cfg);
  const L = new BufferLayout();
  // tokens, positions, slots and lens: rows of one region, uploaded together
  const stride = Math.ceil(n / ALIGN_WORDS) * ALIGN_WORDS;
  L.add("ids", [4, stride], "i32");
  L.add("alternates", [2, 3, stride], "i32");
  for (const name of ["x", "h"]) L.add(name, [n, c]);
  L.add("rstd", [n]);
  L.add("a", [n, qd]);
  L.add("s", [n, f]);
  // One token: q, k, v side by side (the output of one fused projection), and g, u.
  // Several: each its own (N, .) matrix.
  if (n === 1) {
    L.add("qkv", [1, qd + 2 * kvd]);
    L.add("gu", [1, 2 * f]);
  } else {
    L.add("q", [n, qd]);
    for (const name of ["k", "v"]) L.add(name, [n, kvd]);
    for (const name of ["g", "u"]) L.add(name, [n, f]);
  }
  if (qkNorm) {
    L.add("qn", [n * hq, d]);
    L.add("kn", [n * hkv, d]);
    L.add("rq", [n * hq]);
    L.add("rk", [n * hkv]);
  }
  const get = arena.bind(L);
  const ids = get("ids");
  const alternates = get("alternates");
  const placementAt = (bytes: number): Placement => ({
    placement: Tensor.viewOf(alternates, bytes, [3, stride]),
    positions: Tensor.viewOf(alternates, bytes, [n]),
    slots: Tensor.viewOf(alternates, bytes + 4 * stride, [n]),
    lens: Tensor.viewOf(alternates, bytes + 8 * stride, [n]),
  });
  const qkv = n === 1 ? get("qkv") : null;
  const gu = n === 1 ? get("gu") : null;
  const q = qkv ? Tensor.viewOf(qkv, 0, [1, qd]) : get("q");
  const k = qkv ? Tensor.viewOf(qkv, 4 * qd, [1, kvd]) : get("k");
  const v = qkv ? Tensor.viewOf(qkv, 4 * (qd + kvd), [1, kvd]) : get("v");
  const a = get("a");
  return {
    n,
    ids,
    idsStride: stride,
    placement: Tensor.viewOf(ids, 4 * stride, [3, stride]),
    alternates: [placementAt(0), placementAt(12 * stride)],
    tokens: Tensor.viewOf(ids, 0, [n]),
    positions: Tensor.viewOf(ids, 4 * stride, [n]),
    slots: Tensor.viewOf(ids, 8 * stride, [n]),
    lens: Tensor.viewOf(ids, 12 * stride, [n]),
    x: get("x"),
    h: get("h"),
    rstd: get("rstd"),
    q,
    q3: Tensor.viewOf(q, 0, [n, hq, d]),
    k,
    k3: Tensor.viewOf(k, 0, [n, hkv, d]),
    v,
    v3: Tensor.viewOf(v, 0, [n, hkv, d]),
    a,
    a3: Tensor.viewOf(a, 0, [n, hq, d]),
    qkv,
    gu,
    g: gu ? Tensor.viewOf(gu, 0, [1, f]) : get("g"),
    u: gu ? Tensor.viewOf(gu, 4 * f, [1, f]) : get("u"),
    s: get("s"),
    qkNorm: qkNorm
      ? {
        q2: Tensor.viewOf(q, 0, [n * hq, d]),
        k2: Tensor.viewOf(k, 0, [n * hkv, d]),
        qn2: get("qn"),
        qn3: Tensor.viewOf(get("qn"), 0, [n, hq, d]),
        kn2: get("kn"),
        kn3: Tensor.viewOf(get("kn"), 0, [n, hkv, d]),
        rq: get("rq"),
        rk: get("rk"),
      }
      : null,
  };
}

/** Scratch of the LM head over R chosen rows. */
export interface HeadActs {
  r: number;
  rows: Tensor; // (R) i32
  xr: Tensor; // (R, C) gathered residual rows
  hr: Tensor; // (R, C) final norm output
  rstd: Tensor; // (R)
  logits: Tensor; // (R, V)
}

/** Lays out and binds the head scratch for R rows. */
export function bindHeadActs(arena: Arena, cfg: Qwen2Config, r: number): HeadActs {
  const { c, v } = dims(cfg);
  const L = new BufferLayout();
  L.add("rows", [r], "i32");
  L.add("xr", [r, c]);
  L.add("hr", [r, c]);
  L.add("rstd", [r]);
  L.add("logits", [r, v]);
  const get = arena.bind(L);
  return {
    r,
    rows: get("rows"),
    xr: get("xr"),
    hr: get("hr"),
    rstd: get("rstd"),
    logits: get("logits"),
  };
}
