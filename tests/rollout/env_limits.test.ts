// max_env_step_concurrent and use_thread_lock: how many envs reset or step at once.
import assert from "node:assert/strict";
import type { CustomEnv } from "../../lib/config/schema/env_manager.ts";
import { registerEnv } from "../../envs/registry.ts";
import { type EnvHandle, EnvTimeoutError, MainThreadEnvHost } from "../../lib/rollout/env_host.ts";
import type { StepResult } from "../../envs/types.ts";
import { EnvLimits, Semaphore, SHARED_ENV_LIMITS } from "../../lib/rollout/env_limits.ts";

const STEP: StepResult = {
  observation: "o",
  reward: 0,
  terminated: false,
  truncated: false,
  info: {
    metrics: {
      action_is_valid: true,
      action_is_effective: true,
      success: false,
      format_penalty: 0,
    },
  },
};

/** Env handles that count how many of them are inside reset, step or build at once. */
function counter() {
  let now = 0, most = 0;
  const inside = async <T>(value: T): Promise<T> => {
    now++;
    most = Math.max(most, now);
    await new Promise((r) => setTimeout(r, 2));
    now--;
    return value;
  };
  const handle = (): EnvHandle => ({
    instruction: "",
    reset: () => inside({ observation: "o", info: {} }),
    step: () => inside(STEP),
    renderRgb: () => Promise.reject(new Error("no frames")),
    sampleAction: () => Promise.resolve(null),
    close: () => Promise.resolve(),
  });
  return { handle, inside, most: () => most };
}

const entry = (over: Partial<CustomEnv>) =>
  ({ max_env_step_concurrent: 0, use_thread_lock: false, ...over }) as CustomEnv;

async function play(
  limits: EnvLimits,
  tag: string,
  e: CustomEnv,
  c: ReturnType<typeof counter>,
  n: number,
) {
  await Promise.all(Array.from({ length: n }, async () => {
    const env = limits.wrap(tag, e, c.handle());
    await env.reset(1);
    for (let i = 0; i < 3; i++) await env.step("a");
  }));
}

Deno.test("max_env_step_concurrent caps a tag's envs in reset or step at once; 0 leaves them free", async () => {
  for (const [cap, want] of [[0, 8], [1, 1], [3, 3]] as const) {
    const c = counter();
    await play(new EnvLimits(), "WebShop", entry({ max_env_step_concurrent: cap }), c, 8);
    assert.equal(c.most(), want, `cap ${cap}`);
  }
  // the cap is per tag: two tags of cap 2 step four at once
  const c = counter();
  const limits = new EnvLimits();
  const e = entry({ max_env_step_concurrent: 2 });
  await Promise.all([play(limits, "A", e, c, 4), play(limits, "B", e, c, 4)]);
  assert.equal(c.most(), 4);
  // two schedulers of one process (train and validation) count against the same cap, and
  // building an env counts too
  const shared = counter();
  await Promise.all([
    play(limits, "A", e, shared, 4),
    play(limits, "A", e, shared, 4),
    ...Array.from({ length: 4 }, () => limits.build("A", e, () => shared.inside(null))),
  ]);
  assert.equal(shared.most(), 2);
  // the process's limits, which every scheduler uses unless given others, cap the same way
  const processWide = counter();
  await Promise.all([
    play(SHARED_ENV_LIMITS, "Shared", e, processWide, 4),
    play(SHARED_ENV_LIMITS, "Shared", e, processWide, 4),
  ]);
  assert.equal(processWide.most(), 2);
});

Deno.test("use_thread_lock: one env at a time of every locked tag is built, reset or stepped", async () => {
  const c = counter();
  const limits = new EnvLimits();
  const locked = entry({ use_thread_lock: true });
  await Promise.all([
    play(limits, "A", locked, c, 4),
    play(limits, "B", locked, c, 4),
    ...Array.from({ length: 4 }, () => limits.build("A", locked, () => c.inside(null))),
  ]);
  assert.equal(c.most(), 1);
  // an unlocked tag beside them is not held
  const free = counter();
  await play(limits, "C", entry({}), free, 4);
  assert.equal(free.most(), 4);
});

Deno.test("Semaphore: waiters run in order, a failure frees its place, a bad limit is refused", async () => {
  const s = new Semaphore(1);
  const order: number[] = [];
  const failed = s.run(() => Promise.reject(new Error("boom")));
  const runs = [1, 2, 3].map((i) => s.run(() => Promise.resolve(void order.push(i))));
  await assert.rejects(failed, /boom/);
  await Promise.all(runs);
  assert.deepEqual(order, [1, 2, 3]);
  assert.throws(() => new Semaphore(0), /Semaphore limit 0 is not valid/);
});

Deno.test("a main-thread env whose creation never ends times out, so it cannot hold the lock", async () => {
  registerEnv("never_built", { create: () => new Promise<never>(() => {}) }, { replace: true });
  const host = new MainThreadEnvHost(1, 0.05);
  const limits = new EnvLimits();
  const locked = entry({ use_thread_lock: true });
  await assert.rejects(
    () => limits.build("N", locked, () => host.open(0, "never_built", null)),
    (e: Error) => e instanceof EnvTimeoutError && /creating env 0/.test(e.message),
  );
  // the lock is free again
  assert.equal(await limits.build("N", locked, () => Promise.resolve(7)), 7);
  await host.close();
});
