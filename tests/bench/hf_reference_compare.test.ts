// bench/gpu/reference.ts, the comparison with transformers that the GPU script runs, on its own
// fixture (a tiny YaRN-scaled reference made by our CPU model): the rotary table, attention
// scaling, log-probs and gradients agree; a config.json without the scaling fails the table, the
// scaling and the attention gradients.
import assert from "node:assert/strict";
import { compareWithReference, makeFixture } from "../../bench/gpu/reference.ts";

Deno.test("reference.ts: a YaRN fixture matches on every row, the rotary table and attention scaling included", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_ref_" });
  try {
    await makeFixture(dir, { yarn: true });
    const lines: string[] = [];
    const result = compareWithReference(dir, "cpu", (l) => lines.push(l));
    assert.ok(result.ok, JSON.stringify(result.rows, null, 1));
    const what = result.rows.map((r) => r.what);
    assert.deepEqual(what.slice(0, 3), [
      "rope inv_freq",
      "rope attention scaling",
      "logp (per token)",
    ]);
    assert.match(lines[0]!, /rope_scaling \{"rope_type":"yarn","factor":4,/);
    // each layer: q/k/v weights and biases, o, gate, up, down, two norms; the embedding, the norm
    assert.equal(result.params.length, 2 * 12 + 2);
    // the same folder read as plain RoPE: the table, the scaling and the log-probs disagree
    const configPath = `${dir}/config.json`;
    const json = JSON.parse(await Deno.readTextFile(configPath));
    delete json.rope_scaling;
    await Deno.writeTextFile(configPath, JSON.stringify(json));
    const plain = compareWithReference(dir, "cpu");
    assert.equal(plain.ok, false);
    const failed = plain.rows.filter((r) => !r.ok).map((r) => r.what);
    // (the fixture's 0.02-scale weights keep attention near uniform: its log-probs move by less
    // than their tolerance, its attention gradients by more)
    for (const w of ["rope inv_freq", "rope attention scaling"]) {
      assert.ok(failed.includes(w), `${w} fails without the scaling: ${failed.join("; ")}`);
    }
    assert.ok(failed.some((w) => w.startsWith("grad, attention")), failed.join("; "));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
