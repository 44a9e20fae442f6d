import assert from "node:assert/strict";
import { RandomPolicy } from "../../lib/rollout/random_policy.ts";
import { IM_END, smallConfig, tokenizer, trainScheduler } from "./_setup.ts";

Deno.test("random policy (llm_proxy random): the env's random legal actions, seeded per turn, on the rollout's seeds", async () => {
  const config = await smallConfig();
  const play = async (runner: "main" | "worker") => {
    const c = structuredClone(config);
    c.train_env_manager.env_runner = runner;
    await using scheduler = trainScheduler(c, new RandomPolicy(tokenizer, IM_END));
    return (await scheduler.getBatch(8, 0)).samples;
  };
  const samples = await play("main");
  assert.equal(samples.length, 8);
  for (const s of samples) {
    assert.equal(s.metrics.action_is_valid, 1);
    for (const m of s.messages.filter((m) => m.role === "assistant")) {
      assert.match(m.content, /^<answer>(Left|Down|Right|Up)<\/answer>$/);
    }
  }
  // members of a group play the same map with different moves
  const moves = new Set(
    samples.filter((s) => s.groupId === 0).map((s) =>
      s.messages.at(-1)!.content + s.stepRewards.length
    ),
  );
  assert.ok(moves.size > 1);
  // the same draws whether the env runs in the main thread or in a worker
  const inWorker = await play("worker");
  assert.deepEqual(inWorker.map((s) => [...s.tokens]), samples.map((s) => [...s.tokens]));
});
