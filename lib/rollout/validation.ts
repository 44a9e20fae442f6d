/**
 * Validation as ROLL runs it: the val env manager's groups play
 * `val_batch_size` episodes from the same seeds every time (seeded from the
 * config's `seed`), with the validation sampling settings; the metrics come
 * back under `val/`.
 *
 * @module
 */
import type { AgenticConfig } from "../config/agentic_config.ts";
import type { ChatEncoder } from "../model/chat_template.ts";
import { withPrefix } from "./metrics.ts";
import { RolloutScheduler } from "./scheduler.ts";
import type { LostTrajectory, RolloutPolicy, TrajectorySample } from "./types.ts";

/** What {@linkcode runValidation} needs. */
export interface ValidationOptions {
  config: AgenticConfig;
  policy: RolloutPolicy;
  encoder: ChatEncoder;
  decodeForEnv: (ids: readonly number[]) => string;
  /** Keep frames for GIFs. */
  render?: boolean;
}

/** The validation episodes and their `val/...` metrics. */
export interface ValidationResult {
  samples: TrajectorySample[];
  metrics: Record<string, number>;
  lost: LostTrajectory[];
}

/** Plays the validation episodes once (a fresh scheduler: the same seeds every call). */
export async function runValidation(o: ValidationOptions): Promise<ValidationResult> {
  await using scheduler = new RolloutScheduler({
    config: o.config,
    mode: "val",
    policy: o.policy,
    encoder: o.encoder,
    decodeForEnv: o.decodeForEnv,
    render: o.render ?? false,
  });
  const size = o.config.val_batch_size;
  const batch = await scheduler.getBatch(size, 0);
  return { samples: batch.samples, metrics: withPrefix("val", batch.metrics), lost: batch.lost };
}
