import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { thinkPolicy, towardSafeActions } from "../../examples/diagnostics/think_policy.ts";
import { buildThinkBaseModel } from "../../lib/model/make_think_base_model.ts";

Deno.test("think_policy: toward-safe moves bring the player closer to the goal, never into a hole", () => {
  // goal down-right; Right is ice, Down is a hole
  deepStrictEqual(towardSafeActions("P___\nO__G\n____\n____"), [false, false, true, false]);
  // goal straight up through a hole: no toward-safe move
  deepStrictEqual(towardSafeActions("_G__\n_O__\n_P__\n____"), [false, false, false, false]);
  // next to the goal: stepping onto it counts
  deepStrictEqual(towardSafeActions("____\n_GP_\n____\n____"), [true, false, false, false]);
  deepStrictEqual(towardSafeActions("X___\n___G"), [false, false, false, false]);
});

Deno.test("think_policy: reports shares that sum to one and probabilities in range", async () => {
  const root = await Deno.makeTempDir({ prefix: "agentrl_think_policy_" });
  try {
    await buildThinkBaseModel(`${root}/model`, {
      steps: 2,
      batch: 4,
      warmupSteps: 1,
      evalBoards: 0,
    });
    const r = await thinkPolicy(`${root}/model`, { boards: 6 });
    equal(r.boards, 6);
    ok(Math.abs(r.actionShares.reduce((a, b) => a + b, 0) - 1) < 1e-6, `${r.actionShares}`);
    for (const x of [r.thinkExact, r.towardSafe, r.randomTowardSafe]) ok(x >= 0 && x <= 1, `${x}`);
    ok(r.entropy >= 0 && r.entropy <= Math.log(4) + 1e-6);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
