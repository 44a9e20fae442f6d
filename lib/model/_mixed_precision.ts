/**
 * Mixed precision for the Qwen2 model: fp32 master weights (what the optimizer
 * updates and checkpoints hold) and a bf16 copy of every matrix that the
 * kernels read (the `_bf16` entry points: fp32 activations, fp32
 * accumulation), refreshed when the master has changed.
 *
 * The copy is laid out for decoding: each layer's q, k and v projections are
 * one (QD + 2 KVD, C) matrix and its gate and up projections one (2F, C)
 * matrix, so that a token's projections take one GEMV each; the separate
 * matrices are row blocks (views) of those.
 *
 * @module
 */
import { type Kernels, Tensor, toBf16 } from "../../ffi/mod.ts";
import type { Qwen2Config } from "./config.ts";
import { BufferLayout } from "./param_layout.ts";

/** Storage of the weights the matrix kernels read. */
export type Precision = "f32" | "bf16";

/**
 * The precision a model uses: the option when given, else `AGENTRL_PRECISION`
 * (`f32` or `bf16`; `env` reads it, the environment by default), else bf16 on CUDA and f32 on
 * the CPU (where bf16 would only add a conversion).
 */
export function resolvePrecision(
  kernels: Kernels,
  option?: Precision,
  env: () => string | undefined = () => Deno.env.get("AGENTRL_PRECISION"),
): Precision {
  let value: string | undefined = option;
  let from = "the precision option";
  if (value === undefined) {
    value = env() || undefined;
    from = "AGENTRL_PRECISION";
  }
  if (value === undefined) return kernels.device === "cuda" ? "bf16" : "f32";
  if (value !== "f32" && value !== "bf16") {
    throw new RangeError(`${from} must be f32 or bf16, got '${value}'`);
  }
  return value;
}

/** One layer's bf16 matrices (and the fused q, k, v bias in fp32). */
export interface Bf16Layer {
  /** (QD + 2 KVD, C): q, k and v projections stacked. */
  qkv: Tensor<"bf16">;
  /** (QD + 2 KVD): their biases, or null without attention biases. */
  bqkv: Tensor<"f32"> | null;
  wq: Tensor<"bf16">;
  wk: Tensor<"bf16">;
  wv: Tensor<"bf16">;
  wo: Tensor<"bf16">;
  /** q|k|v, then o, as one flat span: what a decode step's attention reads. */
  attn: Tensor<"bf16">;
  /** (2F, C): gate and up projections stacked. */
  gu: Tensor<"bf16">;
  wg: Tensor<"bf16">;
  wu: Tensor<"bf16">;
  wd: Tensor<"bf16">;
}

/** The bf16 copy of a Qwen2 model's matrices; `master(name)` gives a parameter's fp32 view. */
export class Bf16Weights implements Disposable {
  readonly layers: Bf16Layer[] = [];
  /** The LM head (the embedding's rows when tied). */
  readonly head: Tensor<"bf16">;
  readonly #buffer: Tensor<"bf16">;
  readonly #bias: Tensor<"f32"> | null;
  // (bf16 destination, fp32 source) pairs rounded by sync(), and fp32 bias copies
  readonly #rounded: [Tensor<"bf16">, Tensor<"f32">][] = [];
  readonly #copied: [Tensor<"f32">, Tensor<"f32">][] = [];

  constructor(
    kernels: Kernels,
    cfg: Qwen2Config,
    master: (name: string) => Tensor<"f32">,
    hasBias: boolean,
  ) {
    const [c, f] = [cfg.hidden_size, cfg.intermediate_size];
    const qd = cfg.num_attention_heads * cfg.head_dim;
    const kvd = cfg.num_key_value_heads * cfg.head_dim;
    const L = new BufferLayout();
    const B = new BufferLayout();
    for (let i = 0; i < cfg.num_hidden_layers; i++) {
      L.add(`${i}.qkv`, [qd + 2 * kvd, c]);
      L.add(`${i}.o`, [c, qd]);
      L.add(`${i}.gu`, [2 * f, c]);
      L.add(`${i}.down`, [c, f]);
      if (hasBias) B.add(`${i}.bqkv`, [qd + 2 * kvd]);
    }
    L.add("head", [cfg.vocab_size, c]);
    this.#buffer = new Tensor(kernels, [L.total], "bf16");
    try {
      this.#bias = hasBias ? new Tensor(kernels, [B.total], "f32") : null;
    } catch (e) {
      this.#buffer.free();
      throw e;
    }
    const buf = this.#buffer;
    // rows [row0, row0 + rows) of region `name`
    const rows = (name: string, row0: number, n: number, cols: number) =>
      Tensor.viewOf(buf, (L.get(name).offset + row0 * cols) * 2, [n, cols], "bf16");
    // regions `first` .. `last` as one flat view (with the alignment between them)
    const span = (first: string, last: string) => {
      const [a, b] = [L.get(first), L.get(last)];
      return Tensor.viewOf(buf, a.offset * 2, [b.offset + b.size - a.offset], "bf16");
    };
    const round = (dst: Tensor<"bf16">, src: string) => {
      this.#rounded.push([dst, master(src)]);
      return dst;
    };
    for (let i = 0; i < cfg.num_hidden_layers; i++) {
      const p = `model.layers.${i}`;
      let bqkv: Tensor<"f32"> | null = null;
      if (this.#bias) {
        bqkv = BufferLayout.view(this.#bias, B.get(`${i}.bqkv`)) as Tensor<"f32">;
        const part = (at: number, n: number, src: string) =>
          this.#copied.push([Tensor.viewOf(bqkv!, at * 4, [n]), master(src)]);
        part(0, qd, `${p}.self_attn.q_proj.bias`);
        part(qd, kvd, `${p}.self_attn.k_proj.bias`);
        part(qd + kvd, kvd, `${p}.self_attn.v_proj.bias`);
      }
      this.layers.push({
        qkv: rows(`${i}.qkv`, 0, qd + 2 * kvd, c),
        bqkv,
        wq: round(rows(`${i}.qkv`, 0, qd, c), `${p}.self_attn.q_proj.weight`),
        wk: round(rows(`${i}.qkv`, qd, kvd, c), `${p}.self_attn.k_proj.weight`),
        wv: round(rows(`${i}.qkv`, qd + kvd, kvd, c), `${p}.self_attn.v_proj.weight`),
        wo: round(rows(`${i}.o`, 0, c, qd), `${p}.self_attn.o_proj.weight`),
        attn: span(`${i}.qkv`, `${i}.o`),
        gu: rows(`${i}.gu`, 0, 2 * f, c),
        wg: round(rows(`${i}.gu`, 0, f, c), `${p}.mlp.gate_proj.weight`),
        wu: round(rows(`${i}.gu`, f, f, c), `${p}.mlp.up_proj.weight`),
        wd: round(rows(`${i}.down`, 0, c, f), `${p}.mlp.down_proj.weight`),
      });
    }
    this.head = round(
      rows("head", 0, cfg.vocab_size, c),
      cfg.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight",
    );
  }

  /** Bytes held. */
  get byteSize(): number {
    return this.#buffer.byteSize + (this.#bias?.byteSize ?? 0);
  }

  /** Rounds every master matrix to bf16 (nearest even) into the copy; copies the biases. */
  sync(): void {
    for (const [dst, src] of this.#rounded) toBf16(dst.kernels, dst, src);
    for (const [dst, src] of this.#copied) dst.copyFrom(src);
  }

  [Symbol.dispose](): void {
    this.#buffer.free();
    this.#bias?.free();
  }
}
