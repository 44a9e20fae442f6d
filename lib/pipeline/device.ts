/**
 * Which device the pipeline's roles run on, from the config's
 * `device_mapping` (ROLL's field): `~` (null) on every role means the CPU
 * kernels; a GPU list means the CUDA kernels on the list's first GPU. The
 * roles share one kernel context, so the roles that run must agree.
 *
 * @module
 */
import type { AgenticConfig } from "../config/mod.ts";
import { Kernels } from "../../ffi/mod.ts";
import type { Precision } from "../model/_mixed_precision.ts";
import { RolloutConfigError } from "../rollout/errors.ts";

/** Where the pipeline runs. */
export interface PipelineDevice {
  kind: "cpu" | "cuda";
  /** The CUDA device index (0 on the CPU). */
  index: number;
  /** A line to log when the mapping asks for more than this runs on. */
  notice: string | null;
}

/** The roles whose device_mapping decides: those that run. */
function runningRoles(useCritic: boolean, useReference: boolean) {
  const roles: ("actor_train" | "actor_infer" | "reference" | "critic")[] = [
    "actor_train",
    "actor_infer",
  ];
  if (useReference) roles.push("reference");
  if (useCritic) roles.push("critic");
  return roles;
}

/** Reads the device from the roles' device_mapping; throws a config error when they disagree. */
export function pipelineDevice(
  config: AgenticConfig,
  useCritic: boolean,
  useReference: boolean,
): PipelineDevice {
  const roles = runningRoles(useCritic, useReference);
  const maps = roles.map((r) => ({ role: r, map: config[r].device_mapping ?? null }));
  const onGpu = maps.filter((m) => m.map !== null && m.map.length > 0);
  if (onGpu.length === 0) return { kind: "cpu", index: 0, notice: null };
  const onCpu = maps.filter((m) => m.map === null || m.map.length === 0);
  if (onCpu.length > 0) {
    throw new RolloutConfigError(
      `device_mapping: ${onGpu.map((m) => m.role).join(", ")} map to GPUs but ` +
        `${onCpu.map((m) => m.role).join(", ")} to the CPU (~). The roles share one device ` +
        "here: give every running role a GPU list (e.g. workers=cuda) or none (workers=cpu).",
    );
  }
  const first = onGpu[0]!.map![0]!;
  const gpus = new Set(onGpu.flatMap((m) => m.map!));
  const notice = gpus.size > 1
    ? `device_mapping names ${gpus.size} GPUs (${[...gpus].join(", ")}); this runs every ` +
      `role on GPU ${first}`
    : null;
  return { kind: "cuda", index: first, notice };
}

/** Opens the kernel context for a pipeline device (CUDA: that GPU). */
export function openPipelineKernels(device: PipelineDevice): Kernels {
  if (device.kind === "cpu") return Kernels.open();
  Deno.env.set("AGENTRL_CUDA_DEVICE", String(device.index));
  return Kernels.open({ device: "cuda" });
}

/**
 * A role's `model_args.dtype` as the model's precision option. On CUDA: fp32 →
 * f32 weights; bf16 → mixed precision (a bf16 copy of fp32 master weights);
 * null → the device's default. The CPU kernels compute in fp32 whatever the
 * dtype. fp16 has no kernels: a clear error.
 */
export function rolePrecision(
  dtype: string | null,
  device: PipelineDevice["kind"],
): { precision?: Precision } {
  if (dtype === null) return {};
  if (device === "cpu" && dtype !== "fp16") return { precision: "f32" };
  if (dtype === "fp32") return { precision: "f32" };
  if (dtype === "bf16") return { precision: "bf16" };
  throw new RolloutConfigError(
    `model_args.dtype: ${dtype} is not supported by the kernels; expected bf16 (mixed ` +
      "precision: bf16 weights, fp32 master weights and accumulation) or fp32",
  );
}
