/**
 * bench/gpu/decode_ab.ts: its arguments, the rates it reads from bench.ts, its table, and one
 * real run of the tiny model on the CPU library.
 */
import { deepStrictEqual, equal, match, throws } from "node:assert/strict";
import {
  formatComparison,
  main,
  parseDecodeRates,
  parseVariant,
} from "../../bench/gpu/decode_ab.ts";

Deno.test("decode_ab: a variant is NAME:ENV=VALUE,...; anything else is a clear error", () => {
  deepStrictEqual(parseVariant("base:"), { name: "base", env: {} });
  deepStrictEqual(parseVariant("fused:AGENTRL_CUDA_DECODE_QKV_IN_ATTN=1,X_Y=a=b"), {
    name: "fused",
    env: { AGENTRL_CUDA_DECODE_QKV_IN_ATTN: "1", X_Y: "a=b" },
  });
  throws(() => parseVariant("AGENTRL_CUDA_PDL=0"), /expected NAME:ENV=VALUE/);
  throws(() => parseVariant("x:1BAD=2"), /"1BAD=2" is not ENV=VALUE/);
  throws(() => parseVariant("x:A=1,"), /"" is not ENV=VALUE/);
});

const OUTPUT = `decode graphs: on, 4 recorded
decode tokens/s, batch 1: 1491.5
decode tokens/s, batch 1, each step waiting for its tokens: 1400.0 (pipelined: 1.065x)
generation engine, batch 1: 1300.2 tokens/s with lookahead, 1250.0 without (1.040x)
`;

Deno.test("decode_ab: reads bench.ts --decode-only's three rates, or none when one is missing", () => {
  deepStrictEqual(parseDecodeRates(OUTPUT), { pipelined: 1491.5, waiting: 1400, engine: 1300.2 });
  equal(parseDecodeRates(OUTPUT.replace(/^generation.*$/m, "")), null);
  equal(parseDecodeRates("bench failed: no CUDA device"), null);
});

Deno.test("decode_ab: the table gives medians and ratios to the first variant", () => {
  const table = formatComparison(
    [{ name: "default", env: {} }, { name: "fused", env: { A: "1" } }, { name: "broken", env: {} }],
    [
      [
        { pipelined: 100, waiting: 90, engine: 80 },
        { pipelined: 300, waiting: 90, engine: 80 },
        { pipelined: 200, waiting: 90, engine: 80 },
      ],
      [{ pipelined: 250, waiting: 99, engine: 40 }],
      [],
    ],
  ).split("\n");
  equal(table.length, 4);
  match(
    table[1]!,
    /^default\s+200\.0\s+1\.000x\s+90\.0\s+1\.000x\s+80\.0\s+1\.000x\s+100 300 200$/,
  );
  match(table[2]!, /^fused\s+250\.0\s+1\.250x\s+99\.0\s+1\.100x\s+40\.0\s+0\.500x\s+250$/);
  match(table[3]!, /^broken\s+-\s+-\s+-\s+-\s+-\s+-\s+-$/);
});

Deno.test("decode_ab: bad arguments exit 2 with what was wrong", async () => {
  const errors: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => errors.push(args.join(" "));
  try {
    equal(await main(["--runs", "0"]), 2);
    equal(await main(["--device", "tpu"]), 2);
    equal(await main(["--small", "extra"]), 2);
    equal(await main(["--variant"]), 2);
  } finally {
    console.error = original;
  }
  match(errors[0]!, /--runs 0: expected a whole number >= 1/);
  match(errors[1]!, /--device tpu: expected cuda or cpu/);
  match(errors[2]!, /unexpected argument "extra"/);
  match(errors[3]!, /--variant needs a value/);
});

Deno.test("decode_ab: one real round of the tiny model on the CPU library", async () => {
  const lines: string[] = [];
  const original = console.log;
  console.log = (...args: unknown[]) => lines.push(args.join(" "));
  try {
    equal(await main(["--device", "cpu", "--small", "--runs", "1", "--variant", "cpu:"]), 0);
  } finally {
    console.log = original;
  }
  match(lines[0]!, /^round 1, cpu: [0-9.]+ tokens\/s$/);
  match(
    lines.at(-1)!.split("\n").at(-1)!,
    /^cpu\s+[0-9.]+\s+1\.000x\s+[0-9.]+\s+1\.000x\s+[0-9.]+\s+1\.000x\s+\d+$/,
  );
});
