import { existsSync } from "node:fs";
/**
 * End-to-end tests of the `agentrl` command line: each case runs
 * `deno run lib/cli/main.ts ...` as a subprocess from the repository root and
 * checks its exit status, stdout and stderr.
 */
import { deepStrictEqual, doesNotMatch, equal, match, ok } from "node:assert/strict";
import { writeTree } from "../_helpers.ts";

const REPO_ROOT = new URL("../../", import.meta.url);

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `deno <args>` from the repository root (no color, no stdin). */
async function deno(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: REPO_ROOT,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return { code, stdout: decoder.decode(stdout), stderr: decoder.decode(stderr) };
}

/** Runs the CLI with `args` from the repository root. */
function cli(...args: string[]): Promise<CliResult> {
  return deno(["run", "--allow-read", "--allow-env", "lib/cli/main.ts", ...args]);
}

/** Shows a subprocess's output when an assertion about it fails. */
function show(r: CliResult): string {
  return `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
}

/** Asserts a user error: exit status 2 and a short message without a stack trace. */
function assertCleanError(r: CliResult): void {
  equal(r.code, 2, show(r));
  ok(r.stderr.trim().length > 0, show(r));
  ok(r.stderr.trimEnd().split("\n").length <= 15, `too long:\n${r.stderr}`);
  doesNotMatch(r.stderr, /^\s+at .*(file|ext):\/\//m, "stack trace in stderr");
  doesNotMatch(r.stderr, /Uncaught/);
}

/** A primary config in a temporary folder that extends the built-in FrozenLake one. */
function extending(body: string): string {
  return `defaults:\n  - agent_val_frozen_lake\n  - _self_\n\n${body}`;
}

Deno.test("config prints YAML with the override applied (--config-name)", async () => {
  const r = await cli("config", "--config-name", "agent_val_frozen_lake", "seed=7");
  equal(r.code, 0, show(r));
  match(r.stdout, /^seed: 7$/m);
  match(r.stdout, /^exp_name: agent_val_frozen_lake$/m);
});

Deno.test("config --json prints valid JSON (Hydra's --config_name spelling)", async () => {
  const r = await cli("config", "--config_name", "agent_val_frozen_lake", "--json", "seed=7");
  equal(r.code, 0, show(r));
  const parsed = JSON.parse(r.stdout);
  equal(parsed.seed, 7);
  equal(parsed.exp_name, "agent_val_frozen_lake");
  deepStrictEqual(parsed.train_env_manager.tags, ["FrozenLake"]);
});

Deno.test("config's output loads back as a config (its interpolation variables as a comment)", async () => {
  const r = await cli("config", "-cn", "agent_val_webshop", "seed=9");
  equal(r.code, 0, show(r));
  match(r.stdout, /^# the variables the interpolations above read:$/m);
  match(r.stdout, /^# webshop_format_penalty: -0\.05$/m);
  const dir = await writeTree({ "again.yaml": r.stdout });
  try {
    const back = await cli("config", "-cp", dir.pathname, "-cn", "again");
    equal(back.code, 0, show(back));
    equal(back.stdout, r.stdout.replace(/^# the variables[\s\S]*$/m, "").trimEnd() + "\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("config's output loads back when the environments are only under ROLL's custom_env", async () => {
  const body = [
    "actor_infer:",
    "  generating_args: {max_new_tokens: 64}",
    "train_env_manager: {tags: [FrozenLake], num_env_groups: 8}",
    "val_env_manager: {tags: [FrozenLake], num_env_groups: 8}",
    "custom_env:",
    "  FrozenLake: {env_type: frozen_lake, max_steps: 5, max_tokens_per_step: 64}",
    "sequence_length: 1024",
  ].join("\n");
  const dir = await writeTree({ "only.yaml": body });
  try {
    const r = await cli("config", "-cp", dir.pathname, "-cn", "only");
    equal(r.code, 0, show(r));
    match(r.stdout, /^custom_envs:\n {2}FrozenLake:\n {4}env_type: frozen_lake$/m);
    await Deno.writeTextFile(`${dir.pathname}/again.yaml`, r.stdout);
    const back = await cli("config", "-cp", dir.pathname, "-cn", "again");
    equal(back.code, 0, show(back));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Hydra's -cn names the primary config", async () => {
  const r = await cli("config", "-cn", "agent_val_sokoban");
  equal(r.code, 0, show(r));
  match(r.stdout, /^exp_name: agent_val_sokoban$/m);
});

Deno.test("an override of an unknown key is a short error without a stack trace", async () => {
  const r = await cli("config", "not_a_key=1");
  assertCleanError(r);
  match(r.stderr, /not_a_key/);
  ok(r.stderr.includes("not_a_key=1"), "the override's text is quoted");
  equal(r.stdout, "");
});

Deno.test("a type error in a YAML file names file:line:col and the dotted key", async () => {
  const dir = await writeTree({
    "bad.yaml": extending("exp_name: bad\ntrain_env_manager:\n  group_size: lots\n"),
  });
  try {
    const r = await cli("config", "--config-path", dir.pathname, "--config-name", "bad");
    assertCleanError(r);
    match(r.stderr, /bad\.yaml:7:15/);
    match(r.stderr, /train_env_manager\.group_size/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a YAML syntax error names the file and a line", async () => {
  const dir = await writeTree({ "syntax.yaml": extending("seed: [1, 2\nexp_name: x\n") });
  try {
    const r = await cli("config", "-cp", dir.pathname, "-cn", "syntax");
    assertCleanError(r);
    match(r.stderr, /Invalid YAML/);
    // The `[` opens on line 5; the parser notices on line 6 that it never closes.
    match(r.stderr, /syntax\.yaml:[56]:\d+/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("duplicate keys in a YAML file are an error", async () => {
  const dir = await writeTree({ "dup.yaml": extending("seed: 1\nmax_steps: 2\nseed: 3\n") });
  try {
    const r = await cli("config", "--config-path", dir.pathname, "--config-name", "dup");
    assertCleanError(r);
    match(r.stderr, /unique/i);
    match(r.stderr, /dup\.yaml:7:1\b/); // the second `seed:`
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bench with an unknown name lists the benchmarks and fails", async () => {
  const r = await cli("bench", "nope");
  equal(r.code, 2, show(r));
  match(r.stderr, /Unknown benchmark 'nope': expected one of .*envs.*kernels/);
  doesNotMatch(r.stderr, /Uncaught|^\s+at /m);
});

/** Overrides for a fast train run: small groups and batches, two actions of six tokens. */
const SMALL_RUN = [
  "pretrain=null",
  "rollout_batch_size=8",
  "train_env_manager.num_env_groups=2",
  "train_env_manager.num_groups_partition=[2]",
  "train_env_manager.group_size=4",
  "val_batch_size=4",
  "val_env_manager.num_env_groups=4",
  "val_env_manager.num_groups_partition=[4]",
  "max_actions_per_traj=2",
  "max_tokens_per_step=6",
];

/** Overrides for a fast eval: four validation episodes. */
const SMALL_VAL = [
  "pretrain=null",
  "val_batch_size=4",
  "val_env_manager.num_env_groups=4",
  "val_env_manager.num_groups_partition=[4]",
];

/** FrozenLake's module, for the test env modules written below. */
const FROZEN_LAKE_MODULE = new URL("../../envs/frozen_lake/mod.ts", import.meta.url).href;

/** Runs the CLI with the permissions `deno task agentrl` grants. */
function cliFull(...args: string[]): Promise<CliResult> {
  return cliFullEnv({}, ...args);
}

/** {@linkcode cliFull} with `env` added to the environment. */
function cliFullEnv(env: Record<string, string>, ...args: string[]): Promise<CliResult> {
  return deno([
    "run",
    "--allow-read",
    "--allow-write",
    "--allow-env",
    "--allow-ffi",
    "lib/cli/main.ts",
    ...args,
  ], env);
}

Deno.test("eval plays the validation episodes and prints val/ metrics as JSON, with GIFs", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const r = await cliFull(
      "eval",
      "--json",
      "pretrain=null",
      "val_batch_size=8",
      "val_env_manager.num_env_groups=8",
      "val_env_manager.num_groups_partition=[8]",
      "max_actions_per_traj=2",
      "max_tokens_per_step=6",
      `render_save_dir=${dir}`,
    );
    equal(r.code, 0, show(r));
    const metrics = JSON.parse(r.stdout) as Record<string, number>;
    equal(metrics["val/rollout/num_trajectories"], 8);
    // ROLL's name for the validation score, beside agentrl's
    equal(metrics["val/score/mean"], metrics["val/rollout/score/mean"]);
    ok(Number.isFinite(metrics["val/score/max"]));
    for (const key of ["success", "action_is_valid", "num_actions"]) {
      ok(Number.isFinite(metrics[`val/env/FrozenLake/${key}`]), key);
    }
    ok(metrics["val/rollout/response_length/max"]! <= 12, show(r));
    const gifs = [];
    for await (const e of Deno.readDir(dir)) {
      if (e.isDirectory) gifs.push(e.name);
    }
    equal(gifs.length, 8, gifs.join(", "));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("train runs the pipeline: a one-step run writes metrics, a report and a checkpoint", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const r = await cliFull(
      "train",
      ...SMALL_RUN,
      `output_dir=${dir}`,
      "max_steps=1",
    );
    equal(r.code, 0, show(r));
    match(r.stderr, /step 0\/1 \| val FrozenLake success/);
    const rows = (await Deno.readTextFile(`${dir}/metrics.jsonl`)).trim().split("\n");
    equal(rows.length, 2, rows.join("\n")); // step 0, then the final validation at step 1
    ok((await Deno.stat(`${dir}/report.html`)).isFile);
    ok((await Deno.stat(`${dir}/checkpoints/checkpoint-1/manifest.json`)).isFile);

    // resuming it: a GRPO checkpoint has no critic for gae; a damaged trainer state is named
    const resume = (...more: string[]) =>
      cliFull(
        "train",
        "pretrain=null",
        `output_dir=${dir}`,
        "max_steps=2",
        "resume_from_checkpoint=true",
        ...more,
      );
    const gae = await resume("adv_estimator=gae");
    assertCleanError(gae);
    match(gae.stderr, /checkpoint-1 holds no critic .* adv_estimator gae needs it/);
    const statePath = `${dir}/checkpoints/checkpoint-1/trainer_state.json`;
    const size = (await Deno.stat(statePath)).size; // (the manifest checks sizes)
    await Deno.writeTextFile(statePath, "{".padEnd(size, "x"));
    const damaged = await resume();
    assertCleanError(damaged);
    match(damaged.stderr, /trainer_state\.json is not valid JSON/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("train names the trajectories it lost, and why", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // a FrozenLake whose step fails for odd seeds: some trajectories are lost, not all
    await Deno.writeTextFile(
      `${dir}/flaky.ts`,
      `import { FrozenLakeEnv, FrozenLakeConfig } from "${FROZEN_LAKE_MODULE}";\n` +
        "export default { configSchema: FrozenLakeConfig, create(config: unknown) {\n" +
        "  const env = new FrozenLakeEnv(config as never); let seed = 0;\n" +
        "  const reset = env.reset.bind(env), step = env.step.bind(env);\n" +
        "  env.reset = (s: number) => { seed = s; return reset(s); };\n" +
        '  env.step = (a: string) => { if (seed % 2) throw new Error("flaky step"); return step(a); };\n' +
        "  return env; } };\n",
    );
    const r = await cliFull(
      "train",
      ...SMALL_RUN,
      `output_dir=${dir}/out`,
      "max_steps=1",
      "eval_steps=100",
      `custom_envs.FrozenLake.env_type=${dir}/flaky.ts`,
    );
    equal(r.code, 0, show(r));
    match(r.stderr, /step 0's rollout lost \d+ trajectories; the first: env_error in .*flaky step/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("train with a bad value is a clean usage error before anything runs", async () => {
  const r = await cliFull("train", "ppo_epochs=0");
  assertCleanError(r);
  match(r.stderr, /ppo_epochs/);
});

Deno.test("train: a bad env, a too short sequence_length and a missing checkpoint are clean usage errors", async () => {
  const cases: [string[], RegExp][] = [
    [["custom_env.FrozenLake.env_type=nope"], /Unknown env_type 'nope'/],
    [["custom_env.FrozenLake.env_config.size=banana"], /env_config.size/],
    [["sequence_length=50"], /first prompt of FrozenLake is \d+ tokens, but sequence_length is 50/],
    [
      ["resume_from_checkpoint=/nonexistent"],
      /resume_from_checkpoint \/nonexistent does not exist/,
    ],
    [["resume_from_checkpoint=''"], /must be true, false or a checkpoint folder, got ""/],
    [
      ["tracker_kwargs.log_dir=/dev/null"],
      /tracker_kwargs.log_dir \/dev\/null cannot be used as a/,
    ],
  ];
  for (const [args, message] of cases) {
    const dir = await Deno.makeTempDir();
    try {
      const r = await cliFull(
        "train",
        "pretrain=null",
        `output_dir=${dir}/run`,
        "max_steps=1",
        ...args,
      );
      assertCleanError(r);
      match(r.stderr, message);
      // the folders the run made (output_dir, its tensorboard and render folders) are gone, but
      // for a run that failed in its first rollout (its tracker's files stay)
      if (args[0] !== "sequence_length=50") {
        deepStrictEqual([...Deno.readDirSync(dir)], [], `left behind by ${args.join(" ")}`);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }
});

Deno.test("eval: a bad policy, a render folder that is a file, and no finished episode fail cleanly", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/file`, "x");
    // an env with no sampleAction: the random policy loses every episode
    await Deno.writeTextFile(
      `${dir}/no_sample.ts`,
      'export default () => ({ instruction: "", reset: () => ({ observation: "x", info: {} }),\n' +
        '  step: () => { throw new Error("unused"); }, render: () => ({ width: 1, height: 1, data: new Uint8Array(3) }), close() {} });\n',
    );
    const policy = await cliFull("eval", "--policy", "bogus", ...SMALL_VAL);
    assertCleanError(policy);
    match(policy.stderr, /--policy 'bogus' is not valid/);
    const render = await cliFull("eval", ...SMALL_VAL, `render_save_dir=${dir}/file`);
    assertCleanError(render);
    match(
      render.stderr,
      /render_save_dir .*file cannot be used as a folder \(it is a file, not a folder\)/,
    );
    const lost = await cliFull(
      "eval",
      "--policy",
      "random",
      ...SMALL_VAL,
      `custom_envs.FrozenLake.env_type=${dir}/no_sample.ts`,
    );
    equal(lost.code, 1, show(lost));
    match(lost.stderr, /No validation episode finished \(\d+ lost\); the first: policy_error/);
    doesNotMatch(lost.stderr, /Uncaught|^\s+at /m);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("eval: env workers that crash lose their episodes, with a one-line error", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // a module whose worker dies from a timer right after loading
    await Deno.writeTextFile(
      `${dir}/crash.ts`,
      'setTimeout(() => { throw new Error("boom from a timer"); }, 1);\n' +
        `import { FrozenLakeConfig, FrozenLakeEnv } from "${FROZEN_LAKE_MODULE}";\n` +
        "export default { configSchema: FrozenLakeConfig, " +
        "create: (c: unknown) => new FrozenLakeEnv(c as never) };\n",
    );
    const r = await cliFull(
      "eval",
      ...SMALL_VAL,
      "val_env_manager.env_runner=worker",
      `custom_envs.FrozenLake.env_type=${dir}/crash.ts`,
    );
    equal(r.code, 1, show(r));
    match(r.stderr, /(Every trajectory is being lost|No validation episode finished).*env worker/);
    doesNotMatch(r.stderr, /Uncaught|escaped|^\s+at /m);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("eval --policy random does not build a missing built-in base model (it needs a tokenizer only)", async () => {
  const base = "build/models/frozen_lake_step_base";
  const there = existsSync(new URL(base, REPO_ROOT));
  const r = await cliFull("eval", "--policy", "random", ...SMALL_VAL.slice(1), `pretrain=${base}`);
  equal(r.code, 0, show(r));
  match(r.stderr, there ? /model: build\/models\/frozen_lake_step_base/ : /model: tiny default/);
  doesNotMatch(r.stderr, /building the FrozenLake base model/);
  equal(existsSync(new URL(base, REPO_ROOT)), there);
});

Deno.test("eval: a KV cache past the memory available is a config error naming its keys; the random policy allocates none", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // 100 MiB; the tiny default's 64 episodes x 1024 positions take 128 MiB
    await Deno.writeTextFile(`${dir}/meminfo`, "MemAvailable:     102400 kB\n");
    const env = { AGENTRL_MEMINFO: `${dir}/meminfo` };
    const many = [
      "pretrain=null",
      "val_batch_size=64",
      "val_env_manager.num_env_groups=64",
      "val_env_manager.num_groups_partition=[64]",
    ];
    const model = await cliFullEnv(env, "eval", ...many);
    assertCleanError(model);
    equal(model.code, 2, show(model));
    match(
      model.stderr,
      /KV cache of maxRunningRequests 64 x maxModelLen 1024 \(128\.0 MiB of f32 keys and values\) cannot be allocated on the cpu: .*the system has 104857600 bytes available/,
    );
    match(
      model.stderr,
      /val_env_manager's num_env_groups x \(group_size \+ group_size_redundancy\)/,
    );
    const random = await cliFullEnv(env, "eval", "--policy", "random", ...many);
    equal(random.code, 0, show(random));
    match(random.stdout, /64 validation episodes/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task agentrl ... --json prints only JSON on stdout (the build says its status on stderr)", async () => {
  const { code, stdout, stderr } = await deno(["task", "agentrl", "config", "--full", "--json"]);
  equal(code, 0, stderr);
  equal(JSON.parse(stdout).adv_estimator, "grpo");
  match(stderr, /cpu kernels: /);
});

Deno.test("eval with a missing checkpoint is a clean usage error", async () => {
  const r = await cliFull("eval", "--checkpoint", "/nonexistent/model");
  assertCleanError(r);
  match(r.stderr, /Cannot load the model \/nonexistent\/model: no such folder/);
  const file = await cliFull("eval", "--checkpoint", "README.md");
  assertCleanError(file);
  match(file.stderr, /Cannot load the model README\.md: it is not a folder/);
});

Deno.test("--help prints the usage and lists every subcommand", async () => {
  const r = await cli("--help");
  equal(r.code, 0, show(r));
  match(r.stdout, /^Usage: agentrl /m);
  for (const sub of ["train", "eval", "rollout", "inspect", "config", "bench"]) {
    match(r.stdout, new RegExp(`^  ${sub} `, "m"));
  }
});

for (const sub of ["train", "eval", "rollout", "inspect", "config", "bench"]) {
  Deno.test(`${sub} --help prints its usage`, async () => {
    const r = await cli(sub, "--help");
    equal(r.code, 0, show(r));
    match(r.stdout, new RegExp(`^Usage: agentrl ${sub} `, "m"));
    match(r.stdout, /--help/);
  });
}

Deno.test("an unknown option is a usage error", async () => {
  for (const args of [["--bogus"], ["config", "--bogus"]]) {
    const r = await cli(...args);
    assertCleanError(r);
    match(r.stderr, /unknown option '--bogus'/);
  }
});

Deno.test("an option written as an override, or an override written as an option, gets a hint", async () => {
  const asOverride = await cli("rollout", "--env", "FrozenLake", "episodes=2");
  assertCleanError(asOverride);
  match(asOverride.stderr, /Could not override 'episodes'/);
  match(
    asOverride.stderr,
    /hint: +'episodes' is an option of agentrl rollout, not a config key: write --episodes 2/,
  );
  const flag = await cli("config", "json=true");
  match(
    flag.stderr,
    /hint: +'json' is an option of agentrl config, not a config key: write --json$/m,
  );
  const unknown = await cli("config", "not_a_key=1"); // a real unknown key keeps Hydra's hint
  match(unknown.stderr, /hint: +to add a new key, use \+not_a_key=1/);
  const asOption = await cli("config", "--max_steps=3");
  assertCleanError(asOption);
  match(
    asOption.stderr,
    /unknown option '--max_steps=3'\n\(config overrides take no dashes: max_steps=3\)/,
  );
  const nested = await cli("config", "--actor_train.model_args.dtype", "bf16");
  match(nested.stderr, /take no dashes: actor_train\.model_args\.dtype=VALUE/);
  const off = await cli("config", "json=false"); // a flag asked off: leave it out
  match(
    off.stderr,
    /hint: +'json' is an option of agentrl config, not a config key: leave --json out/,
  );
  const deleted = await cli("config", "~json"); // a delete gets no option hint
  doesNotMatch(deleted.stderr, /is an option/);
  // no dashes hint for an unknown option that is no config key, or Commander's near miss
  for (const args of [["config", "--bogus=1"], ["rollout", "--env", "x", "--env_config", "a=1"]]) {
    const r = await cli(...args);
    assertCleanError(r);
    doesNotMatch(r.stderr, /no dashes/, args.join(" "));
  }
});

Deno.test("a group override picks another option of the group", async () => {
  const r = await cli("config", "envs=step");
  equal(r.code, 0, show(r));
  match(r.stdout, /^ +env_manager_cls: step$/m);
  doesNotMatch(r.stdout, /env_manager_cls: traj/);
});

Deno.test("an unknown group option lists the options there are", async () => {
  const r = await cli("config", "envs=nope");
  assertCleanError(r);
  match(r.stderr, /'nope'/);
  match(r.stderr, /step, traj/);
});
