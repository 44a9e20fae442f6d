// Lookahead (each step queued before the tokens of the step before are read, its token ids
// sampled on the device) gives the same results as waiting for every step: with stop tokens,
// length limits, more requests than slots, an abort and a weight update in the middle; rows of
// sequences that stopped meanwhile are counted as discarded. A model call that fails ahead is made
// again from the host; one that keeps failing fails the requests.
import assert from "node:assert/strict";
import { Kernels } from "../../ffi/mod.ts";
import {
  GenerationEngine,
  type GenerationRequest,
  type GenerationResult,
  type StepInfo,
} from "../../lib/infer/mod.ts";
import type { Qwen2Model } from "../../lib/model/qwen2.ts";
import { Rng } from "../kernels/_helpers.ts";
import { randomModel, randomPrompts, smallConfig } from "./_helpers.ts";

interface Run {
  results: GenerationResult[];
  discarded: number;
  steps: StepInfo[];
}

/** Runs `requests` on a fresh engine; `onStep` may act on the engine between steps. */
async function generate(
  model: Qwen2Model,
  requests: GenerationRequest[],
  lookahead: boolean,
  onStep: (engine: GenerationEngine, info: StepInfo) => void = () => {},
): Promise<Run> {
  const steps: StepInfo[] = [];
  const engine: GenerationEngine = new GenerationEngine(model, {
    maxRunningRequests: 3,
    maxModelLen: 40,
    eosTokenIds: [7, 11],
    lookahead,
    onStep: (info) => {
      steps.push(info);
      onStep(engine, info);
    },
  });
  try {
    const results = await Promise.all(requests.map((r) => engine.generate(r)));
    return { results, discarded: engine.stats.discardedTokens, steps };
  } finally {
    await engine.close();
  }
}

function assertSameResults(a: GenerationResult[], b: GenerationResult[]): void {
  assert.equal(a.length, b.length);
  a.forEach((r, i) => {
    const s = b[i]!;
    const what = `request ${r.request_id}`;
    assert.deepEqual(s.token_ids, r.token_ids, what);
    assert.equal(s.finish_reason, r.finish_reason, what);
    assert.deepEqual(s.weight_versions, r.weight_versions, what);
    r.logprobs.forEach((lp, j) => assert.ok(Math.abs(s.logprobs[j]! - lp) < 1e-4, `${what} #${j}`));
  });
}

Deno.test("engine lookahead: the same tokens, finishes and versions as waiting for each step", async () => {
  using k = Kernels.open({ threads: 2 });
  const cfg = smallConfig({ vocab_size: 16 }); // small: the stop tokens 7 and 11 come up often
  using model = randomModel(k, cfg, "lookahead");
  using trained = randomModel(k, cfg, "lookahead trained");
  const prompts = randomPrompts(new Rng("lookahead"), cfg.vocab_size, [2, 5, 3, 6, 4, 2, 5]);
  const requests: GenerationRequest[] = prompts.map((p, i) => ({
    prompt_token_ids: p,
    max_new_tokens: 3 + 4 * (i % 4),
    temperature: i % 3 === 0 ? 0 : 1,
    seed: 100 + i,
    ignore_eos: i === 2,
  }));

  const waiting = await generate(model, requests, false);
  const ahead = await generate(model, requests, true);
  assertSameResults(waiting.results, ahead.results);
  assert.equal(waiting.discarded, 0);
  assert.ok(ahead.discarded > 0, "some rows ran for sequences that had stopped");
  assert.ok(waiting.results.some((r) => r.finish_reason === "stop"));
  assert.ok(waiting.results.some((r) => r.finish_reason === "length"));
  const decoded = (run: Run) => run.steps.reduce((a, s) => a + s.decoded, 0);
  assert.equal(decoded(ahead), decoded(waiting));

  // A weight update after step 4 drops the step queued with the old weights; an abort after
  // step 6 drops that request's rows. (Three requests for three slots: with requests waiting,
  // a slot that a stop token frees is taken a step later with lookahead, so the update would
  // land at another token of the late request.)
  const actions = (engine: GenerationEngine, info: StepInfo) => {
    if (info.step === 4) void engine.updateWeights(trained);
    if (info.step === 6) engine.abort("req-1");
  };
  const three = requests.slice(1, 4).map((r) => ({ ...r, max_new_tokens: 12 }));
  const waitingUpdate = await generate(model, three, false, actions);
  const fresh = randomModel(k, cfg, "lookahead"); // the weights `model` had before the update
  try {
    const aheadUpdate = await generate(fresh, three, true, actions);
    assertSameResults(waitingUpdate.results, aheadUpdate.results);
    assert.ok(waitingUpdate.results.some((r) => r.weight_versions[1] === 1));
    assert.equal(waitingUpdate.results[1]!.finish_reason, "abort");
  } finally {
    fresh.dispose();
  }
});

Deno.test("engine: lookahead must be a boolean", () => {
  using k = Kernels.open({ threads: 1 });
  using model = randomModel(k, smallConfig(), "lookahead option");
  assert.throws(
    () =>
      new GenerationEngine(model, {
        maxRunningRequests: 1,
        maxModelLen: 8,
        lookahead: "yes" as unknown as boolean,
      }),
    /lookahead must be true or false, got yes/,
  );
});

Deno.test("engine lookahead: a model call that fails ahead is made again from the host; one that keeps failing fails the requests", async () => {
  using k = Kernels.open({ threads: 2 });
  const cfg = smallConfig({ vocab_size: 16 });
  using model = randomModel(k, cfg, "lookahead failure");
  const requests: GenerationRequest[] = [[1, 2, 3], [4, 5]].map((p, i) => ({
    prompt_token_ids: p,
    max_new_tokens: 8,
    temperature: 1,
    seed: i,
    ignore_eos: true,
  }));
  const clean = await generate(model, requests, false);
  // Call 1 is the prefill, call 2 the step queued ahead of step 1, call 3 the one ahead of step 2.
  const forward = model.forwardCached.bind(model);
  const failing = (from: number, to: number) => {
    let calls = 0;
    model.forwardCached = (...args) => {
      calls++;
      if (calls >= from && calls <= to) throw new Error(`model call ${calls} failed`);
      return forward(...args);
    };
  };
  try {
    failing(3, 3);
    const retried = await generate(model, requests, true);
    assertSameResults(clean.results, retried.results);
    failing(3, Infinity);
    await assert.rejects(() => generate(model, requests, true), /model call 4 failed/);
  } finally {
    model.forwardCached = forward;
  }
});
