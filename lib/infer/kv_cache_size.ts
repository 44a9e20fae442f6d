/**
 * The KV cache a generation engine allocates up front, and the error when it does not fit:
 * its size in bytes from the model's shape, so that the message says what it asked for.
 *
 * @module
 */
import type { Qwen2Config } from "../model/config.ts";

/**
 * Bytes of a KV cache of `slots` sequences of up to `maxLen` positions: a key and a value of
 * every layer's KV heads, f32 (4 bytes each).
 *
 * @example
 * ```ts
 * import { kvCacheBytes } from "./kv_cache_size.ts";
 * const qwen = { num_hidden_layers: 24, num_key_value_heads: 2, head_dim: 64 };
 * console.log(kvCacheBytes(qwen, 1, 1024)); // 25165824
 * ```
 */
export function kvCacheBytes(
  config: Pick<Qwen2Config, "num_hidden_layers" | "num_key_value_heads" | "head_dim">,
  slots: number,
  maxLen: number,
): number {
  return 2 * config.num_hidden_layers * slots * config.num_key_value_heads * maxLen *
    config.head_dim * 4;
}

/**
 * `bytes` with one decimal in the largest of GiB, MiB and KiB that it reaches once rounded (so
 * that just under 1 GiB reads "1.0 GiB", not "1024.0 MiB"), or in bytes under 1 KiB.
 *
 * @example
 * ```ts
 * import { formatBytes } from "./kv_cache_size.ts";
 * console.log(formatBytes(25165824), formatBytes(2 ** 30 - 1), formatBytes(3000)); // 24.0 MiB 1.0 GiB 2.9 KiB
 * ```
 */
export function formatBytes(bytes: number): string {
  for (const [unit, size] of [["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]] as const) {
    const shown = (bytes / size).toFixed(1);
    if (Number(shown) >= 1) return `${shown} ${unit}`;
  }
  return `${bytes} bytes`;
}

/**
 * The KV cache of `maxRunningRequests` x `maxModelLen` does not fit: more than a tensor may
 * hold, or more than the device's free memory. A RangeError (the two numbers are too large).
 */
export class KvCacheSizeError extends RangeError {
  constructor(
    readonly maxRunningRequests: number,
    readonly maxModelLen: number,
    readonly bytes: number,
    readonly device: string,
    cause: unknown,
  ) {
    super(
      `The KV cache of maxRunningRequests ${maxRunningRequests} x maxModelLen ${maxModelLen} ` +
        `(${formatBytes(bytes)} of f32 keys and values) cannot be allocated on the ${device}: ` +
        `${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
    this.name = "KvCacheSizeError";
  }
}
