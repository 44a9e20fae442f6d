/**
 * agentrl trains LLM agents with reinforcement learning on multi-turn
 * environments (FrozenLake, Sokoban, WebShop), after ROLL's agentic pipeline.
 * This entry point exports the config API: Hydra-style composition of the
 * YAML configs that ship in `configs/`, OmegaConf interpolation, overrides and
 * the validated {@linkcode AgenticConfig}.
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
