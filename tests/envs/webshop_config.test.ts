// The WebShop env_config: defaults, the keys ROLL passes, and clear errors for bad values.
import { deepStrictEqual, equal, ok, throws } from "node:assert/strict";
import { EnvConfigError } from "../../envs/errors.ts";
import { createEnv } from "../../envs/registry.ts";
import {
  createWebShopEnv,
  parseWebShopConfig,
  WebShopConfigError,
} from "../../envs/webshop/mod.ts";

Deno.test("defaults, and the keys ROLL's WebShop configs pass are accepted", () => {
  const c = parseWebShopConfig({});
  equal(c.observation_mode, "text");
  equal(c.max_steps, 10);
  equal(c.format_penalty, 0);
  equal(c.action_pattern, "<answer>(.*?)</answer>");
  equal(c.split, "train");
  equal(c.limit_goals, -1);
  equal(c.human_goals, false);
  equal(c.step_delay_ms, 0);
  equal(c.step_delay, null);
  deepStrictEqual(parseWebShopConfig(null), c);
  const roll = parseWebShopConfig({
    observation_mode: "text",
    max_steps: 10,
    format_penalty: -0.05,
    action_pattern: "<answer>(.*?)</answer>",
    env_instruction: "Shop well.",
    special_token_list: ["<|im_start|>", "<|im_end|>"],
    server: null,
    filter_goals: null,
    limit_goals: -1,
    num_products: null,
    human_goals: false,
    show_attrs: false,
  });
  equal(roll.format_penalty, -0.05);
  const env = createWebShopEnv({ env_instruction: "Shop well.", num_products: 300, split: "all" });
  equal(env.instruction, "Shop well.");
  ok(env.actionDescription.includes("<answer>click[buy now]</answer>"));
});

Deno.test("bad values are WebShopConfigErrors naming the key, the value and what is expected", () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ observation_mode: "html" }, /observation_mode: "html" is not supported: only "text"/],
    [
      { human_goals: true },
      /human_goals: true is not supported: human goals need WebShop's full data/,
    ],
    [{ split: "dev" }, /split: .*"train"\|"eval"\|"test"\|"all" \(found "dev" \(string\)\)/],
    [{ max_steps: 0 }, /max_steps: .*>0 \(found 0 \(number\)\)/],
    [{ max_steps: 2.5 }, /max_steps: .*int/],
    [{ limit_goals: -2 }, /limit_goals: .*>=-1/],
    [
      { maxsteps: 3 },
      /unknown key\(s\) 'maxsteps'; expected keys of the WebShop env_config: .*max_steps/,
    ],
    [
      { action_pattern: "answer" },
      /action_pattern: action_pattern "answer" has 0 capturing groups/,
    ],
    [
      { action_pattern: "((" },
      /action_pattern: action_pattern "\(\(" is not a valid regular expression/,
    ],
    [{ server: { host: "x" } }, /server: expected null: a WebShop server object cannot be given/],
    [{ filter_goals: "lambda i, g: True" }, /filter_goals: expected null: a goal filter function/],
    [
      { step_delay: { distribution: "pareto", scale_ms: 5 } },
      /step_delay\.alpha: .*expected number/,
    ],
    [
      { step_delay: { distribution: "zipf" } },
      /step_delay\.distribution: Invalid discriminator value/,
    ],
    [{ step_delay_ms: -1 }, /step_delay_ms: .*>=0/],
    [
      { step_delay_ms: 5, step_delay: { distribution: "fixed", ms: 1 } },
      /step_delay: step_delay_ms and step_delay both set a delay/,
    ],
    [{ file_path: "a.json", products_file: "b.json" }, /file_path: .*give only one/],
    [
      { products_file: "a.json", documents_file: "b.jsonl" },
      /documents_file: products_file and documents_file/,
    ],
    [
      { instructions_file: "ins.json" },
      /instructions_file: instructions_file was given without products/,
    ],
    [{ num_products: 0 }, /num_products: .*>0/],
  ];
  for (const [config, pattern] of cases) {
    throws(() => createWebShopEnv(config), (e: unknown) => {
      ok(e instanceof WebShopConfigError, `${e}`);
      ok(e instanceof EnvConfigError); // the CLI prints it without a stack trace
      ok(pattern.test(e.message), `${e.message}\n  !~ ${pattern}`);
      ok(e.issues.length >= 1);
      return true;
    });
  }
  // Several problems are reported together.
  throws(() => parseWebShopConfig({ max_steps: 0, split: "dev" }), (e: unknown) => {
    equal((e as WebShopConfigError).issues.length, 2);
    return true;
  });
});

Deno.test("runtime problems: an empty split and a bad reset seed", () => {
  throws(() => createWebShopEnv({ num_products: 100, split: "train" }), (e: unknown) => {
    ok(e instanceof EnvConfigError);
    ok(
      /WebShop split 'train' has no goals: the catalog synthetic\(seed=0, n=100\) has \d+ goals/
        .test(e.message),
      e.message,
    );
    return true;
  });
  const env = createWebShopEnv({ num_products: 300, split: "all" });
  throws(() => env.reset(Number.NaN), /seed NaN is not an integer/);
});

Deno.test("the registry builds webshop from env_type and validates with WebShopConfig", async () => {
  const env = await createEnv("webshop", { num_products: 300, split: "test", max_steps: 4 });
  const { observation } = await env.reset(1);
  ok(observation.startsWith("WebShop [SEP] Instruction: [SEP] Find me "));
  equal(observation.split("\n")[1], "Available actions: search[<content>]");
  ok(env.oracleAction!()!.startsWith("<answer>search[Find me "));
  await createEnv("webshop", { observation_mode: "html" }).then(
    () => {
      throw new Error("expected an error");
    },
    (e: unknown) => {
      ok(e instanceof EnvConfigError);
      ok(/observation_mode/.test((e as Error).message), (e as Error).message);
    },
  );
});
