/**
 * What an output folder already holds of a training run: a fresh start there would mix
 * its metrics and checkpoints with the new run's.
 *
 * @module
 */
import { listCheckpoints } from "../train/checkpoint_dir.ts";
import { METRICS_JSONL } from "../track/jsonl.ts";

/**
 * A description of the run in `outputDir` (its checkpoints, its metrics file), or null when
 * there is none.
 *
 * @example
 * ```ts
 * import { describePreviousRun } from "./previous_run.ts";
 * console.log(describePreviousRun(await Deno.makeTempDir())); // null
 * ```
 */
export function describePreviousRun(outputDir: string): string | null {
  const parts: string[] = [];
  const checkpoints = listCheckpoints(outputDir);
  if (checkpoints.length > 0) {
    parts.push(`checkpoints up to ${checkpoints.at(-1)!.dir}`);
  }
  try {
    if (Deno.statSync(`${outputDir}/${METRICS_JSONL}`).size > 0) parts.push(METRICS_JSONL);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return parts.length > 0 ? parts.join(" and ") : null;
}
