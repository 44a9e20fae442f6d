/**
 * Trackers (ROLL's `track_with`): where per-step metrics go. Every run writes
 * `<output_dir>/metrics.jsonl`; `track_with` adds one more sink:
 *
 * - `stdout`: a compact line per step with chosen keys
 *   (`tracker_kwargs.keys`, patterns where `*` matches one path segment).
 * - `tensorboard`: event files in `tracker_kwargs.log_dir`, default `<output_dir>/tensorboard`.
 * - `wandb`: W&B's JS SDK has no offline mode and runs here have no network,
 *   so this writes TensorBoard event files (same folder rule) and prints a
 *   notice saying to upload them later with `wandb sync <log_dir>`.
 *
 * @module
 */
import { didYouMean } from "../util/did_you_mean.ts";
import { formatNumber } from "./format_number.ts";
import { JsonlMetricsWriter, METRICS_JSONL, truncateJsonlMetrics } from "./jsonl.ts";
import { TfEventsWriter } from "./tfevents.ts";

/** Metric values of one step, by name (e.g. `actor/pg_loss`). */
export type Metrics = Readonly<Record<string, number>>;

/** A sink for per-step metrics. */
export interface Tracker {
  /** Records the metrics of one step (synchronously written through). */
  log(step: number, metrics: Metrics): void;
  /** Flushes and closes; the tracker takes no more steps. */
  close(): Promise<void>;
}

/** The valid `track_with` values. */
export const TRACK_WITH = ["stdout", "tensorboard", "wandb"] as const;

/** One of {@linkcode TRACK_WITH}. */
export type TrackWith = typeof TRACK_WITH[number];

/** The keys the stdout tracker shows by default (those present, in this order). */
export const DEFAULT_STDOUT_KEYS: readonly string[] = [
  "rollout/score/mean",
  "val/env/*/success",
  "env/*/success",
  "actor/pg_loss",
  "actor/entropy",
  "actor/approxkl",
  "critic/kl",
  "critic/vf_loss",
  "system/tps",
  "time/step_total",
];

/**
 * Prints one line per step: `step N  key=value  key=value ...` with the
 * metrics matching `keys` (see {@linkcode DEFAULT_STDOUT_KEYS}); when none
 * matches, the first eight metrics by name.
 *
 * @example
 * ```ts
 * import { StdoutTracker } from "./tracker.ts";
 * const t = new StdoutTracker(["actor/*"]);
 * t.log(3, { "actor/pg_loss": -0.01234567, "critic/kl": 0.5 }); // step 3  actor/pg_loss=-0.01235
 * await t.close();
 * ```
 */
export class StdoutTracker implements Tracker {
  #patterns: RegExp[];
  #print: (line: string) => void;

  /** `keys`: names or patterns (`*` = one path segment); `print` defaults to console.log. */
  constructor(
    keys: readonly string[] = DEFAULT_STDOUT_KEYS,
    print: (line: string) => void = console.log,
  ) {
    this.#patterns = keys.map(keyPattern);
    this.#print = print;
  }

  /** Prints the step's line. */
  log(step: number, metrics: Metrics): void {
    const names = Object.keys(metrics);
    let shown = this.#patterns.flatMap((p) => names.filter((n) => p.test(n)).sort());
    shown = [...new Set(shown)];
    if (shown.length === 0) shown = names.sort().slice(0, 8);
    const parts = shown.map((n) => `${n}=${formatNumber(metrics[n]!)}`);
    this.#print([`step ${step}`, ...parts].join("  "));
  }

  /** Nothing to release. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** A metric name pattern: `*` matches one path segment, everything else literally. */
function keyPattern(key: string): RegExp {
  const body = key.split("*").map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join("[^/]+");
  return new RegExp(`^${body}$`);
}

/** Forwards every step to several trackers; closing closes all and rethrows the first error. */
export class MultiTracker implements Tracker {
  /** The trackers, in the order they receive each step. */
  readonly trackers: readonly Tracker[];

  /** Wraps `trackers`. */
  constructor(trackers: readonly Tracker[]) {
    this.trackers = trackers;
  }

  /** Logs to each tracker in turn. */
  log(step: number, metrics: Metrics): void {
    for (const t of this.trackers) t.log(step, metrics);
  }

  /** Closes all trackers, even when one fails. */
  async close(): Promise<void> {
    const results = await Promise.allSettled(this.trackers.map((t) => t.close()));
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }
}

/** Options of {@linkcode createTracker}. */
export interface CreateTrackerOptions {
  /**
   * A resumed run's step: metrics.jsonl loses its rows after this step, and
   * the new event file starts with a restart marker at `resumeStep + 1` so
   * TensorBoard hides the interrupted run's later points.
   */
  resumeStep?: number;
  /** Where stdout-tracker lines go (default console.log). */
  print?: (line: string) => void;
  /** Where notices go (default console.warn). */
  warn?: (line: string) => void;
}

/**
 * The tracker for a run: metrics.jsonl in `outputDir` plus the sink named by
 * `trackWith` (see the module doc), configured by `kwargs` (ROLL's
 * `tracker_kwargs`). An unknown name throws an error listing the valid ones.
 *
 * @example
 * ```ts
 * import { createTracker } from "./tracker.ts";
 * const dir = await Deno.makeTempDir();
 * const tracker = await createTracker("tensorboard", {}, dir);
 * tracker.log(1, { "actor/pg_loss": 0.1 });
 * await tracker.close();
 * console.log([...Deno.readDirSync(dir)].map((e) => e.name).sort()); // [ "metrics.jsonl", "tensorboard" ]
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function createTracker(
  trackWith: string,
  kwargs: Readonly<Record<string, unknown>>,
  outputDir: string,
  options: CreateTrackerOptions = {},
): Promise<Tracker> {
  if (!(TRACK_WITH as readonly string[]).includes(trackWith)) {
    const hint = didYouMean(trackWith, TRACK_WITH);
    throw new Error(
      `Unknown track_with '${trackWith}': expected one of ${TRACK_WITH.join(", ")}` +
        (hint ? ` (${hint})` : ""),
    );
  }
  const dir = outputDir.replace(/\/+$/, "") || "/";
  const resumeStep = options.resumeStep;
  if (resumeStep !== undefined) {
    // the rows a resumed run writes again go, and saying so (a validation among them too)
    await truncateJsonlMetrics(`${dir}/${METRICS_JSONL}`, resumeStep, (dropped) => {
      const validated = dropped.filter((r) => Object.keys(r).some((k) => k.startsWith("val/")));
      (options.warn ?? console.warn)(
        `${METRICS_JSONL}: ${dropped.length} row(s) after step ${resumeStep} dropped ` +
          `(steps ${dropped.map((r) => r.step).join(", ")}), which the resumed run writes again` +
          (validated.length > 0
            ? `; the validation at step ${
              validated.map((r) => r.step).join(", ")
            } goes with them (this run validates every eval_steps and at its last step)`
            : ""),
      );
    });
  }
  const sink = await openSink(trackWith as TrackWith, kwargs, dir, options);
  let jsonl: JsonlMetricsWriter;
  try {
    jsonl = await JsonlMetricsWriter.open(dir);
  } catch (e) {
    await sink.close();
    throw e;
  }
  return new MultiTracker([jsonlTracker(jsonl), sink]);
}

async function openSink(
  trackWith: TrackWith,
  kwargs: Readonly<Record<string, unknown>>,
  dir: string,
  options: CreateTrackerOptions,
): Promise<Tracker> {
  if (trackWith === "stdout") return new StdoutTracker(stringList(kwargs, "keys"), options.print);
  const logDir = stringKwarg(kwargs, "log_dir") ?? `${dir}/tensorboard`;
  if (trackWith === "wandb") {
    const project = stringKwarg(kwargs, "project");
    (options.warn ?? console.warn)(
      `track_with=wandb: Weights & Biases needs network access, which agentrl does not use; ` +
        `writing TensorBoard event files to ${logDir} instead. Upload them later with ` +
        `\`wandb sync${project ? ` --project ${project}` : ""} ${logDir}\`.`,
    );
  }
  const writer = await TfEventsWriter.create(
    logDir,
    options.resumeStep === undefined ? {} : { restartStep: options.resumeStep + 1 },
  );
  return {
    log: (step, metrics) => writer.scalars(step, metrics),
    close: () => writer.close(),
  };
}

function jsonlTracker(w: JsonlMetricsWriter): Tracker {
  return { log: (step, metrics) => w.log(step, metrics), close: () => w.close() };
}

function stringKwarg(kwargs: Readonly<Record<string, unknown>>, key: string): string | undefined {
  const v = kwargs[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string" || v === "") {
    throw new TypeError(
      `tracker_kwargs.${key} must be a non-empty string: got ${JSON.stringify(v)}`,
    );
  }
  return v;
}

function stringList(
  kwargs: Readonly<Record<string, unknown>>,
  key: string,
): readonly string[] | undefined {
  const v = kwargs[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((s) => typeof s === "string")) {
    throw new TypeError(
      `tracker_kwargs.${key} must be a list of strings: got ${JSON.stringify(v)}`,
    );
  }
  return v;
}
