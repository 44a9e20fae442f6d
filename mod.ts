/**
 * agentrl trains LLM agents with reinforcement learning on multi-turn
 * environments (FrozenLake, Sokoban, WebShop), after ROLL's agentic pipeline.
 * This entry point exports the config API (Hydra-style composition of the
 * YAML configs that ship in `configs/`, OmegaConf interpolation, overrides and
 * the validated {@linkcode AgenticConfig}), and three namespaces: `envs` (the
 * environments and their registry), `kernels` (the native kernels through
 * FFI: `kernels.Kernels.open()`, `kernels.Tensor`, and one function per op) and
 * `model` (the Qwen2 policy model, Hugging Face folders, tokenizers).
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
 * The native kernels through FFI (run `deno task build` first): contexts,
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
