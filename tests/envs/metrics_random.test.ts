/**
 * Metric aggregation (ROLL's means and last-value success) and the seeded
 * generator (checked against a BigInt re-implementation of xoshiro128** and
 * for uniformity).
 */
import { deepStrictEqual, equal, notEqual, ok, throws } from "node:assert/strict";
import { aggregateEpisodeMetrics, aggregateMetrics } from "../../envs/metrics.ts";
import { Rng } from "../../envs/random.ts";

Deno.test("episode metrics: means of validity, effectiveness and penalty; success is the last", () => {
  const m = aggregateEpisodeMetrics([
    { action_is_valid: true, action_is_effective: false, success: true, format_penalty: 0 },
    { action_is_valid: false, action_is_effective: false, success: false, format_penalty: -0.1 },
    { action_is_valid: true, action_is_effective: true, success: false, format_penalty: 0 },
    { action_is_valid: true, action_is_effective: true, success: false, format_penalty: 0 },
  ]);
  deepStrictEqual(m, {
    action_is_valid: 0.75,
    action_is_effective: 0.5,
    format_penalty: -0.025,
    success: 0,
    num_actions: 4,
  });
  equal(aggregateEpisodeMetrics([]).num_actions, 0);
});

Deno.test("aggregateMetrics honours modes and skips missing keys", () => {
  const m = aggregateMetrics(
    [{ a: 1, b: 5 }, { a: 3 }, { a: 2, b: 1 }],
    { a: "max", b: "sum" },
  );
  deepStrictEqual(m, { a: 3, b: 6 });
  deepStrictEqual(aggregateMetrics([{ x: 2 }, { x: 4 }]), { x: 3 });
  deepStrictEqual(aggregateMetrics([{ success: true }, { success: false }]), { success: 0 });
});

/** xoshiro128** written with BigInt arithmetic, the published algorithm step by step. */
function referenceXoshiro(state: [number, number, number, number], n: number): number[] {
  const M = 0xffffffffn;
  const s = state.map(BigInt);
  const rotl = (x: bigint, k: bigint) => ((x << k) | (x >> (32n - k))) & M;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    out.push(Number((rotl((s[1]! * 5n) & M, 7n) * 9n) & M));
    const t = (s[1]! << 9n) & M;
    s[2]! ^= s[0]!;
    s[3]! ^= s[1]!;
    s[1]! ^= s[2]!;
    s[0]! ^= s[3]!;
    s[2]! ^= t;
    s[3] = rotl(s[3]!, 11n);
  }
  return out;
}

Deno.test("Rng is xoshiro128**: matches a BigInt reference, from the published state 1,2,3,4 too", () => {
  const states: Array<[number, number, number, number]> = [
    [1, 2, 3, 4],
    [0xdeadbeef, 7, 0xffffffff, 123456789],
  ];
  for (const state of states) {
    const rng = Rng.fromState(...state);
    const ours = Array.from({ length: 1000 }, () => rng.nextU32());
    deepStrictEqual(ours, referenceXoshiro([...state], 1000));
  }
  const first = Rng.fromState(1, 2, 3, 4);
  equal(first.nextU32(), 11520); // rotl(2 * 5, 7) * 9
  equal(first.nextU32(), 0);
  throws(() => Rng.fromState(0, 0, 0, 0), /all zero/);
});

Deno.test("Rng: same seed and stream repeat; streams and seeds differ; bad seeds are errors", () => {
  const seq = (seed: number, stream = 0) => {
    const r = new Rng(seed, stream);
    return Array.from({ length: 8 }, () => r.nextU32());
  };
  deepStrictEqual(seq(42), seq(42));
  notEqual(seq(42).join(), seq(43).join());
  notEqual(seq(42, 0).join(), seq(42, 1).join());
  notEqual(seq(-1).join(), seq(1).join());
  notEqual(seq(2 ** 32).join(), seq(0).join());
  throws(() => new Rng(1.5), /not a safe integer/);
  throws(() => new Rng(1, -1), /Stream -1/);
});

Deno.test("Rng.int and Rng.float are uniform (chi-square) and in range", () => {
  const rng = new Rng(7);
  const k = 10, n = 50_000;
  const counts = new Array(k).fill(0);
  const fcounts = new Array(k).fill(0);
  for (let i = 0; i < n; i++) {
    const x = rng.int(k);
    ok(x >= 0 && x < k && Number.isInteger(x));
    counts[x]++;
    const f = rng.float();
    ok(f >= 0 && f < 1);
    fcounts[Math.floor(f * k)]++;
  }
  // 9 degrees of freedom: 27.9 is the 0.1% critical value.
  for (const c of [counts, fcounts]) {
    const chi2 = c.reduce((s: number, x: number) => s + (x - n / k) ** 2 / (n / k), 0);
    ok(chi2 < 27.9, `chi2 ${chi2} for ${c}`);
  }
  throws(() => rng.int(0), /Range 0/);
  throws(() => rng.pick([]), /empty/);
});
