/**
 * Learning-rate schedules with Hugging Face transformers' semantics
 * (`get_scheduler`): a linear warmup from 0 to the peak over `warmupSteps`,
 * then constant, a linear decay to 0, or a half-cosine decay to 0 at
 * `totalSteps`. `constant` has no warmup (as in transformers, which ignores
 * `warmup_steps` for it); `constant_with_warmup` has one.
 *
 * Steps count the steps already made, as transformers' `LambdaLR` does (the scheduler steps
 * after the optimizer): the first uses `lrAt(0, ...)`, which is 0 when there is a warmup. The
 * pipeline counts its own steps (every update of a step at that step's rate), where ROLL's
 * scheduler counts optimizer updates (README "Where training differs from ROLL").
 *
 * @example
 * ```ts
 * import { lrAt } from "./lr_schedule.ts";
 * const s = { learningRate: 1e-3, warmupSteps: 10, totalSteps: 110, type: "linear" } as const;
 * console.log(lrAt(5, s), lrAt(10, s), lrAt(60, s)); // 0.0005 0.001 0.0005
 * ```
 *
 * @module
 */

/** The schedule names accepted (`training_args.lr_scheduler_type`). */
export const LR_SCHEDULE_TYPES = ["constant", "constant_with_warmup", "linear", "cosine"] as const;

/** One of {@linkcode LR_SCHEDULE_TYPES}. */
export type LrScheduleType = (typeof LR_SCHEDULE_TYPES)[number];

/** The settings of a schedule. */
export interface LrSchedule {
  /** The peak learning rate (`training_args.learning_rate`). */
  learningRate: number;
  /** Updates of linear warmup from 0 (ignored by `constant`). */
  warmupSteps: number;
  /** Updates in the whole run: linear and cosine reach 0 there (unused by the constants). */
  totalSteps: number;
  /** The schedule's shape. */
  type: LrScheduleType | string;
}

function expectCount(n: number, name: string, min: number): void {
  if (!Number.isInteger(n) || n < min) {
    throw new RangeError(`${name} must be an integer >= ${min}, got ${n}`);
  }
}

/**
 * The multiplier of the peak learning rate after `step` updates (transformers'
 * `lr_lambda`). Past `totalSteps`, linear and cosine stay at 0 (transformers'
 * cosine would rise again).
 *
 * @example
 * ```ts
 * import { lrFactor } from "./lr_schedule.ts";
 * console.log(lrFactor(15, { warmupSteps: 10, totalSteps: 20, type: "cosine" })); // ≈ 0.5
 * ```
 */
export function lrFactor(step: number, s: Omit<LrSchedule, "learningRate">): number {
  expectCount(step, "step", 0);
  expectCount(s.warmupSteps, "warmupSteps", 0);
  if (!(LR_SCHEDULE_TYPES as readonly string[]).includes(s.type)) {
    throw new RangeError(
      `Unknown learning-rate schedule '${s.type}': expected one of ${LR_SCHEDULE_TYPES.join(", ")}`,
    );
  }
  if (s.type === "constant") return 1;
  if (step < s.warmupSteps) return step / Math.max(1, s.warmupSteps);
  if (s.type === "constant_with_warmup") return 1;
  expectCount(s.totalSteps, "totalSteps", 1);
  const progress = Math.min(1, (step - s.warmupSteps) / Math.max(1, s.totalSteps - s.warmupSteps));
  if (s.type === "linear") return Math.max(0, 1 - progress);
  return Math.max(0, 0.5 * (1 + Math.cos(Math.PI * progress)));
}

/**
 * The learning rate of the update made after `step` earlier updates.
 *
 * @example
 * ```ts
 * import { lrAt } from "./lr_schedule.ts";
 * const s = { learningRate: 1e-6, warmupSteps: 0, totalSteps: 100, type: "constant" };
 * console.log(lrAt(0, s), lrAt(99, s)); // 0.000001 0.000001
 * ```
 */
export function lrAt(step: number, s: LrSchedule): number {
  if (!Number.isFinite(s.learningRate) || s.learningRate < 0) {
    throw new RangeError(
      `learningRate must be a finite non-negative number, got ${s.learningRate}`,
    );
  }
  return s.learningRate * lrFactor(step, s);
}

/**
 * The warmup length transformers uses: `warmup_steps` when positive, else
 * `ceil(warmup_ratio * total_steps)`.
 *
 * @example
 * ```ts
 * import { resolveWarmupSteps } from "./lr_schedule.ts";
 * console.log(resolveWarmupSteps({ warmupSteps: 0, warmupRatio: 0.03, totalSteps: 200 })); // 6
 * ```
 */
export function resolveWarmupSteps(
  o: { warmupSteps: number; warmupRatio: number; totalSteps: number },
): number {
  expectCount(o.warmupSteps, "warmupSteps", 0);
  if (o.warmupSteps > 0) return o.warmupSteps;
  if (!(o.warmupRatio >= 0 && o.warmupRatio <= 1)) {
    throw new RangeError(`warmupRatio must be in [0, 1], got ${o.warmupRatio}`);
  }
  expectCount(o.totalSteps, "totalSteps", 0);
  return Math.ceil(o.warmupRatio * o.totalSteps);
}
