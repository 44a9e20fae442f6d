/** One token through a whole decoder layer in one call (arl_decode_layer_bf16). @module */
import type { Kernels } from "../kernels.ts";
import { KernelLibraryError, libraryPath } from "../library.ts";
import type { Tensor } from "../tensor.ts";
import { dim, expectDisjoint, expectInt, expectNumber, expectTensor, ptrOf } from "./_args.ts";

/** The length of a row tensor: f32, shape (N) or (1, N). */
function rowLength(t: Tensor, name: string, n = -1): number {
  expectTensor(t, name, "f32", t.shape.length === 2 ? [1, n] : [n]);
  return t.shape[t.shape.length - 1]!;
}

/** The bf16 weights and fp32 norms of one decoder layer, for {@linkcode decodeLayer}. */
export interface DecodeLayerWeights {
  /** RMSNorm weight before attention (C). */
  ln1: Tensor;
  /** Stacked q|k|v projection ((HQ + 2 HKV) D, C), bf16. */
  qkv: Tensor;
  /** Its bias ((HQ + 2 HKV) D), or null. */
  bqkv: Tensor | null;
  /** Attention output projection (C, HQ D), bf16. */
  o: Tensor;
  /** RMSNorm weight before the MLP (C). */
  ln2: Tensor;
  /** Stacked gate|up projection (2F, C: gate rows, then up), bf16. */
  gateUp: Tensor;
  /** Down projection (C, F), bf16. */
  down: Tensor;
  /** Each query head's RMSNorm weight (D), before RoPE (Qwen3's q_norm); absent: none. */
  qNorm?: Tensor | null;
  /** Each key head's RMSNorm weight (D), likewise (k_norm). */
  kNorm?: Tensor | null;
}

/**
 * The token's cache place and the model's constants, shared by every layer of
 * {@linkcode decodeLayers}.
 */
export interface DecodeStepConstants {
  /** One int32 each: the cache slot, the token's position, and the keys it attends to. */
  slot: Tensor;
  position: Tensor;
  len: Tensor;
  /** Query heads. */
  hq: number;
  eps: number;
  theta: number;
  /** Attention's score scale (usually 1 / sqrt(D)). */
  scale: number;
}

/** The token's cache place and the layer's constants, for {@linkcode decodeLayer}. */
export interface DecodeLayerStep extends DecodeStepConstants {
  /** This layer's caches (S, HKV, L, D). */
  kCache: Tensor;
  vCache: Tensor;
  /** RoPE's frequencies (D / 2), as `ropeFreqs` takes them (a scaled RoPE); absent: theta's. */
  invFreq?: Tensor | null;
}

/** One layer of {@linkcode decodeLayers}: its weights and its caches (S, HKV, L, D). */
export interface DecodeLayersEntry extends DecodeLayerWeights {
  kCache: Tensor;
  vCache: Tensor;
}

/**
 * The rows a decode layer leaves behind, its calls' outputs (see {@linkcode decodeLayer}):
 * each shaped (N) or (1, N).
 */
export interface DecodeLayerRows {
  /** The q|k|v projection with RoPE applied to q and k ((HQ + 2 HKV) D). */
  qkv: Tensor;
  /** The attention output before the o projection (HQ D). */
  attn: Tensor;
  /** SwiGLU's output (F). */
  act: Tensor;
}

/** The shapes a decode layer's tensors agree on, checked (`at` names the layer in errors). */
function checkLayer(
  x: Tensor,
  w: DecodeLayerWeights,
  kCache: Tensor,
  vCache: Tensor,
  step: DecodeStepConstants,
  rows: DecodeLayerRows,
  at: string,
): { c: number; f: number; hkv: number; d: number; s: number; l: number } {
  const c = rowLength(x, "x");
  expectTensor(kCache, `${at}kCache`, "f32", [-1, -1, -1, -1]);
  const [s, hkv, l, d] = kCache.shape as [number, number, number, number];
  expectTensor(vCache, `${at}vCache`, "f32", [s, hkv, l, d]);
  expectInt(step.hq, "hq");
  if (step.hq % hkv !== 0) {
    throw new RangeError(`hq (${step.hq}) must be a multiple of the cache's ${hkv} kv heads`);
  }
  const nq = (step.hq + 2 * hkv) * d;
  expectTensor(w.ln1, `${at}ln1`, "f32", [c]);
  expectTensor(w.qkv, `${at}qkv weight`, "bf16", [nq, c]);
  if (w.bqkv) expectTensor(w.bqkv, `${at}qkv bias`, "f32", [nq]);
  expectTensor(w.o, `${at}o weight`, "bf16", [c, step.hq * d]);
  expectTensor(w.ln2, `${at}ln2`, "f32", [c]);
  expectTensor(w.gateUp, `${at}gateUp weight`, "bf16", [-1, c]);
  const f = dim(w.gateUp, 0) / 2;
  if (!Number.isInteger(f)) {
    throw new RangeError(
      `${at}gateUp must have an even number of rows, got ${dim(w.gateUp, 0)}`,
    );
  }
  expectTensor(w.down, `${at}down weight`, "bf16", [c, f]);
  expectTensor(step.slot, "slot", "i32", [1]);
  expectTensor(step.position, "position", "i32", [1]);
  expectTensor(step.len, "len", "i32", [1]);
  rowLength(rows.qkv, "qkv rows", nq);
  rowLength(rows.attn, "attn rows", step.hq * d);
  rowLength(rows.act, "act rows", f);
  expectNumber(step.eps, "eps");
  expectNumber(step.theta, "theta", true);
  expectNumber(step.scale, "scale");
  expectDisjoint([
    ["x", x],
    ["qkv rows", rows.qkv],
    ["attn rows", rows.attn],
    ["act rows", rows.act],
    [`${at}kCache`, kCache],
    [`${at}vCache`, vCache],
  ], [
    [`${at}ln1`, w.ln1],
    [`${at}qkv weight`, w.qkv],
    [`${at}qkv bias`, w.bqkv],
    [`${at}o weight`, w.o],
    [`${at}ln2`, w.ln2],
    [`${at}gateUp weight`, w.gateUp],
    [`${at}down weight`, w.down],
    [`${at}qNorm`, w.qNorm ?? null],
    [`${at}kNorm`, w.kNorm ?? null],
    ["invFreq", (step as Partial<DecodeLayerStep>).invFreq ?? null],
    ["slot", step.slot],
    ["position", step.position],
    ["len", step.len],
  ]);
  return { c, f, hkv, d, s, l };
}

/** The arguments every decode-layer entry ends with: the token's place, the shapes, constants. */
function stepArgs(k: Kernels, step: DecodeStepConstants, shape: ReturnType<typeof checkLayer>) {
  const { c, f, hkv, d, s, l } = shape;
  return [
    step.slot.ptrIn(k),
    step.position.ptrIn(k),
    step.len.ptrIn(k),
    c,
    f,
    step.hq,
    hkv,
    d,
    s,
    l,
    step.eps,
    step.theta,
    step.scale,
  ] as const;
}

/**
 * One token through a decoder layer: x (C) += attention(rmsnorm(x)) . o^T, then
 * x += swiglu(rmsnorm(x) . gateUp^T) . down^T, writing the token's rotated key and its value
 * to the cache. The same as {@linkcode rmsnormQkvRopeForward}, {@linkcode attentionDecode},
 * `linearForward` (accumulating), {@linkcode rmsnormLinearSwigluForward} and `linearForward`
 * in sequence; the CUDA library runs it as four chained kernels for head dims 64 and 128 (C and
 * F multiples of 8), with every sum in a fixed order. x is (C) or (1, C).
 *
 * With `w.qNorm` / `w.kNorm` (Qwen3) or `step.invFreq` (a scaled RoPE) it calls
 * arl_decode_layer_norms_bf16 instead: the q|k|v projection without RoPE, then
 * {@linkcode normRopeKvCacheWrite}, then the rest as above (on CUDA, chained the same way).
 * Libraries built before that entry throw a KernelLibraryError ({@linkcode hasDecodeLayerNorms}
 * says first).
 */
export function decodeLayer(
  k: Kernels,
  x: Tensor,
  w: DecodeLayerWeights,
  step: DecodeLayerStep,
  rows: DecodeLayerRows,
): void {
  const { c, f, hkv, d, s, l } = checkLayer(x, w, step.kCache, step.vCache, step, rows, "");
  const [qNorm, kNorm, invFreq] = [w.qNorm ?? null, w.kNorm ?? null, step.invFreq ?? null];
  // (the two entries' arguments: these, then the norms entry's three, then the rest)
  const tensors = [
    k.ctx,
    x.ptrIn(k),
    rows.qkv.ptrIn(k),
    rows.attn.ptrIn(k),
    rows.act.ptrIn(k),
    w.ln1.ptrIn(k),
    w.qkv.ptrIn(k),
    ptrOf(k, w.bqkv),
    w.o.ptrIn(k),
    w.ln2.ptrIn(k),
    w.gateUp.ptrIn(k),
    w.down.ptrIn(k),
    step.kCache.ptrIn(k),
    step.vCache.ptrIn(k),
  ] as const;
  const rest = stepArgs(k, step, { c, f, hkv, d, s, l });
  if (!qNorm && !kNorm && !invFreq) {
    k.check("arl_decode_layer_bf16", k.sym.arl_decode_layer_bf16(...tensors, ...rest));
    return;
  }
  if (qNorm) expectTensor(qNorm, "qNorm", "f32", [d]);
  if (kNorm) expectTensor(kNorm, "kNorm", "f32", [d]);
  if (invFreq) expectTensor(invFreq, "invFreq", "f32", [d / 2]);
  const fn = k.sym.arl_decode_layer_norms_bf16;
  if (fn === null) {
    throw new KernelLibraryError(
      `The ${k.device} kernel library ${libraryPath(k.device)} was built before ` +
        "arl_decode_layer_norms_bf16: run `deno task build` to rebuild it.",
    );
  }
  const norms = [ptrOf(k, qNorm), ptrOf(k, kNorm), ptrOf(k, invFreq)] as const;
  k.check("arl_decode_layer_norms_bf16", fn(...tensors, ...norms, ...rest));
}

/**
 * One token through several decoder layers in one call (arl_decode_layers_bf16): the same as
 * {@linkcode decodeLayer} once a layer, in order, every layer with the same shapes; the last
 * layer's rows are left in `rows`. With `AGENTRL_CUDA_DECODE_TOKEN=1` the CUDA library runs
 * them all in one persistent kernel that streams the weights through shared memory across the
 * layers' steps (opt-in: slower than a call a layer on an H100 so far).
 *
 * @example
 * ```ts ignore
 * const layers = weights.map((w, l) => ({ ...w, kCache: kc[l], vCache: vc[l] }));
 * decodeLayers(k, x, layers, { slot, position, len, hq: 14, eps: 1e-6, theta: 1e6, scale: 0.125 }, rows);
 * ```
 */
export function decodeLayers(
  k: Kernels,
  x: Tensor,
  layers: readonly DecodeLayersEntry[],
  step: DecodeStepConstants,
  rows: DecodeLayerRows,
): void {
  if (layers.length === 0) throw new RangeError("decodeLayers needs at least one layer");
  if ((step as Partial<DecodeLayerStep>).invFreq) {
    throw new RangeError(
      "decodeLayers takes no RoPE frequency table (invFreq): call decodeLayer a layer",
    );
  }
  let shape = null as ReturnType<typeof checkLayer> | null;
  const table = new BigUint64Array(9 * layers.length);
  layers.forEach((w, i) => {
    if (w.qNorm || w.kNorm) {
      throw new RangeError(
        `layers[${i}] has q/k norms, which decodeLayers does not take: call decodeLayer a layer`,
      );
    }
    const got = checkLayer(x, w, w.kCache, w.vCache, step, rows, `layers[${i}].`);
    if (shape && (got.f !== shape.f || got.s !== shape.s || got.l !== shape.l)) {
      throw new RangeError(
        `layers[${i}] has F ${got.f} and caches (${got.s}, ${got.hkv}, ${got.l}, ${got.d}); ` +
          `layers[0] has F ${shape.f} and (${shape.s}, ${shape.hkv}, ${shape.l}, ${shape.d})`,
      );
    }
    shape ??= got;
    const ptrs = [w.ln1, w.qkv, w.bqkv, w.o, w.ln2, w.gateUp, w.down, w.kCache, w.vCache];
    ptrs.forEach((t, j) => {
      table[9 * i + j] = t ? BigInt(Deno.UnsafePointer.value(t.ptrIn(k))) : 0n;
    });
  });
  // (each layer's own tensors were checked above; the caches must also be apart across layers)
  expectDisjoint(
    layers.flatMap((w, i) =>
      [[`layers[${i}].kCache`, w.kCache], [`layers[${i}].vCache`, w.vCache]] as const
    ),
    [],
  );
  k.check(
    "arl_decode_layers_bf16",
    k.sym.arl_decode_layers_bf16(
      k.ctx,
      x.ptrIn(k),
      rows.qkv.ptrIn(k),
      rows.attn.ptrIn(k),
      rows.act.ptrIn(k),
      table,
      layers.length,
      ...stepArgs(k, step, shape!),
    ),
  );
}

/** Whether `k`'s library has arl_decode_layer_norms_bf16 (libraries built before it do not). */
export function hasDecodeLayerNorms(k: Kernels): boolean {
  return k.sym.arl_decode_layer_norms_bf16 !== null;
}
