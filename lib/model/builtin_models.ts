/**
 * Models the project makes itself, built on first use: a config whose
 * `pretrain` names `build/models/frozen_lake_base` (the embedded default)
 * gets the FrozenLake base model built there (about two minutes on 2 cores, once;
 * again only when its recipe changes); `build/models/frozen_lake_step_base`
 * (`agent_val_frozen_lake_step`) the same recipe plus the step-wise prompts
 * (about three minutes).
 *
 * @module
 */
import {
  defaultFrozenLakeStepEntry,
  ensureFrozenLakeBaseModel,
  FROZEN_LAKE_BASE_DIR,
  FROZEN_LAKE_STEP_BASE_DIR,
} from "./make_base_model.ts";

function normalize(path: string): string {
  return path.replace(/^\.\//, "").replace(/\/+$/, "");
}

/** Builds `path` when it names a built-in model that is missing or stale; returns `path`. */
export async function prepareModelPath(
  path: string | null,
  log: (line: string) => void = (l) => console.error(l),
): Promise<string | null> {
  if (path === null) return path;
  const stepWise = normalize(path) === normalize(FROZEN_LAKE_STEP_BASE_DIR);
  if (!stepWise && normalize(path) !== normalize(FROZEN_LAKE_BASE_DIR)) return path;
  let announced = false;
  const result = await ensureFrozenLakeBaseModel(path, {
    ...(stepWise ? { stepEntry: await defaultFrozenLakeStepEntry() } : {}),
    log: (line) => {
      if (!announced) {
        log(
          `building the FrozenLake base model in ${path} (once; two to three minutes on 2 cores)`,
        );
        announced = true;
      }
      log(`  ${line}`);
    },
  });
  if (result.built) log(`built ${result.dir}`);
  return path;
}
