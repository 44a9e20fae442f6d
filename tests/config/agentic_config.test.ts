import { deepStrictEqual, equal, match, ok } from "node:assert/strict";
import { ConfigErrors } from "../../lib/config/errors.ts";
import { loadConfig } from "../../lib/config/load_config.ts";
import { configError, writeTree } from "../_helpers.ts";

const FIXTURE = new URL("../fixtures/roll_layout/qwen-agentic/", import.meta.url);

Deno.test("every shipped experiment config composes and validates", async () => {
  for (
    const name of [
      "agent_val_frozen_lake",
      "agent_val_frozen_lake_async",
      "agent_val_frozen_lake_gigpo",
      "agent_val_frozen_lake_step",
      "agent_val_frozen_lake_think",
      "agent_val_sokoban",
      "agent_val_webshop",
    ]
  ) {
    const { config } = await loadConfig({ configName: name });
    equal(config.exp_name, name);
    ok(config.train_env_manager.tags.every((t) => t in config.custom_envs), name);
  }
});

Deno.test("the embedded default is FrozenLake 4x4, p=0.8, not slippery, 10 actions, GRPO", async () => {
  const { config } = await loadConfig();
  const lake = config.custom_envs.FrozenLake!;
  equal(config.adv_estimator, "grpo");
  equal(lake.env_type, "frozen_lake");
  equal(lake.max_steps, 10);
  equal(lake.env_manager_cls, "traj");
  deepStrictEqual(
    [lake.env_config?.size, lake.env_config?.p, lake.env_config?.is_slippery],
    [4, 0.8, false],
  );
  equal(lake.env_config?.action_pattern, "<answer>(.*?)</answer>");
  equal(config.rollout_batch_size % config.train_env_manager.group_size, 0);
});

Deno.test("group override envs=step switches to the step-wise env manager", async () => {
  const { config, choices } = await loadConfig({ overrides: ["envs=step"] });
  equal(choices.envs, "step");
  equal(config.custom_envs.FrozenLake!.env_manager_cls, "step");
  equal(config.custom_envs.FrozenLake!.history_length, 5);
});

Deno.test("a ROLL-shaped config composes without edits", async () => {
  const loaded = await loadConfig({ configPath: FIXTURE, configName: "frozen_lake" });
  const { config, notices, variables } = loaded;
  equal(config.exp_name, "lake_run");
  deepStrictEqual(config.actor_train.device_mapping, [0, 1, 2, 3, 4, 5, 6, 7]);
  equal(config.actor_train.training_args.learning_rate, 1e-6);
  equal(config.actor_train.model_args.model_type, null);
  equal(config.reference.strategy_args?.strategy_config, null);
  equal(config.hydra.run.dir, ".");
  equal(config.tracker_kwargs.log_dir, "./out/tb/lake_run");
  // The primary file's max_tokens_per_step (48) overrides the shared file's (100).
  equal(config.custom_envs.Lake!.max_tokens_per_step, 48);
  equal(config.custom_envs.Lake!.env_manager_cls, "traj");
  match(config.custom_envs.Lake!.agent_template!, /Turn \{turn_idx\}, \{actions_left\} actions/);
  equal(
    config.custom_envs.Boxes!.env_config?.grid_lookup &&
      typeof config.custom_envs.Boxes!.env_config.grid_lookup,
    "object",
  );
  equal(config.train_env_manager.generating_args?.temperature, 1.0);
  equal(config.val_env_manager.generating_args?.temperature, 0.1);
  equal(config.actor_infer.generating_args?.top_k, 50);
  equal(config.actor_train.model_args.model_name_or_path, "/models/some-instruct");
  ok("custom_env" in variables && "grid_penalty" in variables);
  ok(
    notices.some((n) => /actor_train: strategy 'megatron_train' runs as agentrl's trainer/.test(n)),
  );
  ok(notices.some((n) => /tensor_model_parallel_size/.test(n)));
  ok(notices.some((n) => /actor_infer: strategy 'vllm'/.test(n)));
  ok(notices.some((n) => /reference: strategy 'hf_infer'/.test(n)));
});

Deno.test("the seeds' custom_envs and older env-manager spellings are accepted", async () => {
  const { config } = await loadConfig({
    configPath: FIXTURE,
    configName: "frozen_lake",
    overrides: [
      "~train_env_manager.num_env_groups",
      "~train_env_manager.num_groups_partition",
      "+train_env_manager.env_groups=32",
      "+train_env_manager.n_groups=[32]",
    ],
  });
  equal(config.train_env_manager.num_env_groups, 32);
  deepStrictEqual(config.train_env_manager.num_groups_partition, [32]);
});

Deno.test("without num_groups_partition the groups divide equally among the tags", async () => {
  const { config } = await loadConfig({
    configPath: FIXTURE,
    configName: "frozen_lake",
    overrides: ["~val_env_manager.num_groups_partition"],
  });
  deepStrictEqual(config.val_env_manager.num_groups_partition, [32, 32]);
});

Deno.test("an unknown key in a file names the file, line, column and a close key", async () => {
  const dir = await writeTree({
    "bad.yaml": "defaults:\n  - envs: traj\n  - workers: cpu\n  - _self_\nmax_step: 10\n",
  });
  const e = await configError(() => loadConfig({ configPath: dir, configName: "bad" }));
  const all = e instanceof ConfigErrors ? e.errors : [e];
  const unknown = all.find((x) => /Unknown key 'max_step'/.test(x.message));
  ok(unknown, e.format());
  equal(unknown.details.key, "max_step");
  equal(unknown.details.hint, "did you mean 'max_steps'?");
  match(unknown.details.origin?.source ?? "", /bad\.yaml$/);
  equal(unknown.details.origin?.line, 5);
  equal(unknown.details.origin?.column, 11);
});

Deno.test("a type error names the key, its location, what was found and expected", async () => {
  const dir = await writeTree({
    "typed.yaml": [
      "defaults:",
      "  - agent_val_frozen_lake",
      "  - _self_",
      "actor_train:",
      "  training_args:",
      "    learning_rate: fast",
      "",
    ].join("\n"),
  });
  const e = await configError(() => loadConfig({ configPath: dir, configName: "typed" }));
  equal(e.details.key, "actor_train.training_args.learning_rate");
  equal(e.details.origin?.line, 6);
  equal(e.details.found, '"fast" (string)');
  equal(e.details.expected, "a number");
});

Deno.test("enum and range errors list what is allowed", async () => {
  const bad = await configError(() => loadConfig({ overrides: ["adv_estimator=ppo"] }));
  equal(bad.details.key, "adv_estimator");
  match(bad.details.expected ?? "", /"gae", "grpo"/);
  deepStrictEqual(bad.details.origin, { source: "command line", override: "adv_estimator=ppo" });
  const range = await configError(() => loadConfig({ overrides: ["lambd=1.5"] }));
  match(range.details.expected ?? "", /<= 1/);
  const tokens = await configError(() =>
    loadConfig({ overrides: ["policy_gradient_tokens=think"] })
  );
  equal(tokens.details.key, "policy_gradient_tokens");
  match(tokens.details.expected ?? "", /"response", "answer"/);
  equal(bad.details.hint, undefined); // ppo is no near miss
  const typo = await configError(() => loadConfig({ overrides: ["adv_estimator=grpoo"] }));
  equal(typo.details.hint, "did you mean 'grpo'?");
});

Deno.test("values that would fail only at run time are config errors", async () => {
  const cases: [string, string, RegExp][] = [
    ["max_steps=-1", "max_steps", /max_steps must be positive/],
    ["sequence_length=1", "sequence_length", /a prompt token and a generated one/],
    ["val_batch_size=0", "val_batch_size", /positive multiple/],
    ["val_batch_size=-1", "val_batch_size", /positive multiple/],
    ["reward_normalization.grouping=trajgroup", "reward_normalization.grouping", /grouping/],
    ["actor_train.training_args.adam_beta1=1", "actor_train.training_args.adam_beta1", /1/],
    ["critic.training_args.adam_beta2=1", "critic.training_args.adam_beta2", /1/],
    ["val_env_manager.generating_args.top_p=0", "val_env_manager.generating_args.top_p", /0/],
    ["actor_infer.generating_args.top_k=-5", "actor_infer.generating_args.top_k", /-1/],
    [
      "actor_infer.generating_args.temperature=1e300",
      "actor_infer.generating_args.temperature",
      /38/,
    ],
    // (the loss kernel clips the ratio below at 1 - the clip in use)
    ["pg_clip=1", "pg_clip", /pg_clip must be below 1/],
  ];
  for (const [override, key, message] of cases) {
    const e = await configError(() => loadConfig({ overrides: [override] }));
    equal(e.details.key, key, override);
    match(e.format(), message, override);
  }
  const grouping = await configError(() =>
    loadConfig({ overrides: ["reward_normalization.grouping=trajgroup"] })
  );
  match(grouping.details.expected ?? "", /traj_group_id, tags, batch/);
  // with use_pg_clip_range the clip in use is pg_clip_low; the unused one may be anything
  const low = await configError(() =>
    loadConfig({ overrides: ["use_pg_clip_range=true", "pg_clip_low=1.5"] })
  );
  equal(low.details.key, "pg_clip_low");
  match(low.format(), /expected: a value in \(0, 1\) with use_pg_clip_range/);
  await loadConfig({ overrides: ["use_pg_clip_range=true", "pg_clip=1.5"] });
  await loadConfig({ overrides: ["pg_clip_low=1.5"] });
  const kl = await configError(() =>
    loadConfig({ overrides: ["kl_penalty=full", "add_token_level_kl=true", "init_kl_coef=0.1"] })
  );
  equal(kl.details.key, "kl_penalty");
  match(kl.message, /"full" is not computed by the training pipeline/);
});

Deno.test("cross-field rules: batch multiples, partitions, tags, lengths", async () => {
  const batch = await configError(() => loadConfig({ overrides: ["rollout_batch_size=60"] }));
  equal(batch.details.key, "rollout_batch_size");
  match(batch.message, /multiple of train_env_manager.group_size/);
  for (const size of ["0", "-8"]) { // a step needs at least one group
    const empty = await configError(() =>
      loadConfig({ overrides: [`rollout_batch_size=${size}`] })
    );
    equal(empty.details.key, "rollout_batch_size");
    match(empty.message, /positive multiple/);
    match(empty.details.expected ?? "", /a multiple of 8, e.g. 8/);
  }
  const part = await configError(() =>
    loadConfig({ overrides: ["train_env_manager.num_groups_partition=[4]"] })
  );
  match(part.message, /adds up to 4, not num_env_groups/);
  const tag = await configError(() =>
    loadConfig({ overrides: ["train_env_manager.tags=[FrozenLak]"] })
  );
  equal(tag.details.hint, "did you mean 'FrozenLake'?");
  equal(tag.details.key, "train_env_manager.tags[0]");
  const len = await configError(() => loadConfig({ overrides: ["sequence_length=null"] }));
  match(len.message, /sequence_length/);
  const val = await configError(() => loadConfig({ overrides: ["val_batch_size=100"] }));
  match(val.message, /multiple of the number of validation environments/);
});

Deno.test("response_length derives sequence_length as ROLL does", async () => {
  const { config } = await loadConfig({
    overrides: ["sequence_length=null", "response_length=512", "prompt_length=256"],
  });
  equal(config.sequence_length, 768);
});

Deno.test("Python class paths map to our managers, or fail clearly", async () => {
  const ok1 = await loadConfig({
    overrides: [
      "custom_envs.FrozenLake.env_manager_cls=roll.pipeline.agentic.env_manager.step_env_manager.StepEnvManager",
    ],
  });
  equal(ok1.config.custom_envs.FrozenLake!.env_manager_cls, "step");
  const vl = await configError(() =>
    loadConfig({
      overrides: [
        "custom_envs.FrozenLake.env_manager_cls=roll.pipeline.agentic.env_manager.vl_traj_env_manager.VLTrajEnvManager",
      ],
    })
  );
  match(vl.message, /not available in agentrl/);
  equal(vl.details.key, "custom_envs.FrozenLake.env_manager_cls");
  const worker = await configError(() =>
    loadConfig({ overrides: ["+actor_train.worker_cls=my.Worker"] })
  );
  match(worker.message, /worker class 'my.Worker' is not available/);
});

Deno.test("step_reinforce needs the step-wise env manager; gigpo takes either", async () => {
  const e = await configError(() => loadConfig({ overrides: ["adv_estimator=step_reinforce"] }));
  match(e.message, /trains step-wise/);
  for (const envs of ["envs=traj", "envs=step"]) {
    const { config } = await loadConfig({ overrides: ["adv_estimator=gigpo", envs] });
    equal(config.adv_estimator, "gigpo");
  }
});

Deno.test("derived values: model paths, reward-normalization scopes, reference role", async () => {
  const { config } = await loadConfig({
    overrides: ["pretrain=/m/base", "use_kl_loss=true", "kl_loss_coef=0.01"],
  });
  equal(config.actor_infer.model_args.model_name_or_path, "/m/base");
  equal(config.critic.model_args.model_name_or_path, "/m/base");
  equal(config.reward_normalization.norm_mean_type, "group");
  equal(config.reward_normalization.norm_std_type, "group");
  equal(config.enable_reference, true);
});

Deno.test("settings agentrl does not use get a notice naming where the output goes instead", async () => {
  const { notices } = await loadConfig({
    overrides: [
      "output_dir=/o",
      "rollout_dump_dir=/dumps",
      "+checkpoint_config={type: file_system, output_dir: /ckpt}",
    ],
  });
  ok(notices.some((n) => /rollout_dump_dir \(\/dumps\) is ignored/.test(n)), notices.join("\n"));
  ok(
    notices.some((n) =>
      /checkpoint_config.output_dir \(\/ckpt\) is ignored: checkpoints go to \/o\/checkpoints/
        .test(n)
    ),
    notices.join("\n"),
  );
});

Deno.test("async_generation_ratio counts whole steps", async () => {
  const e = await configError(() => loadConfig({ overrides: ["async_generation_ratio=0.5"] }));
  equal(e.details.key, "async_generation_ratio");
  equal(e.details.expected, "0 (synchronous), 1, 2, ...");
  equal(
    (await loadConfig({ overrides: ["async_generation_ratio=2"] })).config.async_generation_ratio,
    2,
  );
});

Deno.test("Infinity and NaN are not finite numbers (zod calls them a wrong type); 1.5 is not an integer", async () => {
  const e = await configError(() => loadConfig({ overrides: ["max_grad_norm=inf"] }));
  equal(e.message, "Not a finite number");
  equal(e.details.key, "max_grad_norm");
  equal(e.details.found, "Infinity (number)");
  equal(e.details.expected, "a finite number");
  // a finite number where an integer belongs is not an integer, and said so
  const half = await configError(() => loadConfig({ overrides: ["seed=1.5"] }));
  equal(half.message, "Not an integer");
  equal(half.details.key, "seed");
  equal(half.details.expected, "a finite integer");
  equal(
    (await configError(() => loadConfig({ overrides: ["seed=inf"] }))).message,
    "Not a finite number",
  );
});

Deno.test("eval_steps=0 turns validation off, as in ROLL; a negative one is out of range", async () => {
  equal((await loadConfig({ overrides: ["eval_steps=0"] })).config.eval_steps, 0);
  const e = await configError(() => loadConfig({ overrides: ["eval_steps=-1"] }));
  equal(e.details.key, "eval_steps");
  equal(e.details.expected, "a value >= 0");
});

Deno.test("max_traj_per_env: too few validation episodes is an error; async's replacement is a notice", async () => {
  const val = await configError(() =>
    loadConfig({ overrides: ["val_env_manager.max_traj_per_env=1", "val_batch_size=256"] })
  );
  equal(val.message, "max_traj_per_env is too small to fill val_batch_size");
  equal(val.details.key, "val_env_manager.max_traj_per_env");
  equal(val.details.expected, "at least 2 (val_batch_size / 128 envs)");
  equal(
    (await loadConfig({ overrides: ["val_env_manager.max_traj_per_env=3", "val_batch_size=256"] }))
      .config.val_env_manager.max_traj_per_env,
    3,
  );
  const run = await loadConfig({
    configName: "agent_val_frozen_lake_async",
    overrides: ["train_env_manager.max_traj_per_env=4"],
  });
  equal(run.config.train_env_manager.max_traj_per_env, 1);
  ok(
    run.notices.includes(
      "train_env_manager.max_traj_per_env 4 is set to 1 (rollout_batch_size / training envs): " +
        "with async_generation_ratio > 0 each env plays that many episodes a step",
    ),
    run.notices.join("\n"),
  );
  const plain = await loadConfig({ configName: "agent_val_frozen_lake_async" });
  equal(plain.notices.filter((n) => n.includes("max_traj_per_env")).length, 0);
});

Deno.test("a variable read only through a made key ${${k}} counts as used", async () => {
  const { config } = await loadConfig({
    overrides: ["+lr_table={a: 1e-3, b: 2e-3}", "+which=b", "exp_name=run_${lr_table.${which}}"],
  });
  equal(config.exp_name, "run_0.002");
  const made = await loadConfig({ overrides: ["+tag=x", "+k=tag", "exp_name=${${k}}"] });
  equal(made.config.exp_name, "x");
  // a variable nothing reads is still an error
  const stray = await configError(() => loadConfig({ overrides: ["+tag=x", "+k=tag"] }));
  equal(stray.message, "2 problems in the config"); // tag and k, both unread
});

Deno.test("a number where text belongs is a wrong type whose hint shows the quote and the cast", async () => {
  const e = await configError(() => loadConfig({ overrides: ["exp_name=1.0"] }));
  equal(e.message, "Wrong type"); // it once said "Not a finite number" for a finite 1.0
  equal(e.details.key, "exp_name");
  equal(e.details.expected, "a string");
  equal(
    e.details.hint,
    "quote it (exp_name='1.0') or cast it (exp_name=str(1.0)) to pass it as text",
  );
  // an interpolation of a number stays one, quoted or cast: the hint says to add text
  for (const o of ["exp_name=${seed}", "exp_name='${seed}'", "exp_name=str(${seed})"]) {
    const i = await configError(() => loadConfig({ overrides: [o] }));
    equal(
      i.details.hint,
      "the value resolves to 42: put text around the interpolation to make it text " +
        "(e.g. run_${seed})",
      o,
    );
  }
  equal((await loadConfig({ overrides: ["exp_name=str(1.0)"] })).config.exp_name, "1.0");
  equal((await loadConfig({ overrides: ["exp_name='5'"] })).config.exp_name, "5");
  equal((await loadConfig({ overrides: ["seed=int('7')"] })).config.seed, 7);
});

Deno.test("Hydra's own settings on the command line are accepted, each with a notice", async () => {
  const { config, notices } = await loadConfig({
    overrides: ["hydra/job_logging=disabled", "hydra.verbose=true", "hydra.run.dir=."],
  });
  deepStrictEqual(notices.filter((n) => n.includes("Hydra's own settings")), [
    "'hydra/job_logging=disabled' sets one of Hydra's own settings, which do nothing here " +
    "(agentrl reads only hydra.run.dir)",
    "'hydra.verbose=true' sets one of Hydra's own settings, which do nothing here " +
    "(agentrl reads only hydra.run.dir)",
  ]);
  equal(config.hydra.run.dir, ".");
});

Deno.test("++ on a config group is refused, as Hydra does, with the two overrides that work", async () => {
  const e = await configError(() => loadConfig({ overrides: ["++envs=step"] }));
  match(e.message, /'\+\+envs=step': force-adding \(\+\+\) a config group is not supported/);
  equal(e.details.hint, "use envs=step to change its choice, or +envs=step to add it");
});

Deno.test("an empty folder path is a config error, not a failed mkdir after the model loads", async () => {
  for (const key of ["output_dir", "exp_name"]) {
    const e = await configError(() => loadConfig({ overrides: [`${key}=`] }));
    equal(e.message, "Empty value");
    equal(e.details.key, key);
    equal(e.details.expected, "a non-empty text");
  }
});

Deno.test("ROLL's RLVR-only settings away from their defaults are named; ratio_type segment is taken", async () => {
  const quiet = await loadConfig({ overrides: ["rl_loss_coef=1", "use_topr_loss=false"] });
  deepStrictEqual(quiet.notices, []);
  const { notices } = await loadConfig({
    overrides: ["rl_loss_coef=0.5", "sft_loss_coef=1", "use_reward_scaling=true", "l2=0.1"],
  });
  deepStrictEqual(notices, [
    "not implemented in agentrl, so these settings have no effect: use_reward_scaling=true, " +
    "l2=0.1, rl_loss_coef=0.5, sft_loss_coef=1",
  ]);
  equal((await loadConfig({ overrides: ["ratio_type=segment"] })).config.ratio_type, "segment");
  // generation options past sampling, the weight-sync cadence, env manager hooks, proxies
  const more = await loadConfig({
    overrides: [
      "val_env_manager.generating_args.repetition_penalty=1.3",
      "actor_infer.model_update_frequency=2",
      "custom_envs.FrozenLake.pre_step_template=hi",
      "train_env_manager.llm_proxy.proxy_type=random",
    ],
  });
  deepStrictEqual(more.notices, [
    "not implemented in agentrl, so these settings have no effect: " +
    "val_env_manager.generating_args.repetition_penalty=1.3, actor_infer.model_update_frequency=2, " +
    'custom_envs.FrozenLake.pre_step_template="hi"',
    "train_env_manager.llm_proxy.proxy_type=random: training generates with the model " +
    "(agentrl eval reads val_env_manager.llm_proxy: random plays random legal actions)",
  ]);
});

Deno.test("device_mapping accepts ROLL's Python expressions and rejects others", async () => {
  const { config } = await loadConfig({
    overrides: ["actor_train.device_mapping='list(range(2,4))+[7]'"],
  });
  deepStrictEqual(config.actor_train.device_mapping, [2, 3, 7]);
  const e = await configError(() =>
    loadConfig({ overrides: ["actor_train.device_mapping='os.system(1)'"] })
  );
  equal(e.details.key, "actor_train.device_mapping");
});

Deno.test("interpolation variables must be used: a stray top-level key is an error", async () => {
  const e = await configError(() => loadConfig({ overrides: ["+my_var=1"] }));
  match(e.message, /Unknown key 'my_var'/);
  const { variables } = await loadConfig({ overrides: ["+my_var=1", "exp_name=run_${my_var}"] });
  equal(variables.my_var, 1);
});

const ROLL_EXAMPLES = Deno.env.get("ROLL_EXAMPLES_DIR");
Deno.test({
  name:
    "ROLL's own agentic example configs compose (set ROLL_EXAMPLES_DIR to a ROLL checkout's examples/)",
  ignore: !ROLL_EXAMPLES,
  async fn() {
    for (
      const name of [
        "agent_val_frozen_lake",
        "agent_val_frozen_lake_async",
        "agent_val_frozen_lake_gigpo",
        "agentic_val_sokoban",
      ]
    ) {
      const { config } = await loadConfig({
        configPath: `${ROLL_EXAMPLES}/qwen2.5-0.5B-agentic`,
        configName: name,
      });
      ok(config.train_env_manager.tags.length > 0, name);
    }
  },
});

Deno.test("hydra.run.dir places relative output paths under it, as Hydra's job folder does", async () => {
  const { config } = await loadConfig({
    overrides: ["hydra.run.dir=runs/${exp_name}", "output_dir=./out", "logging_dir=/abs/logs"],
  });
  equal(config.output_dir, "runs/agent_val_frozen_lake/out");
  equal(config.logging_dir, "/abs/logs");
  equal(config.tracker_kwargs.log_dir, "runs/agent_val_frozen_lake/out/tensorboard");
});

Deno.test("environments written under ROLL's custom_env (without custom_envs) are the run's", async () => {
  const dir = await writeTree({
    "run.yaml": [
      "defaults:",
      "  - workers: cpu",
      "  - _self_",
      "sequence_length: 512",
      "max_tokens_per_step: 16",
      "train_env_manager: {num_env_groups: 2, group_size: 2, tags: [Lake]}",
      "val_env_manager: {num_env_groups: 4, group_size: 1, tags: [Lake]}",
      "rollout_batch_size: 4",
      "val_batch_size: 4",
      "custom_env:",
      "  Lake: {env_type: frozen_lake, max_steps: 5}",
      "",
    ].join("\n"),
  });
  const { config } = await loadConfig({ configPath: dir, configName: "run" });
  equal(config.custom_envs.Lake!.env_type, "frozen_lake");
  equal(config.custom_envs.Lake!.max_steps, 5);
});

Deno.test("a value override may start like a URL scheme (a prompt template with a colon)", async () => {
  const template = "State: {current_observation} Reply with <answer>ACTION</answer>.";
  const { config } = await loadConfig({
    configName: "agent_val_frozen_lake_step",
    overrides: [`agent_template='${template}'`],
  });
  equal(config.custom_envs.FrozenLake!.agent_template, template);
});

Deno.test("the think config: step-wise, the current board alone, a think then the answer", async () => {
  const { config } = await loadConfig({ configName: "agent_val_frozen_lake_think" });
  const lake = config.custom_envs.FrozenLake!;
  equal(config.adv_estimator, "grpo");
  equal(config.kl_loss_coef, 0.025);
  equal(config.policy_gradient_tokens, "answer");
  equal(config.actor_train.training_args.lr_scheduler_type, "cosine");
  equal(lake.env_manager_cls, "step");
  equal(lake.history_length, 0);
  match(lake.agent_template ?? "", /<think>\.\.\.<\/think>.*<answer>ACTION<\/answer>/);
  equal(lake.env_config?.action_pattern, "<answer>(.*?)</answer>");
  equal(config.pretrain, "build/models/frozen_lake_think_base");
});
