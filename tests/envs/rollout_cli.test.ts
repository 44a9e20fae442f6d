/**
 * `agentrl rollout` end to end: each case runs `deno run lib/cli/main.ts rollout
 * ...` as a subprocess from the repository root and checks its exit status,
 * transcript, JSON summary and rendered files.
 */
import { deepStrictEqual, doesNotMatch, equal, match, ok } from "node:assert/strict";
import { Kernels } from "../../ffi/mod.ts";
import { parseQwen2Config } from "../../lib/model/hf_config.ts";
import { writeTinyModel } from "../../lib/model/make_tiny_tokenizer.ts";
import { savePretrained } from "../../lib/model/pretrained.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";

const REPO_ROOT = new URL("../../", import.meta.url);

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `agentrl rollout ARGS` (with write permission unless `noWrite`). */
async function rollout(
  args: string[],
  options: { stdin?: string; noWrite?: boolean } = {},
): Promise<CliResult> {
  const perms = options.noWrite
    ? ["--allow-read", "--allow-env", "--allow-ffi"]
    : ["--allow-read", "--allow-env", "--allow-write", "--allow-ffi"];
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...perms, "lib/cli/main.ts", "rollout", ...args],
    cwd: REPO_ROOT,
    env: { NO_COLOR: "1" },
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.stdin));
    await writer.close();
  }
  const { code, stdout, stderr } = await child.output();
  const d = new TextDecoder();
  return { code, stdout: d.decode(stdout), stderr: d.decode(stderr) };
}

function show(r: CliResult): string {
  return `exit ${r.code}\n--- stdout\n${r.stdout.slice(-3000)}\n--- stderr\n${r.stderr}`;
}

function assertUsageError(r: CliResult, pattern: RegExp): void {
  equal(r.code, 2, show(r));
  match(r.stderr, pattern);
  doesNotMatch(r.stderr, /^\s+at .*(file|ext):\/\//m, "stack trace in stderr");
  doesNotMatch(r.stderr, /Uncaught/);
}

Deno.test("--json: 1000 random FrozenLake episodes give a summary on stdout only", async () => {
  const r = await rollout([
    "--env",
    "FrozenLake",
    "--policy",
    "random",
    "--episodes",
    "1000",
    "--seed",
    "0",
    "--json",
  ]);
  equal(r.code, 0, show(r));
  const s = JSON.parse(r.stdout);
  for (
    const key of ["episodes", "success_rate", "mean_reward", "mean_actions", "valid_action_rate"]
  ) {
    equal(typeof s[key], "number", key);
  }
  equal(s.episodes, 1000);
  ok(s.success_rate > 0.05 && s.success_rate < 0.6, `success rate ${s.success_rate}`);
  equal(s.mean_reward, s.success_rate); // reward 1 at the goal, 0 otherwise
  ok(s.mean_actions >= 1 && s.mean_actions <= 10);
  equal(s.valid_action_rate, 1);
  // Same seed, same numbers.
  const again = await rollout([
    "--env",
    "FrozenLake",
    "--episodes",
    "1000",
    "--seed",
    "0",
    "--json",
  ]);
  deepStrictEqual(JSON.parse(again.stdout), s);
});

Deno.test("the transcript shows the prompt messages, the response, reward and metrics", async () => {
  const r = await rollout(["--env", "FrozenLake", "--policy", "scripted", "--seed", "3"]);
  equal(r.code, 0, show(r));
  match(r.stdout, /=== episode 1\/1: FrozenLake \(frozen_lake\), seed 3 ===/);
  match(r.stdout, /\[system\]\nYou are a capable game player/);
  match(
    r.stdout,
    /\[user\]\nYou are solving the FrozenLake puzzle[^]*Your available actions are:\nLeft, Down, Right, Up\nTurn 1:\nState:\n/,
  );
  match(r.stdout, /Actions left: 10\. At most 24 tokens\./); // the default config's max_tokens_per_step
  match(r.stdout, /--- turn 2: prompt = the conversation so far, then ---\n\[user\]\nTurn 2:/);
  match(r.stdout, /Actions left: 9\./);
  match(r.stdout, /response \[assistant\] ---\n<answer>(Left|Down|Right|Up)<\/answer>/);
  match(r.stdout, /reward 1, terminated true, truncated false\nmetrics: action_is_valid=true/);
  match(r.stdout, /1 episode\(s\): success rate 1, mean reward 1/);
  doesNotMatch(r.stdout, /\{(turn_idx|observation|actions_left|max_response_length)\}/);
});

Deno.test("scripted policy solves the shipped Sokoban presets", async () => {
  for (const tag of ["SimpleSokoban", "LargerSokoban", "SokobanDifferentGridVocab"]) {
    const r = await rollout([
      "--env",
      tag,
      "--policy",
      "scripted",
      "--episodes",
      "20",
      "--env-config",
      "max_steps=100",
      "--json",
    ]);
    equal(r.code, 0, show(r));
    const s = JSON.parse(r.stdout);
    equal(s.success_rate, 1, `${tag}: ${r.stdout}`);
    ok(s.mean_reward > 9, tag);
  }
});

Deno.test("human policy reads actions from piped stdin; a bare word is wrapped", async () => {
  const r = await rollout([
    "--env",
    "FrozenLake",
    "--policy",
    "human",
    "--seed",
    "3",
    "--episodes",
    "2",
  ], {
    stdin: "<answer>Jump</answer>\nup\nLEFT\nLeft\n",
  });
  equal(r.code, 0, show(r));
  match(
    r.stdout,
    /response \[assistant\] ---\n<answer>Jump<\/answer>\n--- turn 1: result ---\nreward -0\.01, terminated false/,
  );
  match(
    r.stdout,
    /action_is_valid=false action_is_effective=false success=false format_penalty=-0\.01/,
  );
  match(r.stdout, /response \[assistant\] ---\n<answer>up<\/answer>/);
  match(r.stdout, /success true, return 0\.99, 4 actions/);
  // Input ran out during the second episode: the run stops after the first.
  match(r.stderr, /stdin closed: stopped after 1 complete episode/);
  match(r.stdout, /1 episode\(s\) \(stopped early\)/);
});

Deno.test("the env manager's format_penalty applies where the env charged none, as in training", async () => {
  const r = await rollout([
    "--env",
    "FrozenLake",
    "--policy",
    "human",
    "train_env_manager.format_penalty=-0.5",
    "custom_envs.FrozenLake.env_config.format_penalty=0",
    "max_actions_per_traj=2",
  ], { stdin: "xyz\nxyz\n" });
  equal(r.code, 0, show(r));
  match(
    r.stdout,
    /reward -0\.5, terminated false, truncated false\nmetrics: .*format_penalty=-0\.5/,
  );
  // the two penalties sum to -1, printed as such (not "-1." from -0.9999...)
  match(r.stdout, /return -1, 2 actions/);
  match(r.stdout, /mean reward -1,/);
});

function countGifFrames(gif: Uint8Array): number {
  let p = 13;
  if (gif[10]! & 0x80) p += 3 * (1 << ((gif[10]! & 7) + 1));
  let frames = 0;
  const skipSubBlocks = () => {
    for (let n = gif[p++]!; n > 0; n = gif[p++]!) p += n;
  };
  for (;;) {
    const b = gif[p++];
    if (b === 0x3b) return frames;
    if (b === 0x21) {
      p++;
      skipSubBlocks();
    } else if (b === 0x2c) {
      frames++;
      const flags = gif[p + 8]!;
      p += 9;
      if (flags & 0x80) p += 3 * (1 << ((flags & 7) + 1));
      p++; // LZW minimum code size
      skipSubBlocks();
    } else {
      throw new Error(`bad GIF block 0x${b?.toString(16)} at ${p - 1}`);
    }
  }
}

Deno.test("--render writes a PNG per state and one GIF per episode", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_render_" });
  try {
    const r = await rollout([
      "--env",
      "SimpleSokoban",
      "--policy",
      "scripted",
      "--episodes",
      "2",
      "--seed",
      "5",
      "--render",
      dir,
    ]);
    equal(r.code, 0, show(r));
    const actions = [...r.stdout.matchAll(/done: success true, return [-\d.]+, (\d+) actions/g)]
      .map((m) => Number(m[1]));
    equal(actions.length, 2, show(r));
    for (const [i, seed] of [5, 6].entries()) {
      const name = `episode_000${i}_seed_${seed}`;
      const pngs = [...Deno.readDirSync(`${dir}/${name}`)].map((e) => e.name).sort();
      equal(pngs.length, actions[i]! + 1, `${name}: ${pngs}`);
      equal(pngs[0], "frame_000.png");
      for (const png of pngs) {
        const bytes = await Deno.readFile(`${dir}/${name}/${png}`);
        deepStrictEqual([...bytes.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10]);
      }
      const gif = await Deno.readFile(`${dir}/${name}.gif`);
      equal(new TextDecoder().decode(gif.subarray(0, 6)), "GIF89a");
      equal(countGifFrames(gif), actions[i]! + 1);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--render without write permission is a clean usage error", async () => {
  const r = await rollout(["--env", "FrozenLake", "--render", "/tmp/agentrl_no_write"], {
    noWrite: true,
  });
  assertUsageError(r, /--render \/tmp\/agentrl_no_write cannot write there.*--allow-write/);
  doesNotMatch(r.stdout, /=== episode 1/); // before any episode runs
  const file = await Deno.makeTempFile();
  try {
    const onFile = await rollout(["--env", "FrozenLake", "--render", file]);
    assertUsageError(onFile, /cannot write there: it is a file, not a folder/);
    doesNotMatch(onFile.stdout, /=== episode 1/);
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("an env_type works directly, and --env-config values are typed and merged", async () => {
  const r = await rollout([
    "--env",
    "sokoban",
    "--env-config",
    "dim_room=[7,7]",
    "num_boxes=1",
    "--episodes",
    "1",
  ]);
  equal(r.code, 0, show(r));
  match(r.stdout, /State:\n(#{7})\n/);
  const lake = await rollout(["--env", "FrozenLake", "--env-config", "size=6"]);
  match(lake.stdout, /State:\n([^\n]{6}\n){6}/);
});

Deno.test("--policy model:PATH plays with a model folder through the generation engine", async () => {
  // A random tiny model: its answers are mostly invalid, but every turn runs
  // through the chat template, the engine and the environment.
  const src = await Deno.makeTempDir({ prefix: "agentrl_rollout_model_" });
  await writeTinyModel(`${src}/tok`);
  {
    using k = Kernels.open({ threads: 2 });
    const cfg = parseQwen2Config(
      JSON.parse(await Deno.readTextFile(`${src}/tok/config.json`)),
      "tiny",
    );
    using m = new Qwen2Model(k, cfg, { seed: 5 });
    await savePretrained(m, `${src}/model`, { tokenizerDir: `${src}/tok` });
  }
  const text = await rollout(["--env", "FrozenLake", "--policy", `model:${src}/model`]);
  equal(text.code, 0, show(text));
  match(text.stdout, /<\|im_start\|>system\n/);
  match(text.stdout, /prompt tokens, \d+ generated/);
  const json = await rollout([
    "--env",
    "FrozenLake",
    "--policy",
    `model:${src}/model`,
    "--episodes",
    "2",
    "--json",
  ]);
  equal(json.code, 0, show(json));
  const summary = JSON.parse(json.stdout);
  equal(summary.episodes, 2);
  ok(summary.mean_actions >= 1);
  const missing = await rollout(["--env", "FrozenLake", "--policy", `model:${src}/nothing`]);
  equal(missing.code, 2, show(missing));
  match(missing.stderr, /Cannot load the model \S*nothing: no such folder/);
  doesNotMatch(missing.stderr, /Uncaught|^\s+at /m);
  await Deno.remove(src, { recursive: true });
});

Deno.test("bad arguments are usage errors (exit 2) without a stack trace", async () => {
  assertUsageError(await rollout([]), /--env is required/);
  assertUsageError(
    await rollout(["--env", "FrozenLake", "--episodes", "0"]),
    /--episodes '0' is not valid: expected an integer from 1 to 9007199254740991/,
  );
  assertUsageError(await rollout(["--env", "FrozenLake", "--seed", "x"]), /--seed 'x'/);
  assertUsageError(
    await rollout(["--env", "FrozenLake", "--seed", "99999999999999999999"]),
    /expected an integer from -9007199254740991 to 9007199254740991/,
  );
  assertUsageError(
    await rollout(["--env", "FrozenLake", "--seed", "9007199254740991", "--episodes", "2"]),
    /--seed 9007199254740991 with --episodes 2 runs past the largest seed/,
  );
  assertUsageError(
    await rollout(["--env", "FrozenLake", "--policy", "randm"]),
    /--policy 'randm'.*did you mean 'random'/,
  );
  assertUsageError(
    await rollout(["--env", "FrozenLak"]),
    /Unknown --env 'FrozenLak'.*FrozenLake.*SimpleSokoban.*did you mean 'FrozenLake'/,
  );
  assertUsageError(
    await rollout(["--env", "FrozenLake", "--env-config", "sizee=5"]),
    /Unknown env_config key 'sizee'.*accepted keys[^]*did you mean 'size'/,
  );
  assertUsageError(
    await rollout(["--env", "FrozenLake", "--env-config", "size"]),
    /--env-config 'size' is not valid: expected key=value/,
  );
  assertUsageError(
    await rollout(["--env", "FrozenLake", "--env-config", "p=1.5"]),
    /env_config\.p: .*found number 1\.5/,
  );
  assertUsageError(
    await rollout([
      "--env",
      "FrozenLake",
      "--env-config",
      "size=4",
      "train_env_manager.env_step_timeout=2",
    ]),
    /--env-config took 'train_env_manager\.env_step_timeout=2', a config override: put overrides before/,
  );
  // a top-level variable of the config, which no env takes
  assertUsageError(
    await rollout(["--env", "FrozenLake", "--env-config", "size=4", "max_actions_per_traj=3"]),
    /--env-config took 'max_actions_per_traj=3', a config override: put overrides before/,
  );
});

Deno.test("an env step that never ends fails after env_step_timeout, without a stack trace", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_hang_env_" });
  try {
    const module = `${dir}/hang.ts`;
    await Deno.writeTextFile(
      module,
      "export default () => ({\n" +
        '  instruction: "wait", reset: () => ({ observation: "x", info: {} }),\n' +
        '  step: () => new Promise(() => {}), render: () => "x", close() {},\n' +
        '  sampleAction: () => "<answer>a</answer>",\n' +
        "});\n",
    );
    const r = await rollout(["--env", module, "train_env_manager.env_step_timeout=1"]);
    equal(r.code, 1, show(r));
    match(r.stderr, /failed on turn 1 .*step did not finish within env_step_timeout = 1 s/);
    doesNotMatch(r.stderr, /Uncaught|^\s+at /m);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an env that breaks its contract (NaN reward, bad frame, failing close) is named cleanly", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_bad_env_" });
  try {
    const module = (name: string, body: string) => {
      const path = `${dir}/${name}.ts`;
      Deno.writeTextFileSync(
        path,
        "const metrics = { action_is_valid: true, action_is_effective: true, success: false, " +
          "format_penalty: 0 };\n" +
          "export default () => ({\n" +
          '  instruction: "", reset: () => ({ observation: "x", info: {} }),\n' +
          '  sampleAction: () => "<answer>a</answer>",\n' +
          "  render: () => ({ width: 2, height: 2, data: new Uint8Array(12) }),\n" +
          '  step: () => ({ observation: "y", reward: 1, terminated: true, truncated: false, ' +
          "info: { metrics } }),\n" +
          `  close() {},\n${body}\n});\n`,
      );
      return path;
    };
    const nan = await rollout(["--env", module("nan", "  step: () => ({ reward: NaN }),")]);
    equal(nan.code, 1, show(nan));
    match(nan.stderr, /failed on turn 1 of seed 0: step returned observation undefined/);
    const nanReward = await rollout([
      "--env",
      module(
        "nan_reward",
        "  step: () => ({ observation: 'y', reward: NaN, terminated: true, truncated: false, " +
          "info: { metrics } }),",
      ),
    ]);
    match(nanReward.stderr, /step returned reward NaN: expected a finite number/);
    const frame = await rollout([
      "--env",
      module("frame", "  render: () => ({ width: 2, height: 2, data: new Uint8Array(5) }),"),
      "--render",
      `${dir}/frames`,
    ]);
    equal(frame.code, 1, show(frame));
    match(frame.stderr, /could not render after the reset of seed 0: .*5 bytes/);
    const close = await rollout([
      "--env",
      module("close", '  close() { throw new Error("close boom"); },'),
      "--json",
    ]);
    equal(close.code, 0, show(close));
    match(close.stderr, /note: the environment's close\(\) failed: close boom/);
    for (const r of [nan, nanReward, frame, close]) doesNotMatch(r.stderr, /Uncaught|^\s+at /m);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a step-wise config (envs=step) prompts afresh each turn with the last steps", async () => {
  const r = await rollout(["--env", "FrozenLake", "--seed", "1", "--episodes", "1", "envs=step"]);
  equal(r.code, 0, show(r));
  match(
    r.stdout,
    /--- turn 2: prompt messages \(step-wise: a fresh prompt each turn\) ---\n\[system\]/,
  );
  match(r.stdout, /You have taken 1 actions so far\. Your last 1 steps:\n\(step: 1, observation: /);
  match(r.stdout, /Step 2\. Current state:\n/);
  doesNotMatch(r.stdout, /\{(env_instruction|history|current_observation|step_count)\}/);
});
