/**
 * AdamW over a model's flat parameter buffer (llm.c style): first and second
 * moments in two more buffers of the same layout, updated by the native
 * `adamw` kernel (PyTorch's `torch.optim.AdamW`: decoupled weight decay
 * `p -= lr * wd * p`, bias-corrected moments). Global-norm gradient clipping
 * as `torch.nn.utils.clip_grad_norm_`. The state (moments and step count)
 * saves to `optimizer.safetensors` + `optimizer.json` and restores exactly.
 *
 * Weight decay skips biases and norm weights, as transformers' Trainer does
 * (its `get_decay_parameter_names` excludes `bias` and LayerNorm/RMSNorm
 * weights; Megatron, ROLL's other backend, skips biases and 1-D weights too).
 * The buffer is cut into a few contiguous spans of regions with the same
 * decay, and the kernel runs once per span.
 *
 * @example
 * ```ts
 * import { Kernels, Tensor } from "../../ffi/mod.ts";
 * import { AdamW } from "./optimizer.ts";
 * using k = Kernels.open({ threads: 1 });
 * using params = Tensor.from(k, new Float32Array([1, -1]));
 * using grads = Tensor.from(k, new Float32Array([3, 4]));
 * using opt = new AdamW({ params, grads });
 * console.log(opt.clipGradNorm(1)); // 5 (gradients now have norm ≈ 1)
 * opt.step(0.1);
 * console.log(params.toArray()); // ≈ [0.9, -1.1]: Adam's first step moves each by lr
 * ```
 *
 * @module
 */
import { join } from "node:path";
import { adamw, type Kernels, scale, sumSquares, Tensor } from "../../ffi/mod.ts";
import { type BufferLayout, qwen2ParamKind } from "../model/param_layout.ts";
import { CheckpointError, SafetensorsFile, writeSafetensors } from "../model/safetensors.ts";
import { readCheckpointJson } from "./checkpoint_dir.ts";

/** What {@linkcode AdamW} optimizes: a flat parameter buffer and its gradient. */
export interface Optimizable {
  /** Every parameter in one f32 buffer. */
  readonly params: Tensor<"f32">;
  /** Gradients, same shape and layout as params. */
  readonly grads: Tensor<"f32">;
  /** Names of the regions of params (Qwen2Model.layout); without it, all is one region. */
  readonly layout?: BufferLayout;
  /** Called after each step that wrote params (Qwen2Model: refreshes its bf16 copy). */
  markParamsChanged?(): void;
}

/** The optimizer fields of a role's `training_args` (ROLL / transformers names). */
export interface AdamWTrainingArgs {
  weight_decay?: number | null;
  adam_beta1?: number | null;
  adam_beta2?: number | null;
  adam_epsilon?: number | null;
}

/** {@linkcode AdamWOptions} from a role's `training_args` (unset fields keep the defaults). */
export function adamwOptionsOf(args: AdamWTrainingArgs): AdamWOptions {
  return {
    weightDecay: args.weight_decay ?? 0,
    ...(args.adam_beta1 != null ? { beta1: args.adam_beta1 } : {}),
    ...(args.adam_beta2 != null ? { beta2: args.adam_beta2 } : {}),
    ...(args.adam_epsilon != null ? { eps: args.adam_epsilon } : {}),
  };
}

/** Settings of {@linkcode AdamW} (defaults: PyTorch's and transformers'). */
export interface AdamWOptions {
  /** Default 0.9 (`adam_beta1`). */
  beta1?: number;
  /** Default 0.999 (`adam_beta2`). */
  beta2?: number;
  /** Default 1e-8 (`adam_epsilon`). */
  eps?: number;
  /** Decoupled weight decay, default 0 (`weight_decay`). */
  weightDecay?: number;
  /**
   * Whether the region called `name` is exempt from weight decay. Default:
   * biases and norm weights ({@linkcode defaultNoDecay}).
   */
  noDecay?: (name: string) => boolean;
}

/** A copy of the optimizer's state ({@linkcode AdamW.state}). */
export interface AdamWState {
  /** Updates made so far. */
  step: number;
  /** First moments (exp_avg), the params' length. */
  m: Float32Array;
  /** Second moments (exp_avg_sq), the params' length. */
  v: Float32Array;
}

/** File names {@linkcode AdamW.save} writes into a folder. */
export const OPTIMIZER_FILES = {
  tensors: "optimizer.safetensors",
  scalars: "optimizer.json",
} as const;

/**
 * The default decay exemption: biases and norm weights (by Qwen2's naming,
 * which is Hugging Face's).
 *
 * @example
 * ```ts
 * import { defaultNoDecay } from "./optimizer.ts";
 * console.log(defaultNoDecay("model.layers.0.self_attn.q_proj.bias")); // true
 * console.log(defaultNoDecay("model.norm.weight"), defaultNoDecay("lm_head.weight")); // true false
 * ```
 */
export function defaultNoDecay(name: string): boolean {
  return qwen2ParamKind(name) !== "matrix";
}

// A contiguous run of words [start, end) updated with one decay setting.
interface Span {
  start: number;
  end: number;
  decay: boolean;
  views: { p: Tensor<"f32">; m: Tensor<"f32">; v: Tensor<"f32">; g: Tensor<"f32"> };
}

// Regions to save under (whole buffer when there is no layout).
interface Part {
  name: string;
  offset: number;
  size: number;
}

function checkUnit(x: number, name: string): void {
  if (!(x >= 0 && x < 1)) throw new RangeError(`${name} must be in [0, 1), got ${x}`);
}

/**
 * AdamW over one flat buffer. The moments live in native memory beside the
 * parameters; free them with `dispose()` or `using`.
 */
export class AdamW implements Disposable {
  /** The kernels the updates run on (the params'). */
  readonly kernels: Kernels;
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
  readonly weightDecay: number;
  /** First moments, params' shape and layout. */
  readonly m: Tensor<"f32">;
  /** Second moments, params' shape and layout. */
  readonly v: Tensor<"f32">;
  readonly #target: Optimizable;
  readonly #spans: Span[];
  readonly #parts: Part[];
  #step = 0;

  /** Zero moments for `target`'s parameters, step count 0. */
  constructor(target: Optimizable, options: AdamWOptions = {}) {
    const { params, grads } = target;
    if (!(params instanceof Tensor) || params.dtype !== "f32") {
      throw new TypeError("AdamW needs params as an f32 Tensor");
    }
    if (!(grads instanceof Tensor) || grads.dtype !== "f32" || grads.size !== params.size) {
      throw new TypeError(`AdamW needs grads as an f32 Tensor of params' ${params.size} elements`);
    }
    this.beta1 = options.beta1 ?? 0.9;
    this.beta2 = options.beta2 ?? 0.999;
    this.eps = options.eps ?? 1e-8;
    this.weightDecay = options.weightDecay ?? 0;
    checkUnit(this.beta1, "beta1");
    checkUnit(this.beta2, "beta2");
    if (!(this.eps > 0)) throw new RangeError(`eps must be positive, got ${this.eps}`);
    if (!(this.weightDecay >= 0) || !Number.isFinite(this.weightDecay)) {
      throw new RangeError(`weightDecay must be a finite number >= 0, got ${this.weightDecay}`);
    }
    const layout = target.layout;
    if (layout !== undefined && layout.total > params.size) {
      throw new RangeError(
        `The layout needs ${layout.total} words but params hold ${params.size}`,
      );
    }
    this.kernels = params.kernels;
    this.#target = target;
    this.m = new Tensor(this.kernels, [params.size], "f32");
    this.v = new Tensor(this.kernels, [params.size], "f32");
    this.#parts = layout === undefined
      ? [{ name: "", offset: 0, size: params.size }]
      : layout.regions.map((r) => ({ name: r.name, offset: r.offset, size: r.size }));
    // Span boundaries: where the decay setting changes between regions. A span
    // runs to the next span's first region, so alignment padding (zero params,
    // zero grads: no update) is covered too; the last runs to the buffer's end.
    const starts: { at: number; decay: boolean }[] = [];
    if (layout === undefined || this.weightDecay === 0) {
      starts.push({ at: 0, decay: this.weightDecay > 0 });
    } else {
      const noDecay = options.noDecay ?? defaultNoDecay;
      for (const r of layout.regions) {
        const decay = !noDecay(r.name);
        if (starts.length === 0) starts.push({ at: 0, decay });
        else if (starts[starts.length - 1]!.decay !== decay) starts.push({ at: r.offset, decay });
      }
      if (starts.length === 0) starts.push({ at: 0, decay: false });
    }
    this.#spans = starts.map(({ at, decay }, i) => {
      const end = starts[i + 1]?.at ?? params.size;
      const view = (t: Tensor<"f32">) => Tensor.viewOf(t, at * 4, [end - at]);
      const views = { p: view(params), m: view(this.m), v: view(this.v), g: view(grads) };
      return { start: at, end, decay, views };
    });
  }

  /** Updates made so far (the 1-based step of the last update; 0 before any). */
  get stepCount(): number {
    return this.#step;
  }

  /** The spans the kernel runs over, for inspection: [start word, end word, decayed]. */
  get spans(): [number, number, boolean][] {
    return this.#spans.map((s) => [s.start, s.end, s.decay]);
  }

  /** The global L2 norm of the gradients (accumulated in double precision). */
  gradNorm(): number {
    return Math.sqrt(sumSquares(this.kernels, this.#target.grads));
  }

  /**
   * Scales the gradients so that their global L2 norm is at most `maxNorm`,
   * as `torch.nn.utils.clip_grad_norm_` (factor `maxNorm / (norm + 1e-6)`
   * when below 1), and returns the norm before clipping. A non-finite norm
   * leaves the gradients as they are: the caller should skip the update.
   */
  clipGradNorm(maxNorm: number): number {
    if (!(maxNorm > 0) || !Number.isFinite(maxNorm)) {
      throw new RangeError(`maxNorm must be a finite positive number, got ${maxNorm}`);
    }
    const norm = this.gradNorm();
    const factor = maxNorm / (norm + 1e-6);
    if (Number.isFinite(norm) && factor < 1) scale(this.kernels, this.#target.grads, factor);
    return norm;
  }

  /** One AdamW update with learning rate `lr` from the current gradients. */
  step(lr: number): void {
    if (!(lr >= 0) || !Number.isFinite(lr)) {
      throw new RangeError(`lr must be a finite number >= 0, got ${lr}`);
    }
    const step = this.#step + 1;
    for (const { decay, views } of this.#spans) {
      adamw(this.kernels, views.p, views.m, views.v, views.g, {
        lr,
        beta1: this.beta1,
        beta2: this.beta2,
        eps: this.eps,
        weightDecay: decay ? this.weightDecay : 0,
        step,
      });
    }
    this.#target.markParamsChanged?.();
    this.#step = step;
  }

  /** A copy of the moments and the step count. */
  state(): AdamWState {
    return { step: this.#step, m: this.m.toArray(), v: this.v.toArray() };
  }

  /** Restores a state from {@linkcode AdamW.state} (copied in). */
  loadState(s: AdamWState): void {
    if (!Number.isInteger(s.step) || s.step < 0) {
      throw new RangeError(`The optimizer state's step must be an integer >= 0, got ${s.step}`);
    }
    for (const [name, a] of [["m", s.m], ["v", s.v]] as const) {
      if (!(a instanceof Float32Array) || a.length !== this.m.size) {
        throw new RangeError(
          `The optimizer state's ${name} must be a Float32Array of ${this.m.size} values`,
        );
      }
    }
    this.m.write(s.m);
    this.v.write(s.v);
    this.#step = s.step;
  }

  /**
   * Writes the state into folder `dir` (created if needed): the moments per
   * parameter region as `<name>.exp_avg` / `<name>.exp_avg_sq` (or `exp_avg`
   * / `exp_avg_sq` for a buffer without a layout) in
   * {@linkcode OPTIMIZER_FILES}.tensors, the step and settings as JSON. The
   * alignment padding between regions is not saved: a model keeps its params
   * and grads zero there, so its moments stay zero.
   */
  async save(dir: string): Promise<void> {
    await Deno.mkdir(dir, { recursive: true });
    const m = this.m.read();
    const v = this.v.read();
    const tensors = this.#parts.flatMap((p) => {
      const prefix = p.name === "" ? "" : `${p.name}.`;
      return [
        {
          name: `${prefix}exp_avg`,
          shape: [p.size],
          data: m.subarray(p.offset, p.offset + p.size),
        },
        {
          name: `${prefix}exp_avg_sq`,
          shape: [p.size],
          data: v.subarray(p.offset, p.offset + p.size),
        },
      ];
    });
    await writeSafetensors(join(dir, OPTIMIZER_FILES.tensors), tensors);
    const scalars = {
      step: this.#step,
      beta1: this.beta1,
      beta2: this.beta2,
      eps: this.eps,
      weight_decay: this.weightDecay,
      num_regions: this.#parts.length,
    };
    await Deno.writeTextFile(join(dir, OPTIMIZER_FILES.scalars), JSON.stringify(scalars, null, 2));
  }

  /**
   * Restores the state {@linkcode AdamW.save} wrote into `dir` (moments and
   * step; the settings stay the constructor's). Every region must be there
   * with its size.
   */
  load(dir: string): void {
    const jsonPath = join(dir, OPTIMIZER_FILES.scalars);
    const step = readCheckpointJson(jsonPath).step;
    if (typeof step !== "number" || !Number.isInteger(step) || step < 0) {
      throw new CheckpointError(`${jsonPath}: 'step' must be an integer >= 0, got ${step}`, {
        file: jsonPath,
        key: "step",
      });
    }
    using file = SafetensorsFile.open(join(dir, OPTIMIZER_FILES.tensors));
    const m = new Float32Array(this.m.size);
    const v = new Float32Array(this.v.size);
    for (const p of this.#parts) {
      const prefix = p.name === "" ? "" : `${p.name}.`;
      for (const [suffix, out] of [["exp_avg", m], ["exp_avg_sq", v]] as const) {
        const name = `${prefix}${suffix}`;
        const data = file.readF32(name);
        if (data.length !== p.size) {
          throw new RangeError(
            `${file.path}: '${name}' has ${data.length} values; the parameter has ${p.size}`,
          );
        }
        out.set(data, p.offset);
      }
    }
    this.loadState({ step, m, v });
  }

  /** Frees the moments (the params and grads are the target's). */
  dispose(): void {
    for (const s of this.#spans) for (const t of Object.values(s.views)) t.free();
    this.m.free();
    this.v.free();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
