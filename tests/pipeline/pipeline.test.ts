import assert from "node:assert/strict";
import { loadConfig } from "../../lib/config/load_config.ts";
import { runPipeline, saveOrSay } from "../../lib/pipeline/pipeline.ts";
import { RolloutError } from "../../lib/rollout/errors.ts";
import { acquireRunLock, RUN_LOCK_FILE } from "../../lib/pipeline/run_lock.ts";
import { readJsonlMetrics } from "../../lib/track/jsonl.ts";
import {
  latestCheckpoint,
  listCheckpoints,
  saveCheckpoint,
} from "../../lib/train/checkpoint_dir.ts";
import { existsSync } from "node:fs";
import { CheckpointError } from "../../lib/model/safetensors.ts";

/** A few-step run of the tiny default model (random weights) on FrozenLake. */
async function tinyConfig(outputDir: string, extra: string[] = []) {
  const { config } = await loadConfig({
    overrides: [
      `output_dir=${outputDir}`,
      "pretrain=null", // the tiny default architecture, random weights
      "max_steps=4",
      "save_steps=2",
      "eval_steps=2",
      "rollout_batch_size=8",
      "train_env_manager.num_env_groups=2",
      "train_env_manager.num_groups_partition=[2]",
      "train_env_manager.group_size=4",
      "val_batch_size=4",
      "val_env_manager.num_env_groups=4",
      "val_env_manager.num_groups_partition=[4]",
      "max_actions_per_traj=3",
      "max_tokens_per_step=6",
      // zero advantages (a random model scores alike) still train through the entropy term
      "entropy_loss_coef=0.01",
      "actor_train.training_args.per_device_train_batch_size=2",
      "actor_train.training_args.gradient_accumulation_steps=2",
      "track_with=tensorboard",
      "render_save_dir=null",
      ...extra,
    ],
  });
  return config;
}

Deno.test("pipeline: a few steps give finite metrics, checkpoints, tfevents, JSONL and a report; a resumed run matches an uninterrupted one", async () => {
  const root = await Deno.makeTempDir();
  const quiet = () => {};
  // a linear schedule whose warmup is half the run (warmup_ratio: 2 of 4 steps)
  const schedule = [
    "actor_train.training_args.lr_scheduler_type=linear",
    "actor_train.training_args.warmup_ratio=0.5",
  ];
  try {
    // uninterrupted: 4 steps
    const fullConfig = await tinyConfig(`${root}/full`, schedule);
    const full = await runPipeline(fullConfig, { log: quiet });
    assert.equal(full.steps, 4);
    const rows = await readJsonlMetrics(`${root}/full/metrics.jsonl`);
    assert.deepEqual(rows.map((r) => r.step), [0, 1, 2, 3, 4]);
    for (const r of rows.slice(0, 4)) {
      for (
        const key of [
          "rollout/score/mean",
          "actor/total_loss",
          "actor/grad_norm",
          "time/step_rollout",
        ]
      ) {
        assert.ok(Number.isFinite(r[key]), `${key} at step ${r.step}: ${r[key]}`);
      }
    }
    assert.ok(Number.isFinite(rows[0]!["val/env/FrozenLake/success"]));
    const lr = fullConfig.actor_train.training_args.learning_rate;
    assert.deepEqual(rows.slice(0, 4).map((r) => r["actor/lr"]), [0, lr / 2, lr, lr / 2]);
    assert.equal(latestCheckpoint(`${root}/full`)?.step, 4);
    const tb = [...Deno.readDirSync(`${root}/full/tensorboard`)].map((e) => e.name);
    assert.ok(tb.some((n) => n.includes("tfevents")), tb.join(", "));
    const html = await Deno.readTextFile(`${root}/full/report.html`);
    assert.ok(html.includes("<svg"));

    // interrupted after 2 steps, then resumed from the latest checkpoint
    const first = await runPipeline(await tinyConfig(`${root}/resumed`, schedule), {
      log: quiet,
      stopAfter: 2,
    });
    assert.equal(first.steps, 2);
    assert.equal(latestCheckpoint(`${root}/resumed`)?.step, 2);
    const second = await runPipeline(
      await tinyConfig(`${root}/resumed`, [...schedule, "resume_from_checkpoint=true"]),
      { log: quiet },
    );
    assert.equal(second.steps, 4);
    const resumed = await readJsonlMetrics(`${root}/resumed/metrics.jsonl`);
    assert.deepEqual(resumed.map((r) => r.step), [0, 1, 2, 3, 4]);
    // the clock goes on from the interrupted run's
    const elapsed = resumed.slice(0, 4).map((r) => r["time/elapsed"]!);
    assert.ok(elapsed.every((t, i) => i === 0 || t > elapsed[i - 1]!), elapsed.join(", "));
    for (const step of [2, 3]) {
      const a = rows.find((r) => r.step === step)!;
      const b = resumed.find((r) => r.step === step)!;
      for (
        const key of [
          "rollout/score/mean",
          "rollout/response_length/mean",
          "actor/total_loss",
          "actor/grad_norm",
          "actor/lr",
        ]
      ) {
        assert.equal(b[key], a[key], `${key} at step ${step}`);
      }
    }
    // the final weights agree bit for bit
    const weights = async (dir: string) =>
      await Deno.readFile(`${latestCheckpoint(dir)!.dir}/model/model.safetensors`);
    const [wa, wb] = [await weights(`${root}/full`), await weights(`${root}/resumed`)];
    assert.ok(wa.length > 1000);
    assert.ok(wa.every((v, i) => v === wb[i]) && wa.length === wb.length, "weights differ");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("pipeline: gigpo trains on trajectory-wise conversations and on step-wise turns; step_reinforce and gae on step-wise turns, the critic valuing each turn", async () => {
  const root = await Deno.makeTempDir();
  const quiet = () => {};
  try {
    for (const envs of ["traj", "step"]) {
      const config = await tinyConfig(`${root}/${envs}`, [
        `envs=${envs}`,
        "adv_estimator=gigpo",
        "max_steps=2",
        "eval_steps=100",
        // the token-level KL at coefficient 0 still loads the reference and measures the KL
        ...(envs === "traj" ? ["add_token_level_kl=true", "init_kl_coef=0", "reward_clip=5"] : []),
      ]);
      const run = await runPipeline(config, { log: quiet });
      assert.equal(run.steps, 2);
      const rows = await readJsonlMetrics(`${root}/${envs}/metrics.jsonl`);
      assert.deepEqual(rows.map((r) => r.step), [0, 1, 2]); // the last: final validation
      for (const r of rows.slice(0, 2)) {
        for (const key of ["actor/total_loss", "actor/grad_norm", "critic/anchor_state_frac"]) {
          assert.ok(Number.isFinite(r[key]), `${envs}: ${key} at step ${r.step}: ${r[key]}`);
        }
        // every group starts its episodes from one seed: the first turns share a state
        assert.ok(r["critic/anchor_state_frac"]! > 0);
        if (envs === "traj") {
          assert.ok(Number.isFinite(r["critic/kl"]), `critic/kl at step ${r.step}`);
          assert.equal(r["critic/kl_coef"], 0);
          assert.ok(Number.isFinite(r["critic/reward_clip_frac"]));
        }
      }
    }
    // step_reinforce: each turn's discounted return, normalized among its group's turns
    // (with one ratio per turn, and the step's samples cut to whole mini-batches)
    const sr = await tinyConfig(`${root}/sr`, [
      "adv_estimator=step_reinforce",
      "envs=step",
      "max_steps=2",
      "eval_steps=100",
      "ratio_type=segment",
      "batch_adjust_mode=delete",
    ]);
    assert.equal((await runPipeline(sr, { log: quiet })).steps, 2);
    const mini = sr.actor_train.training_args.per_device_train_batch_size *
      sr.actor_train.training_args.gradient_accumulation_steps;
    for (const r of (await readJsonlMetrics(`${root}/sr/metrics.jsonl`)).slice(0, 2)) {
      for (const key of ["actor/total_loss", "actor/grad_norm", "critic/advantages/mean"]) {
        assert.ok(Number.isFinite(r[key]), `step_reinforce: ${key} at step ${r.step}: ${r[key]}`);
      }
      assert.equal(r["system/batch_add_count"], 0);
      assert.ok(r["system/batch_remove_count"]! >= 0 && r["system/batch_remove_count"]! < mini);
    }
    // gae with step-wise turns: the critic values each turn from its own prompt; with two PPO
    // epochs the critic still makes one pass (ROLL's CriticWorker.train_step)
    const gae = await tinyConfig(`${root}/gae`, [
      "adv_estimator=gae",
      "envs=step",
      "max_steps=2",
      "eval_steps=100",
      "ppo_epochs=2",
    ]);
    assert.equal((await runPipeline(gae, { log: quiet })).steps, 2);
    const gaeRows = await readJsonlMetrics(`${root}/gae/metrics.jsonl`);
    const criticMini = gae.critic.training_args.per_device_train_batch_size *
      gae.critic.training_args.gradient_accumulation_steps;
    for (const r of gaeRows.slice(0, 2)) {
      for (const key of ["critic/vf_loss", "critic/values/mean", "actor/total_loss"]) {
        assert.ok(Number.isFinite(r[key]), `gae step-wise: ${key} at step ${r.step}: ${r[key]}`);
      }
      const turns = Math.round(r["rollout/num_turns/mean"]! * gae.rollout_batch_size);
      assert.equal(r["critic/num_updates"], Math.ceil(turns / criticMini), `step ${r.step}`);
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("pipeline: step_sample_reward decides what a step-wise GRPO turn trains on (its step's reward, or its episode's advantage)", async () => {
  const root = await Deno.makeTempDir();
  try {
    const quiet = () => {};
    const rows: Awaited<ReturnType<typeof readJsonlMetrics>> = [];
    for (const mode of ["step", "episode"]) {
      const config = await tinyConfig(`${root}/${mode}`, [
        "envs=step",
        "adv_estimator=grpo",
        `step_sample_reward=${mode}`,
        "reward_normalization.method=identity",
        "max_steps=1",
        "eval_steps=0",
      ]);
      assert.equal((await runPipeline(config, { log: quiet })).steps, 1);
      rows.push((await readJsonlMetrics(`${root}/${mode}/metrics.jsonl`))[0]!);
    }
    const [step, episode] = [rows[0]!, rows[1]!];
    // the same episodes (the same seeds and weights before the first update), other credit: a
    // random model's turns carry their own format penalties in one, their episode's sum in the
    // other (identity normalization: the rewards as they are)
    assert.equal(step["critic/score/mean"], episode["critic/score/mean"]);
    assert.ok(Number.isFinite(step["actor/total_loss"]!));
    assert.notEqual(step["critic/advantages/mean"], episode["critic/advantages/mean"]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("pipeline: policy_gradient_tokens=answer with a KL loss runs (the advantage on the answers only)", async () => {
  const root = await Deno.makeTempDir();
  try {
    const config = await tinyConfig(root, [
      "envs=step",
      "policy_gradient_tokens=answer",
      "use_kl_loss=true",
      "kl_loss_coef=0.1",
      "max_steps=2",
      "eval_steps=100",
    ]);
    assert.equal(config.policy_gradient_tokens, "answer");
    assert.equal((await runPipeline(config, { log: () => {} })).steps, 2);
    const rows = await readJsonlMetrics(`${root}/metrics.jsonl`);
    for (const r of rows.slice(0, 2)) {
      for (const key of ["actor/total_loss", "actor/kl_loss", "critic/advantages/mean"]) {
        assert.ok(Number.isFinite(r[key]), `${key} at step ${r.step}: ${r[key]}`);
      }
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("pipeline: an output_dir holding a run is refused unless resumed; max_ckpt_to_keep prunes; resume past max_steps and a restart with no checkpoint are handled", async () => {
  const root = await Deno.makeTempDir();
  const quiet = () => {};
  const steps = (dir: string) => listCheckpoints(dir).map((c) => c.step);
  const rowSteps = async (dir: string) =>
    (await readJsonlMetrics(`${dir}/metrics.jsonl`)).map((r) => r.step);
  const few = ["eval_steps=100", "save_steps=1", "max_ckpt_to_keep=1"];
  try {
    const dir = `${root}/run`;
    await runPipeline(await tinyConfig(dir, [...few, "max_steps=2"]), { log: quiet });
    assert.deepEqual(steps(dir), [2]);
    // a fresh start there would mix two runs
    await assert.rejects(
      async () => await runPipeline(await tinyConfig(dir, [...few, "max_steps=2"]), { log: quiet }),
      (e: Error) => e instanceof CheckpointError && /already holds a run/.test(e.message),
    );
    // resumed from checkpoint-2, which the next save prunes: checkpoint-3 still has a tokenizer;
    // an interrupted save's leftover goes at start
    const leftover = `${dir}/checkpoints/checkpoint-5.tmp-0a1b2c3d`;
    await Deno.mkdir(leftover);
    const said: string[] = [];
    await runPipeline(
      await tinyConfig(dir, [...few, "max_steps=3", "resume_from_checkpoint=true"]),
      { log: (l) => said.push(l) },
    );
    // the change from the run that saved checkpoint-2 is named
    assert.ok(said.some((l) => /resuming with 1 config change/.test(l)), said.join("\n"));
    assert.ok(said.includes("  max_steps: 2 -> 3"), said.join("\n"));
    assert.deepEqual(steps(dir), [3]);
    assert.ok(Deno.statSync(`${dir}/checkpoints/checkpoint-3/model/tokenizer.json`).isFile);
    assert.deepEqual(await rowSteps(dir), [0, 1, 2, 3]);
    assert.ok(said.includes(`removed ${leftover}: left by an interrupted save`), said.join("\n"));
    assert.ok(!existsSync(leftover));
    // resumed by path from checkpoint-3 with a later step's checkpoint there: set aside
    await saveCheckpoint(dir, 9, async () => {});
    const branch: string[] = [];
    await runPipeline(
      await tinyConfig(dir, [
        ...few,
        "max_steps=4",
        `resume_from_checkpoint=${dir}/checkpoints/checkpoint-3`,
      ]),
      { log: (l) => branch.push(l) },
    );
    assert.ok(
      branch.some((l) => /set aside .*checkpoint-9\.superseded-/.test(l)),
      branch.join("\n"),
    );
    assert.deepEqual(steps(dir), [4]);
    assert.deepEqual(await rowSteps(dir), [0, 1, 2, 3, 4]);
    // each run released its lock; a run holding it stops the next
    assert.ok(!existsSync(`${dir}/${RUN_LOCK_FILE}`));
    {
      using _held = acquireRunLock(dir);
      await assert.rejects(
        async () =>
          await runPipeline(
            await tinyConfig(dir, [...few, "max_steps=5", "resume_from_checkpoint=true"]),
            { log: quiet },
          ),
        (e: Error) =>
          e instanceof CheckpointError &&
          new RegExp(`is in use by another training run \\(process ${Deno.pid},`).test(e.message),
      );
    }
    await assert.rejects(
      async () =>
        await runPipeline(
          await tinyConfig(dir, [...few, "max_steps=2", "resume_from_checkpoint=true"]),
          { log: quiet },
        ),
      (e: Error) => e instanceof CheckpointError && /past max_steps 2/.test(e.message),
    );
    // stopped before any checkpoint, then resumed: the run restarts and its rows replace the old
    const early = `${root}/early`;
    await runPipeline(await tinyConfig(early, ["eval_steps=100", "save_steps=100"]), {
      log: quiet,
      stopAfter: 1,
    });
    assert.deepEqual(steps(early), []);
    assert.deepEqual(await rowSteps(early), [0]);
    const notes: string[] = [];
    await runPipeline(
      await tinyConfig(early, [
        "eval_steps=100",
        "save_steps=100",
        "max_steps=1",
        "resume_from_checkpoint=true",
      ]),
      { log: (l) => notes.push(l) },
    );
    assert.ok(notes.some((l) => /holds no complete checkpoint/.test(l)), notes.join("\n"));
    assert.deepEqual(await rowSteps(early), [0, 1]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a checkpoint save that fails (a full disk) says which save and what is intact; agentrl's errors pass", async () => {
  const full = () => Promise.reject(new Error("No space left on device (os error 28)"));
  await assert.rejects(
    () => saveOrSay("out/run", 4, full),
    (e: Error) => {
      assert.ok(e instanceof RolloutError, String(e));
      assert.match(
        e.message,
        /^Saving the checkpoint of step 4 in out\/run\/checkpoints failed: No space left on device \(os error 28\) \(the checkpoints saved before it are intact/,
      );
      return true;
    },
  );
  const own = new CheckpointError("damaged", { file: "x" });
  await assert.rejects(() => saveOrSay("out/run", 4, () => Promise.reject(own)), (e) => e === own);
  assert.equal(await saveOrSay("out/run", 4, () => Promise.resolve(7)), 7);
});
