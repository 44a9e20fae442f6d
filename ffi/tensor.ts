/**
 * Tensor handles: native memory with a shape and a dtype, checked in TS before
 * any native call, viewable from TS without copying (CPU), freed by `free()`,
 * `using`, or (as a backstop) when garbage-collected.
 *
 * @module
 */
import type { Kernels } from "./kernels.ts";

/** Element types the kernels use. */
export type DType = "f32" | "i32" | "bf16";

const BYTES: Record<DType, number> = { f32: 4, i32: 4, bf16: 2 };

type View<D extends DType> = D extends "f32" ? Float32Array
  : D extends "i32" ? Int32Array
  : Uint16Array;

interface Held {
  free: Kernels["sym"]["arl_free"];
  ptr: Deno.PointerObject;
}

// The backstop for tensors that were never freed: release them when collected.
const registry = new FinalizationRegistry<Held>((held) => {
  held.free(null, held.ptr);
});

/**
 * A native buffer with a shape.
 *
 * @example
 * ```ts ignore
 * import { Kernels } from "./kernels.ts";
 * import { Tensor } from "./tensor.ts";
 * using k = Kernels.open();
 * using x = Tensor.from(k, new Float32Array([1, 2, 3, 4]), [2, 2]);
 * console.log(x.view()[3]); // 4
 * ```
 */
export class Tensor<D extends DType = DType> implements Disposable {
  readonly kernels: Kernels;
  readonly shape: readonly number[];
  readonly dtype: D;
  readonly size: number;
  readonly byteSize: number;
  readonly device: "cpu" | "cuda";
  #ptr: Deno.PointerObject | null;

  /** Allocates a zero-filled tensor. */
  constructor(kernels: Kernels, shape: readonly number[], dtype: D) {
    if (!(dtype in BYTES)) {
      throw new TypeError(`Unknown dtype '${dtype}': expected f32, i32 or bf16`);
    }
    for (const d of shape) {
      if (!Number.isInteger(d) || d <= 0) {
        throw new RangeError(
          `Tensor dimensions must be positive integers, got [${shape.join(", ")}]`,
        );
      }
    }
    const size = shape.reduce((a, b) => a * b, 1);
    if (!Number.isSafeInteger(size * BYTES[dtype])) {
      throw new RangeError(`Tensor of shape [${shape.join(", ")}] is too large`);
    }
    this.kernels = kernels;
    this.shape = [...shape];
    this.dtype = dtype;
    this.size = size;
    this.byteSize = size * BYTES[dtype];
    this.device = kernels.device;
    const ptr = kernels.sym.arl_alloc(kernels.ctx, BigInt(this.byteSize));
    if (ptr === null) kernels.check("arl_alloc", 4);
    this.#ptr = ptr;
    registry.register(this, { free: kernels.sym.arl_free, ptr: ptr! }, this);
  }

  /** A tensor holding a copy of `data` (shape defaults to [data.length]). */
  static from(kernels: Kernels, data: Float32Array, shape?: readonly number[]): Tensor<"f32">;
  static from(kernels: Kernels, data: Int32Array, shape?: readonly number[]): Tensor<"i32">;
  static from(
    kernels: Kernels,
    data: Float32Array | Int32Array,
    shape: readonly number[] = [data.length],
  ): Tensor<"f32"> | Tensor<"i32"> {
    const t = new Tensor(kernels, shape, data instanceof Float32Array ? "f32" : "i32");
    if (t.size !== data.length) {
      t.free();
      throw new RangeError(`${data.length} values do not fill shape [${shape.join(", ")}]`);
    }
    (t.view() as Float32Array | Int32Array).set(data);
    return t as Tensor<"f32"> | Tensor<"i32">;
  }

  /** The native pointer; throws if the tensor was freed. */
  get ptr(): Deno.PointerObject {
    if (this.#ptr === null) {
      throw new Error(`This ${this.dtype} tensor [${this.shape.join(", ")}] was freed`);
    }
    return this.#ptr;
  }

  /** Whether the memory is still held. */
  get alive(): boolean {
    return this.#ptr !== null;
  }

  /** A typed-array view of the native memory (no copy; invalid after free). */
  view(): View<D> {
    if (this.device !== "cpu") throw new Error("Only CPU tensors can be viewed from TS");
    const buf = Deno.UnsafePointerView.getArrayBuffer(this.ptr, this.byteSize);
    const ctor = this.dtype === "f32"
      ? Float32Array
      : this.dtype === "i32"
      ? Int32Array
      : Uint16Array;
    return new ctor(buf) as View<D>;
  }

  /** A copy of the data as a plain typed array. */
  toArray(): View<D> {
    return this.view().slice() as View<D>;
  }

  /** Frees the memory now (idempotent). */
  free(): void {
    if (this.#ptr === null) return;
    registry.unregister(this);
    this.kernels.sym.arl_free(null, this.#ptr);
    this.#ptr = null;
  }

  [Symbol.dispose](): void {
    this.free();
  }
}

/** Throws unless `t` has the dtype and shape (a -1 entry matches any size). */
export function expectTensor(
  t: Tensor,
  name: string,
  dtype: DType,
  shape: readonly number[],
): void {
  if (!(t instanceof Tensor)) throw new TypeError(`${name} must be a Tensor`);
  if (!t.alive) throw new Error(`${name} was freed`);
  if (t.dtype !== dtype) throw new TypeError(`${name} must be ${dtype}, got ${t.dtype}`);
  const ok = t.shape.length === shape.length && shape.every((d, i) => d === -1 || d === t.shape[i]);
  if (!ok) {
    throw new RangeError(
      `${name} must have shape [${shape.map((d) => (d === -1 ? "*" : d)).join(", ")}], got [${
        t.shape.join(", ")
      }]`,
    );
  }
}
