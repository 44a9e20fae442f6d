import assert from "node:assert/strict";
import { Kernels } from "../../ffi/mod.ts";
import { GenerationEngine } from "../../lib/infer/engine.ts";
import { generateStaticPadded } from "../../lib/infer/static_batch.ts";
import { randomModel, smallConfig } from "./_helpers.ts";

Deno.test("padded static batching: every row decodes until its batch's longest request ends", () => {
  using k = Kernels.open({ threads: 2 });
  using model = randomModel(k, smallConfig(), "padded");
  const lengths = [3, 9, 5, 2, 7];
  const rows: number[] = [];
  const out = generateStaticPadded(
    model,
    lengths.map((n, i) => ({ prompt_token_ids: [1, 2, 3 + i], max_new_tokens: n, seed: i })),
    { maxRunningRequests: 2, maxModelLen: 32, onStep: (r) => rows.push(r) },
  );
  assert.deepEqual(out.map((t) => t.length), lengths);
  // batches [3, 9], [5, 2], [7]: longest - 1 decode steps each (the prefill samples the first)
  assert.deepEqual(rows, [...Array(8).fill(2), ...Array(4).fill(2), ...Array(6).fill(1)]);
  for (const t of out.flat()) {
    assert.ok(Number.isInteger(t) && t >= 0 && t < model.config.vocab_size);
  }
});

Deno.test("padded static batching: do_sample false is greedy, and a batch past maxModelLen is refused", async () => {
  using k = Kernels.open({ threads: 2 });
  using model = randomModel(k, smallConfig(), "padded greedy");
  const request = { prompt_token_ids: [1, 2, 3], max_new_tokens: 6 };
  const [padded] = generateStaticPadded(model, [{ ...request, do_sample: false, seed: 5 }], {
    maxRunningRequests: 1,
    maxModelLen: 32,
  });
  // the engine's greedy tokens for the same request
  await using engine = new GenerationEngine(model, { maxRunningRequests: 1, maxModelLen: 32 });
  const greedy = await engine.generate({ ...request, do_sample: false });
  assert.deepEqual(padded, greedy.token_ids);
  assert.throws(
    () =>
      generateStaticPadded(model, [
        { prompt_token_ids: Array(28).fill(1), max_new_tokens: 2 },
        { prompt_token_ids: [1, 2], max_new_tokens: 20 },
      ], { maxRunningRequests: 2, maxModelLen: 32 }),
    /Request 0: its 28-token prompt plus the batch's longest max_new_tokens \(20\) exceed maxModelLen 32/,
  );
});
