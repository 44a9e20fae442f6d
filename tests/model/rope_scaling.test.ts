// Llama 3.1's RoPE scaling table at Llama 3.2's settings (theta 5e5, head_dim 64, factor 32,
// original context 8192): which frequencies are kept, blended and divided, and the blend.
import assert from "node:assert/strict";
import { llama3InvFreq, ropeInvFreq } from "../../lib/model/rope_scaling.ts";

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
