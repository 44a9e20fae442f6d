/**
 * A self-contained HTML report of a run: training curves as inline SVG line
 * charts (no scripts, stylesheets, fonts or images from anywhere else), a
 * header with run name, step and wall time, and a table of final values.
 *
 * Series are grouped into charts by {@linkcode groupSeries}: success rates,
 * scores, losses, KL, entropy, throughput (`system/*`), step times (`time/*`),
 * then the remaining metrics by parent path (e.g. `rollout/response_length`
 * for its mean/max/min), at most 12 series per chart.
 *
 * @module
 */
import { writeFileAtomic } from "./_atomic.ts";
import { formatNumber } from "./format_number.ts";

/** One logged step as read from metrics.jsonl: missing, null or non-finite values are gaps. */
export type HistoryRow =
  & { readonly step: number }
  & Readonly<
    Record<string, number | null | undefined>
  >;

/** Options of {@linkcode renderHtmlReport} and {@linkcode writeHtmlReport}. */
export interface HtmlReportOptions {
  /** Run name in the title and header (e.g. `exp_name`). */
  runName?: string;
  /** Wall time of the run so far, in seconds. */
  wallTimeSeconds?: number;
  /** When the report was made (default now); shown in the header. */
  generatedAt?: Date;
}

/** One chart: a title and the metric names drawn in it. */
export interface ChartGroup {
  /** Chart title. */
  title: string;
  /** Metric names, sorted. */
  series: string[];
}

/** Named groups in display order; a metric goes to the first group that matches it. */
const NAMED_GROUPS: readonly { title: string; match: RegExp }[] = [
  { title: "success", match: /^(val\/)?env\/[^/]+\/success$/ },
  { title: "score", match: /^(val\/)?(rollout|critic)\/score\/mean$/ },
  { title: "KL", match: /^(critic\/kl|actor\/kl_loss|actor\/approxkl)$/ },
  { title: "losses", match: /^(actor|critic)\/[^/]*loss$/ },
  { title: "entropy", match: /^actor\/entropy/ },
  { title: "throughput", match: /^system\// },
  { title: "time", match: /^time\// },
];

/** Most series drawn in one chart; more are split over several charts. */
const MAX_SERIES_PER_CHART = 12;

/**
 * The charts for a set of metric names: the named groups that have members
 * (in the order success, score, KL, losses, entropy, throughput, time), then
 * the other metrics grouped by parent path, in name order.
 *
 * @example
 * ```ts
 * import { groupSeries } from "./html_report.ts";
 * console.log(groupSeries(["actor/pg_loss", "critic/kl", "rollout/response_length/mean"]));
 * // [ { title: "KL", series: ["critic/kl"] }, { title: "losses", series: ["actor/pg_loss"] },
 * //   { title: "rollout/response_length", series: ["rollout/response_length/mean"] } ]
 * ```
 */
export function groupSeries(names: Iterable<string>): ChartGroup[] {
  const named = NAMED_GROUPS.map(() => [] as string[]);
  const rest = new Map<string, string[]>();
  for (const name of [...new Set(names)].sort()) {
    const i = NAMED_GROUPS.findIndex((g) => g.match.test(name));
    if (i >= 0) named[i]!.push(name);
    else {
      const cut = name.lastIndexOf("/");
      const parent = cut > 0 ? name.slice(0, cut) : "other";
      rest.set(parent, [...(rest.get(parent) ?? []), name]);
    }
  }
  const groups: ChartGroup[] = [];
  const add = (title: string, series: string[]) => {
    for (let i = 0; i < series.length; i += MAX_SERIES_PER_CHART) {
      const part = i === 0 ? title : `${title} (${i / MAX_SERIES_PER_CHART + 1})`;
      groups.push({ title: part, series: series.slice(i, i + MAX_SERIES_PER_CHART) });
    }
  };
  NAMED_GROUPS.forEach((g, i) => named[i]!.length > 0 && add(g.title, named[i]!));
  for (const parent of [...rest.keys()].sort()) add(parent, rest.get(parent)!);
  return groups;
}

/** A point of a series; `y` is null at a gap. */
interface Point {
  x: number;
  y: number | null;
}

/** Every metric's points in row order (non-finite values become gaps). */
function collectSeries(history: readonly HistoryRow[]): Map<string, Point[]> {
  const series = new Map<string, Point[]>();
  for (const row of history) {
    for (const [name, v] of Object.entries(row)) {
      if (name === "step") continue;
      let pts = series.get(name);
      if (pts === undefined) series.set(name, pts = []);
      pts.push({ x: row.step, y: typeof v === "number" && Number.isFinite(v) ? v : null });
    }
  }
  return series;
}

/** Escapes text for HTML/SVG content and attribute values. */
function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const COLORS = [
  "#1f77b4",
  "#d62728",
  "#2ca02c",
  "#ff7f0e",
  "#9467bd",
  "#8c564b",
  "#e377c2",
  "#7f7f7f",
  "#bcbd22",
  "#17becf",
  "#393b79",
  "#637939",
];

/** Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten. */
function niceTicks(lo: number, hi: number, count: number, integer = false): number[] {
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  let step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  if (integer) step = Math.max(1, Math.round(step));
  const ticks: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push(Math.abs(t) < step * 1e-9 ? 0 : Number(t.toPrecision(12)));
  }
  return ticks;
}

/** Smallest and largest value (a loop: spreading a long array into Math.min overflows the stack). */
function minMax(values: readonly number[]): [number, number] {
  let lo = Infinity, hi = -Infinity;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return [lo, hi];
}

/** [lo, hi] of finite values, widened when empty of width. */
function extent(values: number[]): [number, number] {
  let [lo, hi] = minMax(values);
  if (lo === hi) {
    const pad = Math.abs(lo) * 0.1 || 1;
    lo -= pad;
    hi += pad;
  }
  return [lo, hi];
}

const W = 560, H = 240;
const M = { left: 64, right: 12, top: 10, bottom: 26 };

/** One chart: an SVG with grid, axes, one path per series (gaps break the line), and a legend. */
function renderChart(group: ChartGroup, series: Map<string, Point[]>): string {
  const all = group.series.flatMap((n) => series.get(n) ?? []);
  const ys = all.flatMap((p) => (p.y === null ? [] : [p.y]));
  const [x0, x1] = extent(all.map((p) => p.x));
  const [yLo, yHi] = ys.length > 0 ? extent(ys) : [0, 1];
  const pw = W - M.left - M.right, ph = H - M.top - M.bottom;
  const sx = (x: number) => M.left + ((x - x0) / (x1 - x0)) * pw;
  const sy = (y: number) => M.top + (1 - (y - yLo) / (yHi - yLo)) * ph;
  const f = (v: number) => v.toFixed(1);
  const parts: string[] = [];
  for (const t of niceTicks(yLo, yHi, 4)) {
    parts.push(
      `<line class="grid" x1="${M.left}" x2="${W - M.right}" y1="${f(sy(t))}" y2="${f(sy(t))}"/>`,
      `<text x="${M.left - 6}" y="${f(sy(t) + 4)}" text-anchor="end">${
        esc(formatNumber(t))
      }</text>`,
    );
  }
  for (const t of niceTicks(x0, x1, 6, true)) {
    parts.push(
      `<line class="grid" x1="${f(sx(t))}" x2="${f(sx(t))}" y1="${M.top}" y2="${H - M.bottom}"/>`,
      `<text x="${f(sx(t))}" y="${H - M.bottom + 16}" text-anchor="middle">${t}</text>`,
    );
  }
  parts.push(
    `<rect class="frame" x="${M.left}" y="${M.top}" width="${pw}" height="${ph}"/>`,
  );
  const legend: string[] = [];
  group.series.forEach((name, i) => {
    const color = COLORS[i % COLORS.length]!;
    const pts = series.get(name) ?? [];
    let d = "";
    const dots: string[] = [];
    pts.forEach((p, j) => {
      if (p.y === null) return;
      const prev = pts[j - 1], next = pts[j + 1];
      const joined = prev !== undefined && prev.y !== null;
      d += `${joined ? "L" : "M"}${f(sx(p.x))} ${f(sy(p.y))}`;
      if (!joined && (next === undefined || next.y === null)) {
        dots.push(`<circle cx="${f(sx(p.x))}" cy="${f(sy(p.y))}" r="2.5" fill="${color}"/>`);
      }
    });
    parts.push(
      `<g><title>${esc(name)}</title>` +
        (d ? `<path d="${d}" fill="none" stroke="${color}" stroke-width="1.6"/>` : "") +
        dots.join("") + `</g>`,
    );
    const last = lastFinite(pts);
    legend.push(
      `<span><i style="background:${color}"></i>${esc(name)} <b>${
        last ? esc(formatNumber(last.y)) : "–"
      }</b></span>`,
    );
  });
  return `<section class="card"><h2>${esc(group.title)}</h2>` +
    `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(group.title)}">${
      parts.join("")
    }</svg>` +
    `<div class="legend">${legend.join("")}</div></section>`;
}

function lastFinite(pts: readonly Point[]): { x: number; y: number } | undefined {
  for (let i = pts.length - 1; i >= 0; i--) {
    const p = pts[i]!;
    if (p.y !== null) return { x: p.x, y: p.y };
  }
  return undefined;
}

function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const hms = [Math.floor(s / 3600), Math.floor(s / 60) % 60, s % 60];
  return `${hms[0]}:${String(hms[1]).padStart(2, "0")}:${String(hms[2]).padStart(2, "0")}`;
}

const STYLE = `body{font:14px system-ui,sans-serif;margin:24px;color:#222;background:#fafafa}
h1{font-size:20px;margin:0 0 4px}h2{font-size:15px;margin:0 0 6px}
.meta{color:#555;margin-bottom:16px}.meta span{margin-right:18px}
.grid-wrap{display:grid;grid-template-columns:repeat(auto-fill,minmax(480px,1fr));gap:14px}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:10px}
svg{width:100%;height:auto;display:block}svg text{font-size:11px;fill:#555}
.grid{stroke:#eee}.frame{fill:none;stroke:#bbb}
.legend{font-size:12px;display:flex;flex-wrap:wrap;gap:4px 12px;margin-top:4px}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
table{border-collapse:collapse;margin-top:20px;background:#fff;font-size:13px}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}`;

/**
 * The report page as a string (see the module doc).
 *
 * @example
 * ```ts
 * import { renderHtmlReport } from "./html_report.ts";
 * const html = renderHtmlReport(
 *   [{ step: 1, "actor/pg_loss": 0.3 }, { step: 2, "actor/pg_loss": 0.1 }],
 *   { runName: "demo" },
 * );
 * console.log(html.split("<svg").length - 1); // 1
 * ```
 */
export function renderHtmlReport(
  history: readonly HistoryRow[],
  options: HtmlReportOptions = {},
): string {
  const series = collectSeries(history);
  const groups = groupSeries(series.keys()).filter((g) =>
    g.series.some((n) => series.get(n)!.some((p) => p.y !== null))
  );
  const run = options.runName ?? "agentrl run";
  const lastStep = history.reduce((m, r) => Math.max(m, r.step), -Infinity);
  const meta = [
    `run <b>${esc(run)}</b>`,
    `step <b>${Number.isFinite(lastStep) ? lastStep : "–"}</b>`,
    `wall time <b>${
      options.wallTimeSeconds === undefined ? "–" : formatDuration(options.wallTimeSeconds)
    }</b>`,
    `generated ${esc((options.generatedAt ?? new Date()).toISOString())}`,
  ];
  // The table lists every metric, also those without a finite value yet.
  const rows = groupSeries(series.keys()).flatMap((g) => g.series).map((name) => {
    const pts = series.get(name)!;
    const ys = pts.flatMap((p) => (p.y === null ? [] : [p.y]));
    const last = lastFinite(pts);
    const [lo, hi] = minMax(ys);
    const cell = (v: number | undefined) => (v === undefined ? "–" : esc(formatNumber(v)));
    return `<tr><td>${esc(name)}</td><td>${cell(last?.y)}</td><td>${last?.x ?? "–"}</td>` +
      `<td>${ys.length ? cell(lo) : "–"}</td><td>${ys.length ? cell(hi) : "–"}</td></tr>`;
  });
  const body = rows.length === 0
    ? "<p>No metrics yet.</p>"
    : (groups.length ? "" : "<p>No finite values yet.</p>") +
      `<div class="grid-wrap">${groups.map((g) => renderChart(g, series)).join("")}</div>` +
      `<table><thead><tr><th>metric</th><th>last</th><th>at step</th><th>min</th><th>max</th>` +
      `</tr></thead><tbody>${rows.join("")}</tbody></table>`;
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(run)} · agentrl</title><style>${STYLE}</style></head>
<body><h1>${esc(run)}</h1><div class="meta">${meta.map((m) => `<span>${m}</span>`).join("")}</div>
${body}
</body></html>
`;
}

/**
 * Writes the report to `path` atomically (temporary file, then rename), so
 * a browser reloading it never sees half a page. Creates the parent folder.
 *
 * @example
 * ```ts
 * import { writeHtmlReport } from "./html_report.ts";
 * const dir = await Deno.makeTempDir();
 * await writeHtmlReport(`${dir}/report.html`, [{ step: 1, "system/tps": 900 }], { runName: "demo" });
 * console.log((await Deno.readTextFile(`${dir}/report.html`)).startsWith("<!DOCTYPE html>")); // true
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function writeHtmlReport(
  path: string,
  history: readonly HistoryRow[],
  options: HtmlReportOptions = {},
): Promise<void> {
  const cut = path.lastIndexOf("/");
  if (cut > 0) await Deno.mkdir(path.slice(0, cut), { recursive: true });
  await writeFileAtomic(path, renderHtmlReport(history, options));
}
