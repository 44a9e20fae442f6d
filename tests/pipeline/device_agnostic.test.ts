// The pipeline on device "cuda" with the CPU library standing in for the CUDA
// one (AGENTRL_KERNELS_CUDA): its tensors report device "cuda", so every
// CPU-only shortcut (Tensor.view) would throw. With model_args.dtype fp32 the
// numbers must equal a CPU run's, since the same kernels do the math; with
// bf16 (workers=cuda's default) the bf16-weight entry points run. Subprocesses, because a process
// opens each device's library once.
import assert from "node:assert/strict";
import { CPU_LIBRARY } from "../../kernels/build.ts";
import { readJsonlMetrics } from "../../lib/track/jsonl.ts";

const MAIN = new URL("../../lib/cli/main.ts", import.meta.url).pathname;

async function train(outputDir: string, workers: string, dtype = "fp32"): Promise<string> {
  const overrides = [
    `workers=${workers}`,
    ...["actor_train", "actor_infer", "reference", "critic"].map((r) =>
      `${r}.model_args.dtype=${dtype}`
    ),
    `output_dir=${outputDir}`,
    "pretrain=null",
    "max_steps=2",
    "save_steps=2",
    "eval_steps=2",
    "adv_estimator=gae", // critic
    "use_kl_loss=true", // reference
    "rollout_batch_size=4",
    "train_env_manager.num_env_groups=1",
    "train_env_manager.num_groups_partition=[1]",
    "train_env_manager.group_size=4",
    "val_batch_size=2",
    "val_env_manager.num_env_groups=2",
    "val_env_manager.num_groups_partition=[2]",
    "max_actions_per_traj=2",
    "max_tokens_per_step=6",
    "actor_train.training_args.per_device_train_batch_size=2",
    "actor_train.training_args.gradient_accumulation_steps=2",
    "track_with=stdout",
    "render_save_dir=null",
  ];
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "train", ...overrides],
    env: { AGENTRL_KERNELS_CUDA: decodeURIComponent(CPU_LIBRARY.pathname), NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, `train (workers=${workers}) failed:\n${text}`);
  return text;
}

Deno.test("pipeline: device cuda (CPU library standing in) runs every role and matches the CPU run", async () => {
  const root = await Deno.makeTempDir();
  try {
    const cudaLog = await train(`${root}/cuda`, "cuda");
    assert.match(cudaLog, /device: cpu-\w+ \(GPU 0\)/);
    await train(`${root}/cpu`, "cpu");
    const a = await readJsonlMetrics(`${root}/cuda/metrics.jsonl`);
    const b = await readJsonlMetrics(`${root}/cpu/metrics.jsonl`);
    assert.equal(a.length, b.length);
    let compared = 0;
    for (let i = 0; i < a.length; i++) {
      for (const key of ["actor/pg_loss", "critic/vf_loss", "rollout/score/mean"]) {
        if (!(key in b[i]!)) continue;
        assert.ok(Number.isFinite(b[i]![key]), `${key} at row ${i}`);
        assert.equal(a[i]![key], b[i]![key], `${key} at row ${i}`);
        compared++;
      }
    }
    assert.ok(compared >= 6, `only ${compared} metrics compared`);
    assert.ok(Deno.statSync(`${root}/cuda/checkpoints/checkpoint-2`).isDirectory);
    // workers=cuda's own dtype (bf16: mixed precision) trains too, with its own numbers
    await train(`${root}/bf16`, "cuda", "bf16");
    const c = await readJsonlMetrics(`${root}/bf16/metrics.jsonl`);
    assert.equal(c.length, b.length);
    assert.ok(c.every((row) => !("actor/pg_loss" in row) || Number.isFinite(row["actor/pg_loss"])));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("eval: workers=cuda (CPU library standing in) gives the CPU run's metrics", async () => {
  const run = async (workers: string) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        MAIN,
        "eval",
        "--json",
        `workers=${workers}`,
        "pretrain=null",
        "val_batch_size=4",
        "val_env_manager.num_env_groups=4",
        "val_env_manager.num_groups_partition=[4]",
        "max_actions_per_traj=2",
        "max_tokens_per_step=6",
        "render_save_dir=null",
      ],
      env: { AGENTRL_KERNELS_CUDA: decodeURIComponent(CPU_LIBRARY.pathname), NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const err = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, `eval (workers=${workers}) failed:\n${err}`);
    return JSON.parse(new TextDecoder().decode(out.stdout)) as Record<string, number>;
  };
  const cuda = await run("cuda");
  const cpu = await run("cpu");
  assert.equal(cuda["val/rollout/num_trajectories"], 4);
  const outcome = (m: Record<string, number>) =>
    Object.fromEntries(Object.entries(m).filter(([k]) => !/time|_per_s/.test(k)));
  assert.deepEqual(outcome(cuda), outcome(cpu));
  assert.ok(Object.keys(outcome(cpu)).length >= 5);
});
