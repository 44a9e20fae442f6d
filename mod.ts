/**
 * agentrl trains LLM agents with reinforcement learning on multi-turn
 * environments (FrozenLake, Sokoban, WebShop), after ROLL's agentic pipeline.
 * This entry point exports the config API (Hydra-style composition of the
 * YAML configs that ship in `configs/`, OmegaConf interpolation, overrides and
 * the validated {@linkcode AgenticConfig}), and nine namespaces: `envs` (the
 * environments and their registry), `kernels` (the native kernels through
 * FFI: `kernels.Kernels.open()`, `kernels.Tensor`, and one function per op),
 * `model` (the policy model: Qwen2.5, Qwen3, Llama and Mistral checkpoints; Hugging Face
 * folders, tokenizers), `infer`
 * (the generation engine), `rollout` (env groups and the rollout scheduler),
 * `algo` (advantages, KL control, reward normalization), `train` (the actor and
 * critic updates, optimizer, checkpoints), `track` (metrics, TensorBoard, the
 * report) and `pipeline` (the whole training run).
 *
 * Imported by URL, the kernels are not beside the module: build them in a
 * checkout (`deno task build`) and set `AGENTRL_KERNELS_CPU` (or
 * `AGENTRL_KERNELS_CUDA`) to the library's path.
 *
 * @example
 * ```ts
 * import { ConfigError, loadConfig } from "./mod.ts";
 *
 * try {
 *   const { config } = await loadConfig({
 *     configName: "agent_val_frozen_lake",
 *     overrides: ["seed=7", "envs=step"],
 *   });
 *   console.log(config.exp_name, config.seed); // agent_val_frozen_lake 7
 * } catch (e) {
 *   if (e instanceof ConfigError) console.error(e.format());
 *   else throw e;
 * }
 * ```
 *
 * @module
 */
export * from "./lib/config/mod.ts";
/**
 * The environments: `envs.createEnv(type, config)`, `envs.registerEnv`, FrozenLake,
 * Sokoban, Countdown, WebShop, action parsing, metrics and frame writers.
 *
 * @example
 * ```ts
 * import { envs } from "./mod.ts";
 * const env = await envs.createEnv("frozen_lake", { size: 4, is_slippery: false });
 * console.log((await env.reset(0)).observation);
 * ```
 */
export * as envs from "./envs/mod.ts";
/**
 * The native kernels through FFI (run `deno task build` first; imported by URL,
 * set `AGENTRL_KERNELS_CPU` to the built library): contexts,
 * tensors and ops such as `kernels.linearForward` or `kernels.logprobForward`.
 *
 * @example
 * ```ts
 * import { kernels } from "./mod.ts";
 * using k = kernels.Kernels.open({ threads: 1 });
 * using x = kernels.Tensor.from(k, new Float32Array([1, 2, 3, 4]), [2, 2]);
 * console.log(kernels.sumSquares(k, x)); // 30
 * ```
 */
export * as kernels from "./ffi/mod.ts";
/**
 * The policy model: `model.Qwen2Model`, `model.loadPretrained(kernels, dir)`,
 * safetensors, tokenizers and chat templates.
 *
 * @example
 * ```ts
 * import { model } from "./mod.ts";
 * console.log(model.QWEN2_5_CHAT_TEMPLATE.includes("<|im_start|>")); // true
 * ```
 */
export * as model from "./lib/model/mod.ts";
/**
 * The generation engine (actor_infer): continuous batching over a Qwen2 model.
 *
 * @example
 * ```ts
 * import { infer } from "./mod.ts";
 * console.log(typeof infer.GenerationEngine); // "function"
 * ```
 */
export * as infer from "./lib/infer/mod.ts";
/**
 * Environment groups and the asynchronous rollout: `rollout.RolloutScheduler`,
 * `rollout.runValidation`, the engine as a policy, ROLL's seeding and metrics.
 *
 * @example
 * ```ts
 * import { rollout } from "./mod.ts";
 * // members of a group share a start state: group seed + episode id
 * const g = rollout.groupSeed(42, "train", 3);
 * console.log(rollout.episodeSeed(g, 0) === g); // true
 * ```
 */
export * as rollout from "./lib/rollout/mod.ts";
/**
 * Advantages, reward normalization, KL penalties and controllers, loss aggregation.
 *
 * @example
 * ```ts
 * import { algo } from "./mod.ts";
 * // two members of one group: scores 1 and 0, normalized within the group
 * const r = algo.normalizeScores([1, 0], ["g", "g"], { method: "mean_std" });
 * console.log(Array.from(r).map((x) => x.toFixed(2))); // [ "0.71", "-0.71" ]
 * ```
 */
export * as algo from "./lib/algo/mod.ts";
/**
 * Trainer roles and their building blocks: the actor and critic trainers,
 * AdamW, learning-rate schedules, micro-batches, checkpoint folders.
 *
 * @example
 * ```ts
 * import { train } from "./mod.ts";
 * const lr = train.lrAt(5, { learningRate: 1e-4, warmupSteps: 10, totalSteps: 100, type: "cosine" });
 * console.log(lr.toExponential(1)); // "5.0e-5"
 * ```
 */
export * as train from "./lib/train/mod.ts";
/**
 * Tracking: TensorBoard event files, metrics.jsonl, the HTML report, progress.
 *
 * @example
 * ```ts
 * import { track } from "./mod.ts";
 * console.log(track.crc32c(new TextEncoder().encode("123456789")).toString(16)); // "e3069283"
 * ```
 */
export * as track from "./lib/track/mod.ts";
/**
 * The training pipeline: `pipeline.runPipeline(config)`.
 *
 * @example
 * ```ts ignore
 * import { loadConfig, pipeline } from "./mod.ts";
 * const { config } = await loadConfig({ overrides: ["max_steps=2"] });
 * await pipeline.runPipeline(config);
 * ```
 */
export * as pipeline from "./lib/pipeline/mod.ts";
