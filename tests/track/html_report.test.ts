/**
 * The HTML report: charts per present group, gaps, escaping, no outside
 * references, well-formed markup (a small tag checker below), atomic writes.
 */
import { deepStrictEqual, equal, match, ok, rejects } from "node:assert/strict";
import {
  groupSeries,
  type HistoryRow,
  renderHtmlReport,
  writeHtmlReport,
} from "../../lib/track/html_report.ts";

const VOID = new Set(["meta", "br", "img", "input", "link", "hr"]);
const SVG_SELF_CLOSING = new Set(["line", "rect", "circle", "path"]);

/** Checks that tags nest and close, attributes are quoted, and `<` / `&` in text are escaped. */
function checkWellFormed(html: string): void {
  const stack: string[] = [];
  const body = html.replace(/^<!DOCTYPE html>\s*/, "");
  const tag = /<(\/?)([a-z][a-z0-9]*)((?:\s+[A-Za-z][A-Za-z0-9:-]*="[^"<>]*")*)\s*(\/?)>/gy;
  let pos = 0;
  while (pos < body.length) {
    const lt = body.indexOf("<", pos);
    const text = body.slice(pos, lt < 0 ? body.length : lt);
    ok(!/&(?!#\d+;|amp;|lt;|gt;|quot;)/.test(text), `bare & in ${JSON.stringify(text)}`);
    if (lt < 0) break;
    tag.lastIndex = lt;
    const m = tag.exec(body);
    ok(m, `malformed tag at ${JSON.stringify(body.slice(lt, lt + 60))}`);
    const [, close, name, , self] = m;
    if (close) equal(stack.pop(), name, `</${name}> closes the wrong element`);
    else if (self) ok(SVG_SELF_CLOSING.has(name!), `<${name}/>`);
    else if (!VOID.has(name!)) stack.push(name!);
    pos = tag.lastIndex;
  }
  deepStrictEqual(stack, [], "unclosed elements");
}

/** The path data drawn for one series (by its <title>), and how many dots. */
function drawn(html: string, name: string): { d: string | undefined; dots: number } {
  const start = html.indexOf(`<g><title>${name}</title>`);
  ok(start >= 0, `no series ${name}`);
  const g = html.slice(start, html.indexOf("</g>", start));
  return { d: /<path d="([^"]*)"/.exec(g)?.[1], dots: g.split("<circle").length - 1 };
}

function history(): HistoryRow[] {
  return Array.from({ length: 30 }, (_, i) => {
    const step = i + 1;
    return {
      step,
      "env/FrozenLake/success": i / 30,
      "val/env/FrozenLake/success": i % 5 === 0 ? i / 40 : undefined,
      "rollout/score/mean": Math.sin(i),
      "critic/score/mean": Math.cos(i),
      "actor/pg_loss": 1 / step,
      "actor/total_loss": 2 / step,
      "critic/vf_loss": 0.5,
      "critic/kl": 0.01 * i,
      "actor/kl_loss": 0.001 * i,
      "actor/approxkl": 0.002,
      "actor/entropy": 2 - i / 30,
      "system/tps": 1000 + i,
      "time/step_total": 12.5,
      "rollout/response_length/mean": 40 + i,
      "rollout/response_length/max": 64,
    };
  });
}

Deno.test("groupSeries: named groups claim their metrics, the rest by parent path", () => {
  const groups = groupSeries(Object.keys(history()[0]!).filter((k) => k !== "step"));
  deepStrictEqual(groups, [
    { title: "success", series: ["env/FrozenLake/success", "val/env/FrozenLake/success"] },
    { title: "score", series: ["critic/score/mean", "rollout/score/mean"] },
    { title: "KL", series: ["actor/approxkl", "actor/kl_loss", "critic/kl"] },
    { title: "losses", series: ["actor/pg_loss", "actor/total_loss", "critic/vf_loss"] },
    { title: "entropy", series: ["actor/entropy"] },
    { title: "throughput", series: ["system/tps"] },
    { title: "time", series: ["time/step_total"] },
    {
      title: "rollout/response_length",
      series: ["rollout/response_length/max", "rollout/response_length/mean"],
    },
  ]);
  const many = Array.from({ length: 14 }, (_, i) => `critic/x/m${String(i).padStart(2, "0")}`);
  deepStrictEqual(groupSeries([...many, "lr"]).map((g) => [g.title, g.series.length]), [
    ["critic/x", 12],
    ["critic/x (2)", 2],
    ["other", 1],
  ]);
});

Deno.test("report: one <svg> per present group, header, table, no outside references", () => {
  const html = renderHtmlReport(history(), {
    runName: "frozen_lake_grpo",
    wallTimeSeconds: 3725.4,
    generatedAt: new Date("2025-01-02T03:04:05Z"),
  });
  checkWellFormed(html);
  equal(html.split("<svg").length - 1, 8);
  const titles = [...html.matchAll(/<h2>([^<]*)<\/h2>/g)].map((m) => m[1]);
  deepStrictEqual(titles, [
    "success",
    "score",
    "KL",
    "losses",
    "entropy",
    "throughput",
    "time",
    "rollout/response_length",
  ]);
  match(html, /<title>frozen_lake_grpo · agentrl<\/title>/);
  match(html, /step <b>30<\/b>/);
  match(html, /wall time <b>1:02:05<\/b>/);
  match(html, /generated 2025-01-02T03:04:05.000Z/);
  // Final values: last, its step, min, max.
  match(
    html,
    /<tr><td>actor\/pg_loss<\/td><td>0.03333<\/td><td>30<\/td><td>0.03333<\/td><td>1<\/td><\/tr>/,
  );
  match(html, /<tr><td>val\/env\/FrozenLake\/success<\/td><td>0.625<\/td><td>26<\/td>/);
  ok(!/(src|href)\s*=/i.test(html), "no src/href attributes");
  ok(!/http/i.test(html), "no http references");
  ok(!/<script|<link|@import|url\(/i.test(html), "no scripts, stylesheets or fetched resources");
});

Deno.test("report: gaps split lines, lone points are dots, all-gap series have no chart", () => {
  const rows: HistoryRow[] = [
    { step: 1, a: 1, b: 1, "c/nan": null },
    { step: 2, a: 2, b: null, "c/nan": NaN },
    { step: 3, a: null, b: 3 },
    { step: 4, a: NaN, b: 4 },
    { step: 5, a: 5, b: Infinity },
    { step: 6, a: 6 },
  ];
  const html = renderHtmlReport(rows);
  checkWellFormed(html);
  const a = drawn(html, "a");
  equal(a.d?.match(/M/g)?.length, 2); // steps 1-2 and 5-6
  equal(a.d?.match(/L/g)?.length, 2);
  equal(a.dots, 0);
  const b = drawn(html, "b"); // 1 alone, 3-4 joined
  equal(b.d?.match(/M/g)?.length, 2);
  equal(b.dots, 1);
  equal(html.split("<svg").length - 1, 1); // "other": a, b; "c" has no finite value
  match(html, /<tr><td>c\/nan<\/td><td>–<\/td><td>–<\/td><td>–<\/td><td>–<\/td><\/tr>/);
  ok(!/NaN|Infinity/.test(html));
  // Empty history.
  const empty = renderHtmlReport([]);
  checkWellFormed(empty);
  match(empty, /No metrics yet/);
  equal(empty.split("<svg").length - 1, 0);
});

Deno.test("report: metric and run names are escaped", () => {
  const evil = `<img src=x onerror="alert(1)">&`;
  const html = renderHtmlReport(
    [{ step: 1, [`env/${evil}/success`]: 1, [evil]: 2 }, { step: 2, [evil]: 3 }],
    { runName: `"</title><script>alert('x')</script>` },
  );
  checkWellFormed(html);
  ok(!html.includes("<img"));
  ok(!html.includes("<script"));
  ok(!html.includes('onerror="'));
  match(html, /&#60;img src=x onerror=&#34;alert\(1\)&#34;&#62;&#38;/);
  match(html, /<h1>&#34;&#60;\/title&#62;&#60;script&#62;alert\(&#39;x&#39;\)/);
  equal(html.split("<svg").length - 1, 2); // success, and the name without a slash in "other"
});

Deno.test("writeHtmlReport: atomic replace, parent folder created, no temp file left", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_track_" });
  try {
    const path = `${dir}/out/report.html`;
    await writeHtmlReport(path, history().slice(0, 3), { runName: "r1" });
    await writeHtmlReport(path, history(), { runName: "r2" });
    const html = await Deno.readTextFile(path);
    match(html, /<h1>r2<\/h1>/);
    deepStrictEqual([...Deno.readDirSync(`${dir}/out`)].map((e) => e.name), ["report.html"]);
    // A failed rename (the target is a folder) leaves no temp file behind.
    await Deno.mkdir(`${dir}/dir.html`);
    await rejects(writeHtmlReport(`${dir}/dir.html`, history()));
    deepStrictEqual([...Deno.readDirSync(dir)].map((e) => e.name).sort(), ["dir.html", "out"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
