/**
 * A rollout's token budgets cut to the model's context: past `max_position_embeddings` the
 * engine refuses the request, and the episode would be lost instead of ending.
 *
 * @module
 */
import type { AgenticConfig } from "../config/agentic_config.ts";

/**
 * `config` with `sequence_length` and `val_sequence_length` at most `maxPositions`, and a
 * notice for each that was cut.
 *
 * @example
 * ```ts
 * import { loadConfig } from "../config/load_config.ts";
 * import { capSequenceLengths } from "./context_limit.ts";
 * const { config } = await loadConfig({ overrides: ["sequence_length=8192"] });
 * const capped = capSequenceLengths(config, 4096);
 * console.log(capped.config.sequence_length, capped.notices.length); // 4096 1
 * ```
 */
export function capSequenceLengths(
  config: AgenticConfig,
  maxPositions: number,
): { config: AgenticConfig; notices: string[] } {
  const notices: string[] = [];
  const cap = (key: "sequence_length" | "val_sequence_length") => {
    const v = config[key];
    if (v === null || v <= maxPositions) return v;
    notices.push(
      `${key} ${v} is above the model's max_position_embeddings (${maxPositions}): ` +
        `episodes end at ${maxPositions} tokens`,
    );
    return maxPositions;
  };
  const sequence_length = cap("sequence_length");
  const val_sequence_length = cap("val_sequence_length");
  if (notices.length === 0) return { config, notices };
  return { config: { ...config, sequence_length, val_sequence_length }, notices };
}
