/**
 * Composes an agentrl config and prints a short summary of it.
 *
 * Usage (locally, or by URL from wherever the repository is served):
 *
 * ```sh
 * deno run --allow-read --allow-env examples/compose_config.ts [CONFIG_NAME] [OVERRIDES...]
 * deno run --allow-read --allow-env --allow-net=HOST --allow-import=HOST \
 *   https://HOST/agentrl/examples/compose_config.ts agent_val_sokoban seed=7 envs=step
 * ```
 *
 * CONFIG_NAME defaults to `agent_val_frozen_lake`; the other arguments are
 * Hydra-style overrides (`key=value`, `+key=value`, `~key`, `group=option`).
 * Notices go to stderr, one per line. A mistake in the config or an override
 * prints the located error and exits with status 2.
 *
 * The script imports only modules relative to this repository (and those use
 * explicit `npm:` specifiers), so it runs the same from disk or over HTTP: the
 * built-in configs are then fetched from beside the served modules, which is
 * what `--allow-net=HOST` is for. `--allow-env` is needed in both cases (for
 * `${oc.env:...}` and for npm:yaml, which reads `LOG_TOKENS`).
 *
 * @module
 */
import { ConfigError, loadConfig, toYaml } from "../mod.ts";

const [configName = "agent_val_frozen_lake", ...overrides] = Deno.args;

try {
  const { config, notices } = await loadConfig({ configName, overrides });
  for (const notice of notices) console.error(`note: ${notice}`);
  const summary = {
    exp_name: config.exp_name,
    seed: config.seed,
    adv_estimator: config.adv_estimator,
    train_tags: config.train_env_manager.tags,
    rollout_batch_size: config.rollout_batch_size,
  };
  console.log(toYaml(summary).trimEnd());
} catch (e) {
  if (!(e instanceof ConfigError)) throw e;
  console.error(e.format());
  Deno.exit(2);
}
