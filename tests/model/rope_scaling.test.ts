// RoPE scaling tables: Llama 3.1's at Llama 3.2's settings (theta 5e5, head_dim 64, factor 32,
// original context 8192) and YaRN's at Qwen2.5's long-context ones (theta 1e6, head_dim 128,
// factor 4, original context 32,768): which frequencies are kept, blended and divided, and the
// blend; YaRN's attention factor.
import assert from "node:assert/strict";
import {
  llama3InvFreq,
  ropeAttentionFactor,
  ropeInvFreq,
  yarnInvFreq,
} from "../../lib/model/rope_scaling.ts";
import { contextLength, contextLengthName } from "../../lib/model/config.ts";

Deno.test("llama3InvFreq at Llama 3.2's settings: 15 frequencies kept, 3 blended, 14 divided by 32", () => {
  const [theta, d] = [500000, 64];
  const table = llama3InvFreq(theta, d, {
    rope_type: "llama3",
    factor: 32,
    low_freq_factor: 1,
    high_freq_factor: 4,
    original_max_position_embeddings: 8192,
  });
  assert.equal(table.length, 32);
  const bands: string[] = [];
  table.forEach((x, j) => {
    const f = Math.pow(theta, -2 * j / d);
    const wavelen = 2 * Math.PI / f;
    if (wavelen < 8192 / 4) {
      assert.equal(x, Math.fround(f), `j=${j} (wavelength ${wavelen.toFixed(0)}) is kept`);
      bands.push("keep");
    } else if (wavelen > 8192 / 1) {
      assert.equal(x, Math.fround(f / 32), `j=${j} (wavelength ${wavelen.toFixed(0)}) / 32`);
      bands.push("divide");
    } else {
      // s = (8192 / wavelength - 1) / 3, blend (1 - s) f / 32 + s f
      const s = (8192 / wavelen - 1) / 3;
      assert.ok(s >= 0 && s <= 1, `j=${j}: smooth factor ${s}`);
      assert.equal(x, Math.fround((1 - s) * f / 32 + s * f), `j=${j} blended`);
      assert.ok(x > f / 32 && x < f, `j=${j} lies between f / 32 and f`);
      bands.push("blend");
    }
  });
  const count = (b: string) => bands.filter((x) => x === b).length;
  assert.deepEqual([count("keep"), count("blend"), count("divide")], [15, 3, 14]);
  // the bands are contiguous, from the highest frequency down
  assert.deepEqual(bands, [
    ...Array(15).fill("keep"),
    ...Array(3).fill("blend"),
    ...Array(14).fill("divide"),
  ]);
});

Deno.test("ropeInvFreq: the linear type divides every frequency by its factor; llama3 is llama3InvFreq", () => {
  const table = ropeInvFreq(10000, 8, { rope_type: "linear", factor: 4 });
  assert.deepEqual(Array.from(table), [0, 1, 2, 3].map((j) => Math.fround(10000 ** (-j / 4) / 4)));
  const llama = {
    rope_type: "llama3",
    factor: 8,
    low_freq_factor: 1,
    high_freq_factor: 4,
    original_max_position_embeddings: 64,
  } as const;
  assert.deepEqual(ropeInvFreq(5e5, 64, llama), llama3InvFreq(5e5, 64, llama));
});

Deno.test("yarnInvFreq at Qwen2.5's long-context settings: 24 frequencies kept, a ramp over 16, 24 divided by 4", () => {
  // theta 1e6, head_dim 128, original context 32,768: dimension d ln(L / 2πβ) / (2 ln θ) is
  // 23.6 for β = 32 (floored to 23) and 39.7 for β = 1 (ceiled to 40)
  const [theta, d] = [1e6, 128];
  const table = yarnInvFreq(theta, d, {
    rope_type: "yarn",
    factor: 4,
    original_max_position_embeddings: 32768,
  });
  assert.equal(table.length, 64);
  const bands = Array.from(table, (x, j) => {
    const f = Math.pow(theta, -2 * j / d);
    if (j <= 23) {
      assert.equal(x, Math.fround(f), `j=${j} kept`);
      return "keep";
    }
    if (j >= 40) {
      assert.equal(x, Math.fround(f / 4), `j=${j} divided`);
      return "divide";
    }
    const ramp = (j - 23) / 17;
    assert.equal(x, Math.fround(ramp * f / 4 + (1 - ramp) * f), `j=${j} on the ramp`);
    return "ramp";
  });
  assert.deepEqual(bands, [
    ...Array(24).fill("keep"),
    ...Array(16).fill("ramp"),
    ...Array(24).fill("divide"),
  ]);
  // without truncation the ramp runs between the unrounded bounds
  const exact = yarnInvFreq(theta, d, {
    rope_type: "yarn",
    factor: 4,
    original_max_position_embeddings: 32768,
    truncate: false,
  });
  const dim = (turns: number) =>
    d * Math.log(32768 / (turns * 2 * Math.PI)) / (2 * Math.log(theta));
  const [lo, hi] = [dim(32), dim(1)];
  assert.ok(lo > 23 && lo < 24 && hi > 39 && hi < 40, `${lo} ${hi}`);
  assert.equal(exact[23], table[23]); // below the unrounded low end: kept
  const ramp24 = (24 - lo) / (hi - lo);
  const f24 = Math.pow(theta, -48 / d);
  assert.equal(exact[24], Math.fround(ramp24 * f24 / 4 + (1 - ramp24) * f24));
  assert.notEqual(exact[24], table[24]);
  // beta_fast / beta_slow move the bounds; a factor of 1 is theta's own table
  const narrow = yarnInvFreq(theta, d, {
    rope_type: "yarn",
    factor: 4,
    original_max_position_embeddings: 32768,
    beta_fast: 4,
    beta_slow: 2,
  });
  assert.equal(narrow[30], Math.fround(Math.pow(theta, -60 / d)), "j=30 kept below β=4's bound");
  const one = yarnInvFreq(theta, d, {
    rope_type: "yarn",
    factor: 1,
    original_max_position_embeddings: 32768,
  });
  assert.deepEqual(one, ropeInvFreq(theta, d, { rope_type: "linear", factor: 1 }));
  assert.deepEqual(
    ropeInvFreq(theta, d, {
      rope_type: "yarn",
      factor: 4,
      original_max_position_embeddings: 32768,
    }),
    table,
  );
  assert.throws(
    () => yarnInvFreq(1, 8, { rope_type: "yarn", factor: 2, original_max_position_embeddings: 64 }),
    /YaRN needs rope_theta above 1, got 1/,
  );
});

Deno.test("ropeAttentionFactor: 0.1 ln(factor) + 1, a given attention_factor, DeepSeek's mscale ratio, 1 elsewhere", () => {
  const yarn = { rope_type: "yarn", factor: 4, original_max_position_embeddings: 32768 } as const;
  assert.equal(ropeAttentionFactor(yarn), 0.1 * Math.log(4) + 1);
  assert.equal(ropeAttentionFactor({ ...yarn, factor: 0.5 }), 1);
  assert.equal(ropeAttentionFactor({ ...yarn, attention_factor: 1.25 }), 1.25);
  // DeepSeek-V3: factor 40, mscale 1, mscale_all_dim 1 gives 1 (the ratio of equal terms)
  assert.equal(ropeAttentionFactor({ ...yarn, factor: 40, mscale: 1, mscale_all_dim: 1 }), 1);
  const ratio = (0.1 * 0.8 * Math.log(40) + 1) / (0.1 * 0.5 * Math.log(40) + 1);
  assert.equal(
    ropeAttentionFactor({ ...yarn, factor: 40, mscale: 0.8, mscale_all_dim: 0.5 }),
    ratio,
  );
  // only one of the two: the plain formula
  assert.equal(ropeAttentionFactor({ ...yarn, mscale: 0.8 }), 0.1 * Math.log(4) + 1);
  assert.equal(ropeAttentionFactor({ rope_type: "linear", factor: 4 }), 1);
  assert.equal(ropeAttentionFactor(null), 1);
});

Deno.test("contextLength: max_position_embeddings, or YaRN's factor x original context where longer", () => {
  const yarn = { rope_type: "yarn", factor: 4, original_max_position_embeddings: 32768 } as const;
  const qwen = { max_position_embeddings: 32768 };
  assert.equal(contextLength({ ...qwen, rope_scaling: null }), 32768);
  assert.equal(contextLength({ ...qwen, rope_scaling: yarn }), 131072);
  assert.equal(
    contextLengthName({ ...qwen, rope_scaling: yarn }),
    "context (YaRN's factor x original_max_position_embeddings)",
  );
  // never shorter than max_position_embeddings; other scalings leave it
  assert.equal(
    contextLength({ max_position_embeddings: 163840, rope_scaling: { ...yarn, factor: 1.5 } }),
    163840,
  );
  assert.equal(
    contextLengthName({ max_position_embeddings: 163840, rope_scaling: { ...yarn, factor: 1.5 } }),
    "max_position_embeddings",
  );
  assert.equal(contextLength({ ...qwen, rope_scaling: { rope_type: "linear", factor: 4 } }), 32768);
  assert.equal(
    contextLength({
      ...qwen,
      rope_scaling: { ...yarn, factor: 2.5, original_max_position_embeddings: 3 },
    }),
    32768,
  );
  assert.equal(
    contextLength({
      max_position_embeddings: 4,
      rope_scaling: { ...yarn, factor: 2.5, original_max_position_embeddings: 3 },
    }),
    7,
  );
});

Deno.test("yarnInvFreq's edges: the high bound clamped to head_dim - 1, and both bounds at 0 (a step, not 0 / 0)", () => {
  // theta 10, head_dim 8, original 838: the bounds are 2.48 (floored to 2) and 8.50 (ceiled to 9,
  // clamped to 7): kept up to j = 2, then a ramp of slope 1/5
  const f = (j: number) => Math.pow(10, -2 * j / 8);
  const clamped = yarnInvFreq(10, 8, {
    rope_type: "yarn",
    factor: 4,
    original_max_position_embeddings: 838,
  });
  assert.deepEqual(
    Array.from(clamped),
    [0, 1, 2, 3].map((j) => {
      const ramp = Math.min(Math.max((j - 2) / 5, 0), 1);
      return Math.fround(ramp * f(j) / 4 + (1 - ramp) * f(j));
    }),
  );
  // an original context of 6 turns every frequency less than once: both bounds are 0, the ramp
  // a step at 0.001
  const step = yarnInvFreq(10, 8, {
    rope_type: "yarn",
    factor: 4,
    original_max_position_embeddings: 6,
  });
  assert.deepEqual(
    Array.from(step),
    [0, 1, 2, 3].map((j) => Math.fround(j === 0 ? f(0) : f(j) / 4)),
  );
});
