// What the engine generates: greedy tokens are the argmax of a full
// recomputation (forwardLogits over prompt + tokens so far) at every step,
// log-probs are the reference log-softmax, a seeded request gives the same
// tokens whatever else runs beside it, and the static baseline gives the
// continuous engine's tokens.
import assert from "node:assert/strict";
import { setImmediate } from "node:timers";
import { Kernels, sample } from "../../ffi/mod.ts";
import {
  generateStatic,
  GenerationEngine,
  type GenerationRequest,
  type GenerationResult,
  type StepInfo,
} from "../../lib/infer/mod.ts";
import type { Qwen2Model } from "../../lib/model/qwen2.ts";
import { Rng } from "../kernels/_helpers.ts";
import {
  argmax,
  lastLogits,
  logSoftmaxAt,
  randomModel,
  randomPrompts,
  smallConfig,
} from "./_helpers.ts";

/** Resolves once the engine has run at least `n` steps in all. */
async function untilSteps(engine: GenerationEngine, n: number): Promise<void> {
  while (engine.stats.steps < n) await new Promise((r) => setImmediate(r));
}

/**
 * Checks every generated token of `r` against a full recomputation: greedy
 * tokens are the argmax (a near-tie within 1e-4 is accepted), and each
 * log-prob is log softmax(logits / temperature) of the token (temperature 1
 * for greedy). Returns the number of tokens checked.
 */
function checkAgainstRecomputation(
  model: Qwen2Model,
  prompt: readonly number[],
  r: GenerationResult,
  temperature: number,
): number {
  const seq = [...prompt];
  r.token_ids.forEach((t, i) => {
    const logits = lastLogits(model, seq);
    if (temperature === 0) {
      const best = argmax(logits);
      assert.ok(
        t === best || logits[t]! >= logits[best]! - 1e-4,
        `${r.request_id} token ${i}: got ${t} (logit ${logits[t]}), argmax ${best} (${
          logits[best]
        })`,
      );
    }
    const scaled = logits.map((x) => x / (temperature === 0 ? 1 : temperature));
    const want = logSoftmaxAt(scaled, t);
    assert.ok(
      Math.abs(r.logprobs[i]! - want) < 1e-4,
      `${r.request_id} token ${i}: log-prob ${r.logprobs[i]} vs reference ${want}`,
    );
    seq.push(t);
  });
  return r.token_ids.length;
}

Deno.test("engine: greedy generation equals argmax recomputation at every step (6 concurrent requests, prompts of 1..13 tokens, admitted at different steps)", async () => {
  using k = Kernels.open({ threads: 2 });
  using model = randomModel(k, smallConfig(), "greedy");
  const steps: StepInfo[] = [];
  const engine = new GenerationEngine(model, {
    maxRunningRequests: 4,
    maxModelLen: 48,
    onStep: (s) => steps.push(s),
  });
  const prompts = randomPrompts(new Rng("greedy prompts"), 64, [1, 5, 13, 3, 8, 2]);
  const maxNew = [12, 7, 20, 15, 9, 18];
  const req = (i: number): GenerationRequest => ({
    request_id: `g${i}`,
    prompt_token_ids: prompts[i]!,
    max_new_tokens: maxNew[i]!,
    temperature: 0,
  });
  const pending = [0, 1, 2].map((i) => engine.generate(req(i)));
  await untilSteps(engine, 3);
  pending.push(engine.generate(req(3)));
  await untilSteps(engine, 5);
  pending.push(engine.generate(req(4)), engine.generate(req(5)));
  const results = await Promise.all(pending);
  await engine.close();

  let checked = 0;
  results.forEach((r, i) => {
    assert.equal(r.request_id, `g${i}`);
    assert.equal(r.finish_reason, "length");
    assert.equal(r.completion_tokens, maxNew[i]);
    assert.equal(r.prompt_tokens, prompts[i]!.length);
    checked += checkAgainstRecomputation(model, prompts[i]!, r, 0);
  });
  assert.equal(checked, maxNew.reduce((a, b) => a + b, 0));
  // the schedule really mixed things: a first step prefilling three prompts
  // together, later steps decoding and prefilling in the same call
  assert.equal(steps[0]!.admitted.length, 3);
  assert.equal(steps[0]!.tokens, 1 + 5 + 13);
  assert.ok(steps.some((s) => s.admitted.length > 0 && s.decoded > 0));
  assert.ok(steps.some((s) => s.decoded === 4));
});

Deno.test("engine: a seeded request samples the same tokens alone or among others admitted at other times; log-probs match the reference", async () => {
  using k = Kernels.open({ threads: 2 });
  using model = randomModel(k, smallConfig(), "seeded");
  const rng = new Rng("seeded prompts");
  const [prompt, ...others] = randomPrompts(rng, 64, [6, 3, 11, 1, 7, 4]);
  const target: GenerationRequest = {
    request_id: "target",
    prompt_token_ids: prompt!,
    max_new_tokens: 24,
    temperature: 0.8,
    top_k: 20,
    top_p: 0.95,
    seed: 1234,
  };
  const other = (i: number): GenerationRequest => ({
    request_id: `o${i}`,
    prompt_token_ids: others[i]!,
    max_new_tokens: 5 + 4 * i,
    temperature: 1,
    seed: 100 + i,
  });

  let alone: GenerationResult;
  {
    await using engine = new GenerationEngine(model, { maxRunningRequests: 1, maxModelLen: 64 });
    alone = await engine.generate(target);
  }
  checkAgainstRecomputation(model, prompt!, alone, 0.8);
  // the n-th token is the sampler's draw with counter n of the request's seed
  alone.token_ids.forEach((t, i) => {
    const seq = [...prompt!, ...alone.token_ids.slice(0, i)];
    const logits = model.forwardLogits(
      Int32Array.from(seq),
      Int32Array.from(seq, (_, j) => j),
      new Int32Array([0, seq.length]),
      new Int32Array([seq.length - 1]),
    );
    const row = { temperature: 0.8, topK: 20, topP: 0.95, seed: 1234, counter: i };
    assert.equal(sample(k, logits, [row]).tokens[0], t, `token ${i}`);
  });

  // among others: two before it, two admitted while it runs, one after
  for (const maxRunning of [3, 2]) {
    await using engine = new GenerationEngine(model, {
      maxRunningRequests: maxRunning,
      maxModelLen: 64,
    });
    const pending = [engine.generate(other(0)), engine.generate(other(1))];
    await untilSteps(engine, 2);
    const together = engine.generate(target);
    await untilSteps(engine, 4);
    pending.push(engine.generate(other(2)), engine.generate(other(3)));
    await untilSteps(engine, 9);
    pending.push(engine.generate(other(4)));
    const r = await together;
    await Promise.all(pending);
    assert.deepEqual(r.token_ids, alone.token_ids, `maxRunningRequests ${maxRunning}`);
    r.logprobs.forEach((lp, i) => assert.ok(Math.abs(lp - alone.logprobs[i]!) < 1e-4));
  }

  // the stream is the seed's: the same request twice in one batch agrees, another seed differs
  {
    await using engine = new GenerationEngine(model, { maxRunningRequests: 4, maxModelLen: 64 });
    const [a, b, c] = await Promise.all([
      engine.generate({ ...target, request_id: "a" }),
      engine.generate({ ...target, request_id: "b" }),
      engine.generate({ ...target, request_id: "c", seed: 1235 }),
    ]);
    assert.deepEqual(a.token_ids, alone.token_ids);
    assert.deepEqual(b.token_ids, alone.token_ids);
    assert.notDeepEqual(c.token_ids, alone.token_ids);
  }
});

Deno.test("engine: sampling honours top_k (every token among the k most likely) and requests without a seed are reproducible per engine seed", async () => {
  using k = Kernels.open({ threads: 2 });
  using model = randomModel(k, smallConfig(), "topk");
  const prompt = [3, 14, 15, 9, 2];
  const run = async (seed: number) => {
    await using engine = new GenerationEngine(model, {
      maxRunningRequests: 2,
      maxModelLen: 64,
      seed,
    });
    return await Promise.all([
      engine.generate({ prompt_token_ids: prompt, max_new_tokens: 30, temperature: 1.5, top_k: 3 }),
      engine.generate({ prompt_token_ids: prompt, max_new_tokens: 30, temperature: 1.5 }),
    ]);
  };
  const [first, second] = [await run(5), await run(5)];
  assert.deepEqual(first.map((r) => r.token_ids), second.map((r) => r.token_ids));
  assert.notDeepEqual(first[0]!.token_ids, (await run(6))[0]!.token_ids);
  const seq = [...prompt];
  for (const t of first[0]!.token_ids) {
    const logits = lastLogits(model, seq);
    const rank = Array.from(logits).filter((x) => x > logits[t]!).length;
    assert.ok(rank < 3, `token ${t} has rank ${rank}, outside the top 3`);
    seq.push(t);
  }
});

Deno.test("engine: the static-batching baseline gives the continuous engine's tokens, admitting a batch only when the previous one is done", async () => {
  using k = Kernels.open({ threads: 2 });
  using model = randomModel(k, smallConfig(), "static");
  const rng = new Rng("static prompts");
  const requests: GenerationRequest[] = randomPrompts(rng, 64, [4, 9, 2, 6, 5, 3, 7]).map((
    p,
    i,
  ) => ({ prompt_token_ids: p, max_new_tokens: 2 + ((5 * i) % 9), temperature: 0.9, seed: i }));
  const opts = { maxRunningRequests: 3, maxModelLen: 32 };
  const statics = await generateStatic(model, requests, opts);
  const steps: StepInfo[] = [];
  let continuous: GenerationResult[];
  {
    await using engine = new GenerationEngine(model, { ...opts, onStep: (s) => steps.push(s) });
    continuous = await Promise.all(requests.map((r) => engine.generate(r)));
  }
  assert.deepEqual(statics.map((r) => r.token_ids), continuous.map((r) => r.token_ids));

  const staticSteps: StepInfo[] = [];
  {
    await using engine = new GenerationEngine(model, {
      ...opts,
      batching: "static",
      onStep: (s) => staticSteps.push(s),
    });
    await Promise.all(requests.map((r) => engine.generate(r)));
  }
  staticSteps.forEach((s, i) => {
    if (s.admitted.length > 0) {
      assert.equal(s.decoded, 0, `static step ${i} admitted while sequences ran`);
    }
  });
  const batches = staticSteps.filter((s) => s.admitted.length > 0).map((s) => s.admitted.length);
  assert.deepEqual(batches, [3, 3, 1]);
  assert.ok(staticSteps.length > steps.length, `${staticSteps.length} vs ${steps.length}`);
});
