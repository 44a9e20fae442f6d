// What an environment hands back is checked field by field: a custom env's mistake becomes an
// error naming the call and the field (a lost trajectory in training), not a NaN in the metrics.
import assert from "node:assert/strict";
import {
  checkResetResult,
  checkRgbFrame,
  checkStepResult,
  EnvResultError,
} from "../../envs/check_results.ts";
import { createEnv } from "../../envs/registry.ts";

const metrics = {
  action_is_valid: true,
  action_is_effective: false,
  success: false,
  format_penalty: 0,
};
const good = {
  observation: "x",
  reward: 1,
  terminated: false,
  truncated: false,
  info: { metrics },
};

Deno.test("checkStepResult names the field and what was expected", () => {
  assert.equal(checkStepResult(good), good);
  assert.equal(
    checkStepResult({ ...good, info: { metrics: { ...metrics, success: 1 } } }).reward,
    1,
  );
  const cases: [unknown, RegExp][] = [
    [undefined, /step returned a result of undefined: expected \{ observation/],
    [5, /a result of 5/],
    [{ ...good, reward: NaN }, /step returned reward NaN: expected a finite number/],
    [{ ...good, reward: "1" }, /reward "1": expected a finite number/],
    [{ ...good, observation: {} }, /observation an object: expected a string/],
    [{ ...good, terminated: "false" }, /terminated "false": expected a boolean/],
    [{ ...good, info: undefined }, /info undefined: expected an object holding metrics/],
    [{ ...good, info: {} }, /info\.metrics undefined/],
    [{ ...good, info: { metrics: { ...metrics, success: 7 } } }, /success 7: expected a boolean/],
    [{ ...good, info: { metrics: { ...metrics, format_penalty: NaN } } }, /format_penalty NaN/],
    [{ ...good, info: { metrics: { ...metrics, extra: Infinity } } }, /extra Infinity/],
  ];
  for (const [value, message] of cases) {
    assert.throws(() => checkStepResult(value), (e: Error) => {
      assert.ok(e instanceof EnvResultError, String(e));
      assert.match(e.message, message);
      return true;
    });
  }
});

Deno.test("checkResetResult and checkRgbFrame", () => {
  assert.equal(checkResetResult({ observation: "o", info: {} }).observation, "o");
  assert.throws(() => checkResetResult(undefined), /reset returned a result of undefined/);
  assert.throws(() => checkResetResult({ observation: 3 }), /reset returned observation 3/);
  const frame = { width: 2, height: 1, data: new Uint8Array(6) };
  assert.equal(checkRgbFrame(frame), frame);
  assert.throws(
    () => checkRgbFrame({ ...frame, data: new Uint8Array(5) }),
    /frame data of 5 bytes: expected a Uint8Array of 2x1x3 = 6 bytes/,
  );
  assert.throws(() => checkRgbFrame({ ...frame, data: [0, 0, 0, 0, 0, 0] }), /an array/);
  assert.throws(() => checkRgbFrame({ ...frame, width: 0 }), /frame width 0/);
});

Deno.test("the built-in envs' results pass the checks", async () => {
  for (const type of ["frozen_lake", "sokoban", "countdown"]) {
    const env = await createEnv(type, {});
    checkResetResult(await env.reset(3));
    checkRgbFrame(env.render("rgb"));
    for (const action of ["<answer>Up</answer>", "junk", "<answer>1+2</answer>"]) {
      const r = checkStepResult(await env.step(action));
      if (r.terminated || r.truncated) break;
    }
    await env.close();
  }
});
