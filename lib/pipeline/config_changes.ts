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

/**
 * What some of {@linkcode configChanges}' lines mean for a resumed run: a changed model path is
 * not where the actor and critic come from (the checkpoint's weights are; `withReference`: the
 * reference model loads `pretrain` as set now), and a changed `max_steps` reshapes a decaying
 * learning-rate schedule from the step resumed on.
 *
 * @example
 * ```ts
 * import { resumeChangeNotes } from "./config_changes.ts";
 * console.log(resumeChangeNotes(["pretrain: \"a\" -> \"b\""], "out/checkpoints/checkpoint-4").length); // 1
 * ```
 */
export function resumeChangeNotes(
  changes: readonly string[],
  checkpoint: string,
  withReference = false,
): string[] {
  const keyOf = (line: string) => line.slice(0, line.indexOf(":"));
  const notes: string[] = [];
  const paths = changes.map(keyOf).filter((k) =>
    k === "pretrain" || k === "reward_pretrain" || k.endsWith("model_name_or_path")
  );
  if (paths.length > 0) {
    notes.push(
      `${paths.join(", ")} changed, but a resumed run's actor (and critic) load the weights ` +
        `saved in ${checkpoint}` +
        (withReference ? "; the reference (the KL term's) loads pretrain as set now" : ""),
    );
  }
  if (changes.some((line) => keyOf(line) === "max_steps")) {
    notes.push("max_steps changed: a decaying learning-rate schedule takes the new length");
  }
  return notes;
}
