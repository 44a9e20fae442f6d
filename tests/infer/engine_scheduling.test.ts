// How the engine schedules: maxRunningRequests bounds the sequences in the
// KV cache, prompts admitted together are prefilled in one call, every decode
// step batches every running sequence, a finished sequence's slot goes to a
// waiting request in the very next step, the loop yields to the event loop
// between steps and sleeps when idle.
import assert from "node:assert/strict";
import { Kernels } from "../../ffi/mod.ts";
import { GenerationEngine, type StepInfo } from "../../lib/infer/mod.ts";
import { Rng } from "../kernels/_helpers.ts";
import { randomModel, randomPrompts, sleep, smallConfig } from "./_helpers.ts";

Deno.test("engine: maxRunningRequests is never exceeded, finished slots are reused in the next step, prefill and decode are batched", async () => {
  using k = Kernels.open({ threads: 2 });
  using model = randomModel(k, smallConfig(), "slots");
  const steps: StepInfo[] = [];
  const maxRunning = 3;
  const engine = new GenerationEngine(model, {
    maxRunningRequests: maxRunning,
    maxModelLen: 40,
    onStep: (s) => steps.push(s),
  });
  const rng = new Rng("slots");
  const lens = Array.from({ length: 11 }, () => rng.int(1, 10));
  const prompts = randomPrompts(rng, 64, lens);
  const maxNew = lens.map(() => rng.int(1, 12));
  const results = await Promise.all(prompts.map((p, i) =>
    engine.generate({
      request_id: `r${i}`,
      prompt_token_ids: p,
      max_new_tokens: maxNew[i]!,
      temperature: 1,
      seed: i,
    })
  ));
  await engine.close();
  results.forEach((r, i) => assert.equal(r.completion_tokens, maxNew[i]));

  // the first step prefills three prompts in one call
  assert.deepEqual(steps[0]!.admitted.map((a) => a.request_id), ["r0", "r1", "r2"]);
  assert.equal(steps[0]!.tokens, lens[0]! + lens[1]! + lens[2]!);
  assert.equal(steps[0]!.decoded, 0);

  const occupied = new Map<number, string>();
  const uses = new Map<number, number>();
  steps.forEach((s, i) => {
    const prev = i > 0 ? steps[i - 1]! : null;
    // every running sequence decodes in every step; admitted prompts join the same call
    assert.equal(s.decoded, prev?.running ?? 0, `step ${s.step}`);
    const prompt = s.admitted.reduce((a, x) => a + x.prompt_tokens, 0);
    assert.equal(s.tokens, s.decoded + prompt, `step ${s.step}`);
    for (const a of s.admitted) {
      assert.ok(a.slot >= 0 && a.slot < maxRunning, `slot ${a.slot}`);
      assert.ok(!occupied.has(a.slot), `step ${s.step}: slot ${a.slot} is still held`);
      occupied.set(a.slot, a.request_id);
      uses.set(a.slot, (uses.get(a.slot) ?? 0) + 1);
    }
    assert.ok(occupied.size <= maxRunning);
    for (const f of s.finished) {
      assert.equal(occupied.get(f.slot), f.request_id);
      occupied.delete(f.slot);
    }
    assert.equal(s.running, occupied.size);
    assert.ok(s.running <= maxRunning, `step ${s.step}: ${s.running} running`);
    // continuous batching: free slots are filled by the next step
    if (prev !== null) {
      const free = maxRunning - prev.running;
      assert.equal(s.admitted.length, Math.min(free, prev.waiting), `step ${s.step}`);
    }
  });
  assert.equal(occupied.size, 0);
  assert.ok([...uses.values()].some((n) => n >= 3), `slot uses ${[...uses]}`);
  const stats = engine.stats;
  assert.equal(stats.maxRunning, maxRunning);
  assert.equal(stats.finished.length, 11);
  assert.equal(stats.steps, steps.length);
  assert.equal(stats.prefillTokens, lens.reduce((a, b) => a + b, 0));
  assert.equal(stats.sampledTokens, maxNew.reduce((a, b) => a + b, 0));
});

Deno.test("engine: maxBatchedTokens bounds the prompt tokens admitted in one step (one prompt always fits)", async () => {
  using k = Kernels.open({ threads: 2 });
  using model = randomModel(k, smallConfig(), "budget");
  const steps: StepInfo[] = [];
  await using engine = new GenerationEngine(model, {
    maxRunningRequests: 8,
    maxModelLen: 40,
    maxBatchedTokens: 12,
    onStep: (s) => steps.push(s),
  });
  const prompts = randomPrompts(new Rng("budget"), 64, [5, 6, 20, 3, 2]);
  await Promise.all(
    prompts.map((p) => engine.generate({ prompt_token_ids: p, max_new_tokens: 4 })),
  );
  const admittedPerStep = steps.map((s) => s.admitted.map((a) => a.prompt_tokens));
  assert.deepEqual(admittedPerStep.filter((a) => a.length > 0), [[5, 6], [20], [3, 2]]);
});

Deno.test("engine: the loop yields to the event loop between steps and sleeps when idle", async () => {
  using k = Kernels.open({ threads: 2 });
  using model = randomModel(k, smallConfig(), "yield");
  let ticks = 0;
  const ticksAtStep: number[] = [];
  await using engine = new GenerationEngine(model, {
    maxRunningRequests: 2,
    maxModelLen: 256,
    onStep: () => ticksAtStep.push(ticks),
  });
  // an "environment" on the same thread: timer-driven work
  let done = false;
  const env = (async () => {
    while (!done) {
      await sleep(0);
      ticks++;
    }
  })();
  const r = await engine.generate({ prompt_token_ids: [1, 2, 3], max_new_tokens: 250 });
  done = true;
  await env;
  assert.equal(r.completion_tokens, 250);
  assert.ok(ticksAtStep.at(-1)! > ticksAtStep[0]!, `env ticks during generation: ${ticks}`);

  // idle: no steps while nothing is queued, and a new request wakes the loop
  const before = engine.stats.steps;
  await sleep(30);
  assert.equal(engine.stats.steps, before);
  assert.equal(engine.numRunning + engine.numWaiting, 0);
  const again = await engine.generate({ prompt_token_ids: [4], max_new_tokens: 3 });
  assert.equal(again.completion_tokens, 3);
  assert.equal(engine.stats.steps, before + 3);
});
