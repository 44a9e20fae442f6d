import assert from "node:assert/strict";
import { createEnv } from "../../envs/registry.ts";

const dir = new URL("../../examples/probe_envs/", import.meta.url);

Deno.test("probe env fixed_action: Right earns 1, anything else 0, in one step", async () => {
  const env = await createEnv(new URL("fixed_action.ts", dir).href, {});
  for (
    const [action, reward] of [["<answer>Right</answer>", 1], ["<answer>Left</answer>", 0]] as const
  ) {
    await env.reset(3);
    const r = await env.step(action);
    assert.equal(r.reward, reward);
    assert.equal(r.terminated, true);
  }
});

Deno.test("probe env toward_goal: at most two moves bring P closer; most states have one", async () => {
  const env = await createEnv(new URL("toward_goal.ts", dir).href, {});
  let withGoodMove = 0;
  for (let seed = 0; seed < 20; seed++) {
    let rewarded = 0;
    for (const a of ["Left", "Down", "Right", "Up"]) {
      await env.reset(seed);
      rewarded += (await env.step(`<answer>${a}</answer>`)).reward;
    }
    assert.ok(rewarded <= 2, `seed ${seed}: ${rewarded} rewarded moves`);
    if (rewarded > 0) withGoodMove++;
    await env.reset(seed);
    assert.equal((await env.step("no answer")).reward, 0);
  }
  assert.ok(withGoodMove >= 15, `${withGoodMove} of 20 states have a rewarded move`);
});
