/**
 * A kernel context on a device: the handle every native call goes through.
 *
 * @module
 */
import { type DeviceKind, openLibrary } from "./library.ts";
import type { KernelSymbols } from "./symbols.ts";

/** A native call failed; the message is the library's own explanation. */
export class KernelError extends Error {
  /** The `arl_status` code (see kernels/include/agentrl.h). */
  readonly status: number;
  constructor(op: string, status: number, detail: string) {
    super(`${op} failed (status ${status}): ${detail || "no detail"}`);
    this.name = "KernelError";
    this.status = status;
  }
}

/** Options for {@linkcode Kernels.open}. */
export interface KernelOptions {
  /** Worker threads; default all cores. */
  threads?: number;
  device?: DeviceKind;
}

/**
 * An open context of the native library (`arl_ctx`). Free it with `close()` or
 * `using`.
 *
 * @example
 * ```ts ignore
 * import { Kernels } from "./kernels.ts";
 * using k = Kernels.open({ threads: 2 });
 * console.log(k.backend); // "cpu-avx2" or "cpu-portable"
 * ```
 */
export class Kernels implements Disposable {
  /** The library's functions, for the op wrappers. */
  readonly sym: KernelSymbols;
  readonly device: DeviceKind;
  #ctx: Deno.PointerObject | null;

  private constructor(sym: KernelSymbols, device: DeviceKind, ctx: Deno.PointerObject) {
    this.sym = sym;
    this.device = device;
    this.#ctx = ctx;
  }

  /** Opens a context; loads the library on first use. */
  static open(options: KernelOptions = {}): Kernels {
    const device = options.device ?? "cpu";
    const threads = options.threads ?? 0;
    if (!Number.isInteger(threads) || threads < 0 || threads > 1024) {
      throw new RangeError(`threads must be an integer in 0..1024 (0 = all cores), got ${threads}`);
    }
    const lib = openLibrary(device);
    const ctx = lib.symbols.arl_ctx_create(threads);
    if (ctx === null) {
      // With a null context, arl_last_error reports why the creation failed.
      const why = lib.symbols.arl_last_error(null);
      const detail = why === null ? "" : Deno.UnsafePointerView.getCString(why);
      const noDevice = detail.startsWith("no CUDA device") || detail.includes("CUDA device");
      throw new KernelError(
        "arl_ctx_create",
        noDevice ? 5 : 4,
        detail || "could not create a context",
      );
    }
    return new Kernels(lib.symbols, device, ctx);
  }

  /**
   * Whether a context can be opened on `device` here (for CUDA: the library
   * is built and a driver and GPU answer). Never throws.
   */
  static available(device: DeviceKind): boolean {
    try {
      Kernels.open({ device }).close();
      return true;
    } catch {
      return false;
    }
  }

  /** The native context pointer; throws once closed. */
  get ctx(): Deno.PointerObject {
    if (this.#ctx === null) throw new Error("This kernel context is closed");
    return this.#ctx;
  }

  /** Whether {@linkcode Kernels.close} was called. */
  get closed(): boolean {
    return this.#ctx === null;
  }

  /** The code path the library chose: `cpu-avx2`, `cpu-portable` or `cuda`. */
  get backend(): string {
    return Deno.UnsafePointerView.getCString(this.sym.arl_backend_name()!);
  }

  /** Worker threads of this context. */
  get threads(): number {
    return this.sym.arl_num_threads(this.ctx);
  }
  set threads(n: number) {
    if (!Number.isInteger(n) || n < 0) { // (the library names its own upper limit)
      throw new RangeError(`threads must be an integer >= 0 (0 = all cores), got ${n}`);
    }
    this.check("arl_set_num_threads", this.sym.arl_set_num_threads(this.ctx, n));
  }

  /** Throws a KernelError for a non-zero status, with the context's message. */
  check(op: string, status: number): void {
    if (status === 0) return;
    const msg = this.sym.arl_last_error(this.ctx);
    throw new KernelError(op, status, msg === null ? "" : Deno.UnsafePointerView.getCString(msg));
  }

  /** Frees the context (tensors stay valid: they own their memory). */
  close(): void {
    if (this.#ctx !== null) this.sym.arl_ctx_destroy(this.#ctx);
    this.#ctx = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
