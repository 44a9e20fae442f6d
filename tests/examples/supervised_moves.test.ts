import assert from "node:assert/strict";
import { Rng } from "../../envs/random.ts";
import { shortestPath } from "../../envs/frozen_lake/mod.ts";
import { defaultFrozenLakeEntry } from "../../lib/model/make_base_model.ts";
import { writeTinyModel } from "../../lib/model/make_tiny_tokenizer.ts";
import { Tokenizer } from "../../lib/model/tokenizer.ts";
import { Kernels } from "../../ffi/mod.ts";
import { parseQwen2Config } from "../../lib/model/hf_config.ts";
import { savePretrained } from "../../lib/model/pretrained.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import { labelledState, supervisedMoves } from "../../examples/diagnostics/supervised_moves.ts";

Deno.test("supervised_moves: first-turn labels are the first move of a shortest path", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await writeTinyModel(dir);
    const tokenizer = await Tokenizer.load(dir);
    const entry = await defaultFrozenLakeEntry();
    const rng = new Rng(3);
    for (let i = 0; i < 8; i++) {
      // the first turn shows the start: P stands on S
      const s = labelledState(tokenizer, entry, rng, 1);
      assert.ok(s.action >= 0 && s.action < 4);
      const text = tokenizer.decode(s.prompt);
      assert.ok(text.endsWith("<answer"), text.slice(-40));
      const grid = /State:\n([\s\S]*?)\nReply/.exec(text)![1]!.split("\n");
      const map = grid.map((row) =>
        row.replace("P", "S").replaceAll("_", "F").replaceAll("O", "H")
      );
      const path = shortestPath(map, map.join("").indexOf("S"));
      assert.equal(s.action, path![0]);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A tiny model folder with seeded random weights. */
async function tinyModelFolder(dir: string): Promise<void> {
  const tokDir = await Deno.makeTempDir();
  try {
    await writeTinyModel(tokDir);
    const config = parseQwen2Config(
      JSON.parse(await Deno.readTextFile(`${tokDir}/config.json`)),
      "tiny config.json",
    );
    using k = Kernels.open({ threads: 1 });
    using model = new Qwen2Model(k, config, { seed: 0 });
    await savePretrained(model, dir, { tokenizerDir: tokDir, overwrite: true });
  } finally {
    await Deno.remove(tokDir, { recursive: true });
  }
}

Deno.test("supervised_moves: a short run reports accuracy before and during training", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await tinyModelFolder(dir);
    const r = await supervisedMoves({
      model: dir,
      scratch: false,
      steps: 2,
      batch: 4,
      lr: 1e-3,
      walk: 2,
      testSize: 4,
      every: 1,
      threads: 1,
    });
    assert.equal(r.curve.length, 2);
    for (const [step, loss, accuracy] of r.curve) {
      assert.ok(step >= 1 && Number.isFinite(loss) && loss > 0);
      assert.ok(accuracy >= 0 && accuracy <= 1);
    }
    assert.ok(r.promptTokens > 100);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
