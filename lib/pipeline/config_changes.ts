/**
 * What changed in the config between the run that saved a checkpoint and the run resuming
 * from it. Resuming is exact only with the same settings, so the pipeline names each change.
 *
 * @module
 */

/** Keys whose change does not alter training (where output goes, how often to log or save). */
const HARMLESS = [
  "resume_from_checkpoint",
  "output_dir",
  "logging_dir",
  "render_save_dir",
  "tracker_kwargs",
  "track_with",
  "logging_steps",
  "save_steps",
  "eval_steps",
  "max_ckpt_to_keep",
  "checkpoint_config",
];

/**
 * The leaves that differ between `saved` and `current` (a config as JSON), as
 * `key: saved -> current` lines, sorted by key; keys under {@linkcode HARMLESS} are left out.
 *
 * @example
 * ```ts
 * import { configChanges } from "./config_changes.ts";
 * console.log(configChanges({ seed: 1, output_dir: "a" }, { seed: 2, output_dir: "b" }));
 * // [ "seed: 1 -> 2" ]
 * ```
 */
export function configChanges(saved: unknown, current: unknown): string[] {
  const a = flatten(saved), b = flatten(current);
  const out: string[] = [];
  for (const key of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    if (HARMLESS.some((h) => key === h || key.startsWith(`${h}.`))) continue;
    const before = a.get(key), after = b.get(key);
    if (before !== after) out.push(`${key}: ${before ?? "(absent)"} -> ${after ?? "(absent)"}`);
  }
  return out;
}

function flatten(
  value: unknown,
  prefix = "",
  out = new Map<string, string>(),
): Map<string, string> {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix) {
    out.set(prefix, JSON.stringify(value ?? null));
  }
  return out;
}
