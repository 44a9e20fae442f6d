/**
 * The environment registry: built-in types, user registrations, environments
 * loaded by module path, and the errors for unknown types, unknown or bad
 * `env_config` keys; ROLL's extra keys and the shipped configs' entries.
 */
import { deepStrictEqual, equal, match, ok, rejects, throws } from "node:assert/strict";
import { loadConfig } from "../../lib/config/load_config.ts";
import { EnvConfigError } from "../../envs/errors.ts";
import { FrozenLakeConfig, FrozenLakeEnv } from "../../envs/frozen_lake/mod.ts";
import {
  createEnv,
  isEnvModulePath,
  listEnvTypes,
  parseEnvConfig,
  registerEnv,
  resolveEnvFactory,
  unregisterEnv,
} from "../../envs/registry.ts";
import { writeTree } from "../_helpers.ts";

const FIXTURE = new URL("../fixtures/envs/counter_env.ts", import.meta.url);

async function envError(fn: () => unknown): Promise<EnvConfigError> {
  try {
    await fn();
  } catch (e) {
    if (e instanceof EnvConfigError) return e;
    throw e;
  }
  throw new Error("expected an EnvConfigError, but nothing was thrown");
}

Deno.test("the built-in types are registered", () => {
  const types = listEnvTypes().map((t) => t.type);
  for (const t of ["countdown", "frozen_lake", "sokoban", "webshop"]) ok(types.includes(t), t);
  ok(listEnvTypes().every((t) => t.description.length > 0));
});

Deno.test("an unknown env_type lists the registered types and suggests the closest", async () => {
  const e = await envError(() => createEnv("frozenlake", {}));
  match(e.message, /Unknown env_type 'frozenlake'/);
  match(e.message, /countdown, frozen_lake, .*sokoban/);
  match(e.message, /module path/);
  equal(e.hint, "did you mean 'frozen_lake'?");
  equal((await envError(() => createEnv("", {}))).message.includes("expected a name"), true);
});

Deno.test("an unknown env_config key names the accepted keys and the closest", async () => {
  const e = await envError(() => createEnv("sokoban", { dim_rooms: [6, 6] }));
  match(e.message, /Unknown env_config key 'dim_rooms' for env_type 'sokoban'/);
  match(e.message, /accepted keys are action_lookup, action_pattern, dim_room, /);
  equal(e.hint, "did you mean 'dim_room'?");
});

Deno.test("a bad env_config value names the key, the problem and what was found", async () => {
  const e = await envError(() => createEnv("frozen_lake", { size: "big", p: 2 }));
  match(e.message, /env_config\.size: .*expected number.*\(found the string "big"\)/);
  match(e.message, /env_config\.p: .*<=1.*\(found number 2\)/);
  const notObject = await envError(() => createEnv("frozen_lake", [1, 2] as never));
  match(notObject.message, /is a list \[1,2\]: expected a mapping/);
  const lookup = await envError(() =>
    createEnv("frozen_lake", { action_lookup: { 0: "Up", 1: "up", 2: "a", 3: "b" } })
  );
  match(lookup.message, /action_lookup names 'up' twice/);
  const pattern = await envError(() => createEnv("frozen_lake", { action_pattern: "<answer>.*" }));
  match(pattern.message, /0 capturing groups/);
});

Deno.test("ROLL's extra env_config keys are accepted", async () => {
  const lake = await createEnv("frozen_lake", {
    render_mode: "text",
    size: 4,
    p: 0.8,
    is_slippery: false,
    map_seed: 42,
    seed: 3,
    max_steps: 10,
    format_penalty: -0.01,
    action_pattern: "<answer>(.*?)</answer>",
    special_token_list: ["<|im_start|>", "<|im_end|>"],
    grid_lookup: { 0: "P", 1: "_", 2: "O", 3: "G", 4: "X", 5: "√" },
    grid_vocab: { P: "player", _: "empty", O: "hole", G: "goal", X: "player in hole", "√": "win" },
    action_lookup: { 0: "Left", 1: "Down", 2: "Right", 3: "Up" },
    env_instruction: "Reach the goal.",
  });
  ok(lake.instruction.startsWith("Reach the goal."));
  const box = await createEnv("sokoban", {
    render_mode: "text",
    dim_room: [6, 6],
    num_boxes: 1,
    search_depth: 30,
    num_gen_steps: 12,
    max_steps: 10,
    format_penalty: -0.15,
    action_lookup: { 1: "Up", 2: "Down", 3: "Left", 4: "Right" },
    grid_lookup: { 0: "W", 1: ".", 2: "G", 3: "C", 4: "B", 5: "A", 6: "@" },
    seed: 1,
  });
  match((await box.reset(0)).observation, /^W{6}\n/);
  const rgb = await envError(() => createEnv("sokoban", { render_mode: "rgb_array" }));
  match(rgb.message, /render_mode must be 'text'/);
});

Deno.test("registerEnv adds a type; duplicates and bad names are errors; replace is explicit", async () => {
  registerEnv("tiny_lake", {
    create: (c) => new FrozenLakeEnv(FrozenLakeConfig.parse({ ...c, size: 2, is_slippery: false })),
    description: "a 2x2 lake",
  });
  try {
    const env = await createEnv("tiny_lake", {});
    equal((await env.reset(0)).observation.split("\n").length, 2);
    throws(() => registerEnv("tiny_lake", { create: () => env }), /registered already/);
    registerEnv("tiny_lake", { create: () => env }, { replace: true });
    equal(await createEnv("tiny_lake", {}), env);
    throws(() => registerEnv("./x.ts", { create: () => env }), /not valid/);
    throws(() => registerEnv("x", {} as never), /create\(config\)/);
  } finally {
    equal(unregisterEnv("tiny_lake"), true);
  }
  equal(unregisterEnv("tiny_lake"), false);
});

Deno.test("a factory that returns something other than an Env is an error", async () => {
  registerEnv("broken", { create: () => ({ reset() {} }) as never });
  try {
    const e = await envError(() => createEnv("broken", {}));
    match(e.message, /lacks step, render, close/);
  } finally {
    unregisterEnv("broken");
  }
});

Deno.test("an Env without a string instruction is an error, not 'undefined' in the prompt", async () => {
  const methods = { reset() {}, step() {}, render() {}, close() {} };
  const cases = [
    [
      { ...methods, actionDescription: "a word" },
      /has no instruction: expected a string \(the task/,
    ],
    [
      { ...methods, instruction: 7, actionDescription: "a word" },
      /has instruction number 7: expected/,
    ],
    [
      { ...methods, instruction: "Guess.", actionDescription: 3 },
      /has actionDescription number 3: expected a string \(what a valid action looks like\) or none/,
    ],
  ] as const;
  for (const [fields, message] of cases) {
    let closed = 0; // (a refused env is closed: it may hold a server or a process)
    const env = { ...fields, close: () => void closed++ };
    registerEnv("no_instruction", { create: () => env as never }, { replace: true });
    try {
      const e = await envError(() => createEnv("no_instruction", {}));
      match(e.message, /The env of env_type 'no_instruction'/);
      match(e.message, message);
      equal(closed, 1, e.message);
    } finally {
      unregisterEnv("no_instruction");
    }
  }
  // an empty instruction is the env's choice, and actionDescription is optional (or null)
  registerEnv("empty_instruction", {
    create: () => ({ ...methods, instruction: "", actionDescription: null }) as never,
  });
  try {
    equal((await createEnv("empty_instruction", {})).instruction, "");
  } finally {
    unregisterEnv("empty_instruction");
  }
});

Deno.test("env_type as a module path: {create, configSchema} default export", async () => {
  ok(isEnvModulePath("./a.ts") && isEnvModulePath("../a.ts") && isEnvModulePath("/a.ts"));
  ok(isEnvModulePath("file:///a.ts") && isEnvModulePath("https://x/a.ts"));
  ok(!isEnvModulePath("sokoban") && !isEnvModulePath("a/b.ts"));
  const env = await createEnv(FIXTURE.href, { goal: 2 });
  equal((await env.reset(0)).observation, "count 0");
  equal((await env.step("<answer>inc</answer>")).terminated, false);
  equal((await env.step("<answer>inc</answer>")).terminated, true);
  // Relative to a base, and relative to the working directory by default.
  const viaBase = await createEnv("./counter_env.ts", {}, { base: new URL("./", FIXTURE) });
  equal((await viaBase.reset(1)).observation, "count 1");
  const cwdRelative = "./" + FIXTURE.pathname.slice(Deno.cwd().length + 1);
  if (FIXTURE.pathname.startsWith(Deno.cwd() + "/")) {
    equal((await (await createEnv(cwdRelative, {})).reset(0)).observation, "count 0");
  }
  const e = await envError(() => createEnv(FIXTURE.href, { goals: 2 }));
  match(e.message, /Unknown env_config key 'goals'/);
  match(e.message, /accepted keys are goal, penalty/);
  equal((await resolveEnvFactory(FIXTURE.href)).description, "count to a goal");
});

Deno.test("env_type as a module path: a bare factory function; missing exports are errors", async () => {
  const dir = await writeTree({
    "fn_env.ts": `import createCounter from "${FIXTURE.href}";\n` +
      "export default (config: Record<string, unknown>) => createCounter.create({ goal: 1, penalty: -2, ...config });\n",
    "no_default.ts": "export const x = 1;\n",
    "wrong_default.ts": "export default 42;\n",
  });
  try {
    const env = await createEnv(new URL("fn_env.ts", dir).href, { penalty: -5 });
    equal((await env.step("junk")).reward, -5); // no schema: the config is passed as written
    const none = await envError(() => createEnv(new URL("no_default.ts", dir).href, {}));
    match(none.message, /has no default export: expected a factory function/);
    const wrong = await envError(() => createEnv(new URL("wrong_default.ts", dir).href, {}));
    match(wrong.message, /default export that is number 42/);
    const missing = await envError(() => createEnv(new URL("missing.ts", dir).href, {}));
    match(missing.message, /Cannot import the env module/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a factory that throws is an error naming the module and where it threw", async () => {
  const dir = await writeTree({
    "throws.ts": 'export default () => {\n  throw new Error("ctor boom");\n};\n',
    "config_error.ts": `import { EnvConfigError } from "${
      new URL("../../envs/errors.ts", import.meta.url).href
    }";\nexport default () => { throw new EnvConfigError("size must be odd"); };\n`,
  });
  try {
    const thrown = await envError(() => createEnv(new URL("throws.ts", dir).href, {}));
    match(thrown.message, /The factory of env_type '.*throws\.ts' failed: ctor boom/);
    match(thrown.message, /\(at .*throws\.ts:2:/);
    const own = await envError(() => createEnv(new URL("config_error.ts", dir).href, {}));
    equal(own.message, "size must be odd"); // the factory's own config error, as it is
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("every environment the shipped configs define validates, resets and steps", async () => {
  const { variables } = await loadConfig({});
  const library = variables.custom_env as Record<
    string,
    { env_type: string; env_config: Record<string, unknown> }
  >;
  deepStrictEqual(Object.keys(library).sort(), [
    "FrozenLake",
    "FrozenLakeThink",
    "LargerSokoban",
    "SimpleSokoban",
    "SokobanDifferentGridVocab",
    "WebShop",
  ]);
  for (const [tag, entry] of Object.entries(library)) {
    const factory = await resolveEnvFactory(entry.env_type);
    parseEnvConfig(entry.env_type, factory, entry.env_config);
    const env = await createEnv(entry.env_type, entry.env_config);
    const { observation } = await env.reset(0);
    ok(observation.length > 0, tag);
    const step = await env.step(env.sampleAction!(() => 0.3));
    equal(step.info.metrics.action_is_valid, true, tag);
  }
  // The think variant parses reasoning and answer.
  const think = await createEnv("frozen_lake", library.FrozenLakeThink!.env_config);
  await think.reset(0);
  equal(
    (await think.step("<think>go</think><answer>Up</answer>")).info.metrics.action_is_valid,
    true,
  );
  equal((await think.step("<answer>Up</answer>")).info.metrics.action_is_valid, false);
});

Deno.test("parseEnvConfig fills defaults; cross-field checks are errors", async () => {
  const f = await resolveEnvFactory("countdown");
  const c = parseEnvConfig("countdown", f, null) as Record<string, unknown>;
  equal(c.num_numbers, 4);
  await rejects(() => createEnv("countdown", { min_number: 9, max_number: 3 }), /min_number 9/);
});
