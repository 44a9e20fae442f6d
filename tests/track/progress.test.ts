/** The progress line: drawn in place on a terminal, throttled, silent elsewhere. */
import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { Progress, type ProgressOutput } from "../../lib/track/progress.ts";

/** A fake stream recording what is written. */
function fakeOutput(terminal: boolean): ProgressOutput & { text: () => string } {
  const chunks: Uint8Array[] = [];
  return {
    isTerminal: () => terminal,
    writeSync: (p) => (chunks.push(p.slice()), p.length),
    text: () => new TextDecoder().decode(new Uint8Array(chunks.flatMap((c) => [...c]))),
  };
}

Deno.test("progress: draws one line in place on a terminal, throttled", () => {
  const out = fakeOutput(true);
  let t = 0;
  const p = new Progress({ output: out, now: () => t, columns: 200 });
  ok(p.enabled);
  p.start("rollout", 8);
  t = 1000;
  p.update(2, "env 3"); // drawn: 100 ms passed since the start
  t = 1050;
  p.update(3); // throttled
  t = 2000;
  p.update(4);
  t = 4000;
  p.done();
  const frames = out.text().split("\r").filter((s) => s !== "");
  deepStrictEqual(frames, [
    "rollout  [░░░░░░░░░░░░░░░░░░░░░░░░]  0/8  0%\x1b[K",
    "rollout  [██████░░░░░░░░░░░░░░░░░░]  2/8  25%  2.0/s  eta 3s  env 3\x1b[K",
    "rollout  [████████████░░░░░░░░░░░░]  4/8  50%  2.0/s  eta 2s\x1b[K",
    "rollout  [████████████████████████]  8/8  100%  2.0/s  in 4s\x1b[K\n",
  ]);
});

Deno.test("progress: reaching the total always draws; unknown totals; clear; cut to width", () => {
  const out = fakeOutput(true);
  let t = 0;
  const p = new Progress({ output: out, now: () => t, columns: 30 });
  p.start("train", 2);
  t = 10;
  p.update(2); // not throttled: the phase is complete
  p.clear();
  p.clear(); // nothing shown: no second erase
  t = 90_000;
  p.start("val", 0);
  t = 95_000;
  p.update(3, "a long note that does not fit in thirty columns");
  p.done();
  const frames = out.text().split("\r").filter((s) => s !== "");
  equal(frames[1], `train  [${"█".repeat(20)}…\x1b[K`); // 28 characters and an ellipsis
  equal(frames[2], "\x1b[K"); // clear
  equal(frames[3], "val  0\x1b[K");
  equal(frames[4], "val  3  0.6/s  a long note t…\x1b[K");
  equal(frames[5], "val  3  0.6/s  in 5s  a long…\x1b[K\n");
  equal(frames.length, 6);
  for (const f of frames) ok([...f.split("\x1b[K")[0]!].length <= 29);
});

Deno.test("progress: silent when the output is not a terminal", () => {
  const out = fakeOutput(false);
  const p = new Progress({ output: out });
  equal(p.enabled, false);
  p.start("rollout", 3);
  p.update(1, "x");
  p.clear();
  p.done();
  equal(out.text(), "");
});

Deno.test("progress: a failing stream never throws into the run", () => {
  const p = new Progress({
    output: {
      isTerminal: () => true,
      writeSync: () => {
        throw new Deno.errors.BrokenPipe("gone");
      },
    },
  });
  p.start("rollout", 1);
  p.update(1);
  p.done();
});
