/**
 * Tensor handles: native memory with a shape and a dtype, checked in TS before
 * any native call, viewable from TS without copying (CPU), freed by `free()`,
 * `using`, or (as a backstop) when garbage-collected. {@linkcode Tensor.viewOf}
 * makes a tensor that shares part of another's memory (a named parameter inside
 * one flat buffer, a reshape) and never frees it.
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

// Set by Tensor.viewOf around its constructor call: the memory the new tensor
// shares instead of allocating its own.
let sharing: { ptr: Deno.PointerObject; parent: Tensor } | null = null;

// A typed array from view() keeps the tensor that owns its memory alive (so the finalizer
// cannot free memory still in use), and freeing that tensor detaches every such array (so a
// later access reads undefined and writes nothing, instead of touching freed memory).
const owners = new WeakMap<ArrayBuffer, Tensor>();

/** The most bytes the kernel libraries allocate at once (arl_alloc's limit). */
const MAX_TENSOR_BYTES = 2 ** 42;

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
  #address = -1;
  // A view's parent (kept alive by this reference); null for an owning tensor.
  #parent: Tensor | null = null;
  // the array buffers view() handed out over this (owning) tensor's memory
  #buffers: WeakRef<ArrayBuffer>[] = [];
  #pruneAt = 64;

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
    if (size * BYTES[dtype] > MAX_TENSOR_BYTES) {
      throw new RangeError(
        `Tensor of shape [${shape.join(", ")}] (${dtype}) needs ${size * BYTES[dtype]} bytes, ` +
          "more than the 2^42 (4 TiB) a tensor may hold",
      );
    }
    this.kernels = kernels;
    this.shape = [...shape];
    this.dtype = dtype;
    this.size = size;
    this.byteSize = size * BYTES[dtype];
    this.device = kernels.device;
    if (sharing !== null) {
      this.#ptr = sharing.ptr;
      this.#parent = sharing.parent;
      return;
    }
    const ptr = kernels.sym.arl_alloc(kernels.ctx, BigInt(this.byteSize));
    if (ptr === null) {
      try {
        kernels.check("arl_alloc", 4); // (sizes were checked above: the memory ran out)
      } catch (e) {
        if (e instanceof Error) e.message += ` (a ${dtype} tensor of shape [${shape.join(", ")}])`;
        throw e;
      }
    }
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
    (t as Tensor<"f32" | "i32">).write(data);
    return t as Tensor<"f32"> | Tensor<"i32">;
  }

  /**
   * A tensor of `shape` and `dtype` (default: the parent's) over the parent's
   * memory from `byteOffset` on, without copying: a named slice of a flat
   * buffer, or a reshape (offset 0). The view keeps its parent alive, never
   * frees the memory (its `free()` only drops the view), and stops working
   * (`alive` false, `ptr` throws) once the parent is freed. Views of views are
   * allowed.
   *
   * @example
   * ```ts ignore
   * import { Kernels } from "./kernels.ts";
   * import { Tensor } from "./tensor.ts";
   * using k = Kernels.open();
   * using flat = Tensor.from(k, new Float32Array([1, 2, 3, 4, 5, 6]));
   * const w = Tensor.viewOf(flat, 8, [2, 2]); // elements 2..5 as a 2 x 2 matrix
   * console.log(w.view()[0]); // 3
   * ```
   */
  static viewOf<D extends DType>(
    parent: Tensor<D>,
    byteOffset: number,
    shape: readonly number[],
  ): Tensor<D>;
  static viewOf<D extends DType>(
    parent: Tensor,
    byteOffset: number,
    shape: readonly number[],
    dtype: D,
  ): Tensor<D>;
  static viewOf(
    parent: Tensor,
    byteOffset: number,
    shape: readonly number[],
    dtype: DType = parent.dtype,
  ): Tensor {
    if (!(parent instanceof Tensor)) throw new TypeError("The parent of a view must be a Tensor");
    const base = parent.ptr; // throws if the parent was freed
    const bytes = BYTES[dtype];
    if (bytes === undefined) {
      throw new TypeError(`Unknown dtype '${dtype}': expected f32, i32 or bf16`);
    }
    if (!Number.isSafeInteger(byteOffset) || byteOffset < 0 || byteOffset % bytes !== 0) {
      throw new RangeError(
        `A view's byteOffset must be a non-negative multiple of ${bytes}, got ${byteOffset}`,
      );
    }
    const size = shape.reduce((a, b) => a * b, 1);
    if (!(byteOffset + size * bytes <= parent.byteSize)) {
      throw new RangeError(
        `A ${dtype} view of shape [${shape.join(", ")}] at byte ${byteOffset} does not fit ` +
          `in its parent of ${parent.byteSize} bytes`,
      );
    }
    const ptr = Deno.UnsafePointer.offset(base, byteOffset);
    if (ptr === null) throw new RangeError("A view's pointer cannot be null");
    if (Deno.UnsafePointer.value(ptr) % BigInt(bytes) !== 0n) { // (a parent of a smaller dtype)
      throw new RangeError(
        `A ${dtype} view at byte ${byteOffset} of its parent is not ${bytes}-byte aligned`,
      );
    }
    sharing = { ptr, parent };
    try {
      return new Tensor(parent.kernels, shape, dtype);
    } finally {
      sharing = null;
    }
  }

  /** The native pointer; throws if the tensor (or, for a view, its parent) was freed. */
  get ptr(): Deno.PointerObject {
    if (this.#ptr === null) {
      throw new Error(`This ${this.dtype} tensor [${this.shape.join(", ")}] was freed`);
    }
    if (this.#parent !== null && !this.#parent.alive) {
      throw new Error(
        `The parent of this ${this.dtype} view [${this.shape.join(", ")}] was freed`,
      );
    }
    return this.#ptr;
  }

  /**
   * The memory's start as a number (an address fits in 2^53), for overlap checks: cheaper to
   * compare than pointer objects. Throws as `ptr` does once the memory is gone.
   */
  get address(): number {
    const ptr = this.ptr;
    if (this.#address < 0) this.#address = Number(Deno.UnsafePointer.value(ptr));
    return this.#address;
  }

  /**
   * The native pointer for an op on context `k`: throws if the tensor was freed or belongs
   * to another context (another device's memory, which the op's kernels cannot read).
   */
  ptrIn(k: Kernels): Deno.PointerObject {
    if (this.kernels !== k) {
      throw new Error(
        `This ${this.dtype} tensor [${this.shape.join(", ")}] belongs to another Kernels ` +
          `context (${this.kernels.backend}) than the op's (${k.backend}): copy it there first`,
      );
    }
    return this.ptr;
  }

  /** The tensor that allocated this one's memory (itself unless a view). */
  #owner(): Tensor {
    return this.#parent === null ? this : this.#parent.#owner();
  }

  /** Whether the memory is still held (for a view: by its parent). */
  get alive(): boolean {
    return this.#ptr !== null && (this.#parent === null || this.#parent.alive);
  }

  /** Whether this tensor is a view of another's memory (see {@linkcode Tensor.viewOf}). */
  get isView(): boolean {
    return this.#parent !== null;
  }

  /**
   * A typed-array view of the native memory (no copy). The array keeps the memory alive;
   * once the tensor is freed it is detached (length 0: reads give undefined, writes are
   * dropped).
   * CPU tensors only: use {@linkcode Tensor.read} and {@linkcode Tensor.write}
   * for code that runs on any device.
   */
  view(): View<D> {
    if (this.device !== "cpu") {
      throw new Error(
        `A ${this.device} tensor cannot be viewed from TS: copy it with read() / write()`,
      );
    }
    const buf = Deno.UnsafePointerView.getArrayBuffer(this.ptr, this.byteSize);
    const owner = this.#owner();
    owners.set(buf, owner);
    // Pruned when the list has doubled since the last pruning (amortized O(1) a call: arrays
    // made within one synchronous run of code stay alive until it ends, so pruning at a fixed
    // length would scan them all on every call).
    if (owner.#buffers.length >= owner.#pruneAt) {
      owner.#buffers = owner.#buffers.filter((r) => r.deref());
      owner.#pruneAt = Math.max(64, 2 * owner.#buffers.length);
    }
    owner.#buffers.push(new WeakRef(buf));
    const ctor = this.dtype === "f32"
      ? Float32Array
      : this.dtype === "i32"
      ? Int32Array
      : Uint16Array;
    return new ctor(buf) as View<D>;
  }

  /** A copy of the data as a plain typed array (any device). */
  toArray(): View<D> {
    return this.read();
  }

  /** A copy of the data (any device): a new typed array, or `out` filled. */
  read(out?: View<D>): View<D> {
    const ctor = this.dtype === "f32"
      ? Float32Array
      : this.dtype === "i32"
      ? Int32Array
      : Uint16Array;
    const dst = out ?? (new ctor(this.size) as View<D>);
    if (!(dst instanceof ctor) || dst.length !== this.size) {
      throw new RangeError(
        `read() needs a ${ctor.name} of ${this.size} elements for this ${this.dtype} tensor`,
      );
    }
    if (this.device === "cpu") {
      if (this.byteSize > 0) new Deno.UnsafePointerView(this.ptr).copyInto(dst as BufferSource);
    } else {
      this.#copy(Deno.UnsafePointer.of(dst as BufferSource)!, this.ptr);
    }
    return dst;
  }

  /** Copies `data` (exactly `size` elements of this dtype) into the tensor (any device). */
  write(data: View<D>): void {
    this.#expectData(data, "write");
    if (this.device === "cpu") {
      if (this.byteSize === 0) return;
      // an untracked array over the memory, used here only (view() tracks what it hands out)
      const mem = Deno.UnsafePointerView.getArrayBuffer(this.ptr, this.byteSize);
      new Uint8Array(mem).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    } else {
      this.#copy(this.ptr, Deno.UnsafePointer.of(data as BufferSource)!);
    }
  }

  /**
   * {@linkcode write} without waiting for the copy: on CUDA up to 64 KiB go through pinned
   * memory and are copied in stream order (a larger copy waits, as write does). `data` may change
   * once it returns. Not inside a graph recording.
   */
  writeAsync(data: View<D>): void {
    this.#expectData(data, "writeAsync");
    if (this.device === "cpu") return this.write(data);
    if (this.byteSize === 0) return;
    const k = this.kernels;
    k.check(
      "arl_upload_async",
      k.sym.arl_upload_async(
        k.ctx,
        this.ptr,
        Deno.UnsafePointer.of(data as BufferSource)!,
        BigInt(this.byteSize),
      ),
    );
  }

  /**
   * {@linkcode writeAsync} into one of two buffers that the work queued on the device reads in
   * turn (`parity` 0 or 1 names this one): on CUDA the copy runs beside that work, once the last
   * work that read this buffer has run, and the work queued after it waits for the copy. `fresh`:
   * the buffers are new (the copy waits for all the work queued so far). Without the library's
   * `arl_upload_alternating`, a `writeAsync`.
   */
  writeAlternating(data: View<D>, parity: 0 | 1, fresh: boolean): void {
    this.#expectData(data, "writeAlternating");
    if (this.device === "cpu") return this.write(data);
    const k = this.kernels;
    const alternating = k.sym.arl_upload_alternating;
    if (alternating === null) return this.writeAsync(data);
    if (this.byteSize === 0) return;
    k.check(
      "arl_upload_alternating",
      alternating(
        k.ctx,
        this.ptr,
        Deno.UnsafePointer.of(data as BufferSource)!,
        BigInt(this.byteSize),
        parity,
        fresh ? 1 : 0,
      ),
    );
  }

  /** Copies from another tensor of the same dtype and size (any devices). */
  copyFrom(src: Tensor<D>): void {
    if (src.dtype !== this.dtype || src.size !== this.size) {
      throw new RangeError(
        `copyFrom: a ${src.dtype} [${src.shape.join(", ")}] tensor cannot fill a ${this.dtype} ` +
          `[${this.shape.join(", ")}] one`,
      );
    }
    // The CUDA library's copy handles host and device memory on either side.
    const k = this.device === "cuda" ? this.kernels : src.kernels;
    k.check("arl_copy", k.sym.arl_copy(k.ctx, this.ptr, src.ptr, BigInt(this.byteSize)));
  }

  #expectData(data: View<D>, method: string): void {
    const ctor = this.dtype === "f32"
      ? Float32Array
      : this.dtype === "i32"
      ? Int32Array
      : Uint16Array;
    if (!(data instanceof ctor) || data.length !== this.size) {
      throw new RangeError(
        `${method}() needs a ${ctor.name} of ${this.size} elements for this ${this.dtype} tensor, got ${
          (data as ArrayLike<number>)?.length
        } ${(data as object)?.constructor?.name ?? typeof data}`,
      );
    }
  }

  #copy(dst: Deno.PointerValue, src: Deno.PointerValue): void {
    if (this.byteSize === 0) return;
    const k = this.kernels;
    k.check("arl_copy", k.sym.arl_copy(k.ctx, dst, src, BigInt(this.byteSize)));
  }

  /** Frees the memory now (idempotent); a view only lets go of its parent. */
  free(): void {
    if (this.#ptr === null) return;
    if (this.#parent !== null) {
      this.#ptr = null;
      this.#parent = null;
      return;
    }
    registry.unregister(this);
    for (const ref of this.#buffers) {
      const buf = ref.deref();
      if (buf && !buf.detached) buf.transfer(0); // detaches it (copies nothing)
    }
    this.#buffers = [];
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
