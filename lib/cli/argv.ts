/**
 * Rewrites Hydra's spellings of the config flags to this CLI's:
 * `--config_path`/`-cp` → `--config-path`, `--config_name`/`-cn` → `--config-name`.
 */
export function normalizeArgv(argv: readonly string[]): string[] {
  return argv.map((arg) => {
    const m = /^(--config_path|--config_name|-cp|-cn)(=.*)?$/.exec(arg);
    if (!m) return arg;
    const flag = m[1] === "--config_path" || m[1] === "-cp" ? "--config-path" : "--config-name";
    return flag + (m[2] ?? "");
  });
}
