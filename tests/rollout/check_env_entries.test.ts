// Env entries checked before the model loads, their errors naming the custom_envs entry.
import { equal, match, rejects } from "node:assert/strict";
import { EnvConfigError } from "../../envs/errors.ts";
import { loadConfig } from "../../lib/config/mod.ts";
import { checkEnvEntries, locateEnvError } from "../../lib/rollout/check_env_entries.ts";

const configWith = async (...overrides: string[]) => (await loadConfig({ overrides })).config;
type Config = Awaited<ReturnType<typeof configWith>>;
const checkEnv = (c: Config) => checkEnvEntries(c, c.train_env_manager.tags);

Deno.test("an env entry's bad type or config is an EnvConfigError naming custom_envs.<tag>", async () => {
  await checkEnv(await configWith()); // the default config's entries are fine
  await rejects(
    checkEnv(await configWith("custom_envs.FrozenLake.env_config.size=abc")),
    (e: unknown) =>
      e instanceof EnvConfigError &&
      /^custom_envs\.FrozenLake: Invalid env_config for env_type 'frozen_lake': env_config\.size/
        .test(e.message),
  );
  await rejects(
    checkEnv(await configWith("custom_envs.FrozenLake.env_type=frozen_lak")),
    (e: unknown) =>
      e instanceof EnvConfigError && /^custom_envs\.FrozenLake: Unknown env_type/.test(e.message) &&
      e.hint === "did you mean 'frozen_lake'?",
  );
  await rejects(
    checkEnv(await configWith("+custom_envs.FrozenLake.env_config.sise=5")),
    /custom_envs\.FrozenLake: Unknown env_config key 'sise'/,
  );
  // only the tags asked about: an entry no manager of the run opens is not checked
  const unused = await configWith(
    "+custom_envs.Lake2.env_type=frozen_lake",
    "+custom_envs.Lake2.env_config.size=abc",
  );
  await checkEnv(unused);
  await rejects(checkEnvEntries(unused, ["Lake2"]), /custom_envs\.Lake2: Invalid env_config/);
  // a module path is left to the env's creation (its import may have effects)
  await checkEnv(await configWith("custom_envs.FrozenLake.env_type=./no_such_env.ts"));
});

Deno.test("locateEnvError prefixes once, keeps the hint, and passes other errors through", () => {
  const e = locateEnvError(new EnvConfigError("Unknown env_type 'x'", "did you mean 'y'?"), "T");
  equal(e instanceof EnvConfigError && e.message, "custom_envs.T: Unknown env_type 'x'");
  equal(e instanceof EnvConfigError && e.hint, "did you mean 'y'?");
  equal((locateEnvError(e, "T") as Error).message, "custom_envs.T: Unknown env_type 'x'");
  const other = new TypeError("boom");
  equal(locateEnvError(other, "T"), other);
  match(String((e as EnvConfigError).format()), /^Env config error: custom_envs\.T: /);
});
