/**
 * Experiment tracking and run outputs: metrics.jsonl (always), the
 * `track_with` sink (stdout lines, TensorBoard event files; wandb falls back
 * to event files for a later `wandb sync`), a self-contained HTML report of
 * the curves, and a terminal progress line.
 *
 * @example
 * ```ts
 * import { createTracker, readJsonlMetrics, writeHtmlReport } from "./mod.ts";
 * const dir = await Deno.makeTempDir();
 * const tracker = await createTracker("tensorboard", {}, dir);
 * for (let step = 1; step <= 3; step++) tracker.log(step, { "actor/pg_loss": 1 / step });
 * await tracker.close();
 * await writeHtmlReport(`${dir}/report.html`, await readJsonlMetrics(`${dir}/metrics.jsonl`));
 * console.log((await Deno.stat(`${dir}/report.html`)).isFile); // true
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @module
 */
export { crc32c, maskCrc, maskedCrc32c, unmaskCrc } from "./crc32c.ts";
export { formatNumber } from "./format_number.ts";
export {
  type ChartGroup,
  groupSeries,
  type HistoryRow,
  type HtmlReportOptions,
  renderHtmlReport,
  writeHtmlReport,
} from "./html_report.ts";
export {
  JsonlMetricsWriter,
  METRICS_JSONL,
  type MetricsRow,
  readJsonlMetrics,
  truncateJsonlMetrics,
} from "./jsonl.ts";
export { Progress, type ProgressOptions, type ProgressOutput } from "./progress.ts";
export {
  decodeProto,
  fixedToNumber,
  type ProtoField,
  ProtoWriter,
  type WireType,
} from "./protobuf.ts";
export {
  frameRecord,
  parseTfEvents,
  readTfEvents,
  type ReadTfEventsOptions,
  TF_EVENTS_FILE_VERSION,
  type TfEvent,
  TfEventsWriter,
  type TfEventsWriterOptions,
} from "./tfevents.ts";
export {
  createTracker,
  type CreateTrackerOptions,
  DEFAULT_STDOUT_KEYS,
  type Metrics,
  MultiTracker,
  StdoutTracker,
  TRACK_WITH,
  type Tracker,
  type TrackWith,
} from "./tracker.ts";
