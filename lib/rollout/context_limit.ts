/**
 * A rollout's token budgets cut to the model's context: past it (`max_position_embeddings`, or
 * YaRN's longer one) the engine refuses the request, and the episode would be lost instead of
 * ending.
 *
 * @module
 */
import type { AgenticConfig } from "../config/agentic_config.ts";

/**
 * `config` with `sequence_length` and `val_sequence_length` at most `maxPositions`, and a
 * notice for each of `governing` (the budgets the caller's rollouts use) that was cut, naming
 * the limit `limitName` (what sets the model's context).
 *
 * @example
 * ```ts
 * import { loadConfig } from "../config/load_config.ts";
 * import { capSequenceLengths } from "./context_limit.ts";
 * const { config } = await loadConfig({ overrides: ["sequence_length=8192"] });
 * const capped = capSequenceLengths(config, 4096, ["sequence_length"]);
 * console.log(capped.config.sequence_length, capped.notices.length); // 4096 1
 * ```
 */
export function capSequenceLengths(
  config: AgenticConfig,
  maxPositions: number,
  governing: readonly SequenceLengthKey[] = ["sequence_length", "val_sequence_length"],
  limitName = "max_position_embeddings",
): { config: AgenticConfig; notices: string[] } {
  const notices: string[] = [];
  const cap = (key: SequenceLengthKey) => {
    const v = config[key];
    if (v === null || v <= maxPositions) return v;
    if (governing.includes(key)) {
      notices.push(
        `${key} ${v} is above the model's ${limitName} (${maxPositions}): ` +
          `episodes end at ${maxPositions} tokens`,
      );
    }
    return maxPositions;
  };
  const sequence_length = cap("sequence_length");
  const val_sequence_length = cap("val_sequence_length");
  if (
    sequence_length === config.sequence_length && val_sequence_length === config.val_sequence_length
  ) {
    return { config, notices };
  }
  return { config: { ...config, sequence_length, val_sequence_length }, notices };
}

/** The token budgets of a rollout: training's and validation's. */
export type SequenceLengthKey = "sequence_length" | "val_sequence_length";
