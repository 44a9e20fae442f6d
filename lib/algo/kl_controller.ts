/**
 * KL coefficient controllers (ROLL's `get_kl_controller`): a fixed coefficient, or
 * the adaptive one of Ziegler et al. 2019, which after each batch moves the
 * coefficient toward the target KL:
 * coef *= 1 + clip(KL / target - 1, -0.2, 0.2) * n_steps / horizon,
 * with n_steps the batch size. Both serialize to JSON for checkpoints.
 *
 * @module
 */
import { checkFinite, checkPositive } from "./_check.ts";

/** A controller's saved state (what `toJSON` gives and {@linkcode klControllerFromJSON} takes). */
export type KlControllerState =
  | { kind: "fixed"; value: number }
  | { kind: "adaptive"; value: number; target: number; horizon: number };

/** What the pipeline needs of a KL controller. */
export interface KlController {
  /** The current coefficient. */
  readonly value: number;
  /** Feeds the batch's measured KL and its number of samples. */
  update(current: number, nSteps: number): void;
  /** The state to checkpoint. */
  toJSON(): KlControllerState;
}

/** Bound on the proportional error of the adaptive controller. */
const MAX_ERROR = 0.2;

/**
 * A coefficient that never changes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FixedKlController } from "./kl_controller.ts";
 * const c = new FixedKlController(0.1);
 * c.update(5, 64);
 * assert.equal(c.value, 0.1);
 * ```
 */
export class FixedKlController implements KlController {
  #value: number;

  /** A controller that always reports `value` (>= 0). */
  constructor(value: number) {
    this.#value = checkCoef(value);
  }

  /** The coefficient. */
  get value(): number {
    return this.#value;
  }

  /** Checks its arguments and changes nothing. */
  update(current: number, nSteps: number): void {
    checkFinite(current, "current KL");
    checkFinite(nSteps, "nSteps");
  }

  /** `{ kind: "fixed", value }`. */
  toJSON(): KlControllerState {
    return { kind: "fixed", value: this.#value };
  }
}

/**
 * The adaptive controller: coef *= 1 + clip(KL / target - 1, -0.2, 0.2) * nSteps / horizon.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AdaptiveKlController } from "./kl_controller.ts";
 * const c = new AdaptiveKlController(0.2, 0.1, 1000);
 * c.update(0.11, 100); // error 0.1 -> coef * (1 + 0.1 * 100 / 1000)
 * assert.ok(Math.abs(c.value - 0.202) < 1e-12);
 * ```
 */
export class AdaptiveKlController implements KlController {
  #value: number;
  readonly #target: number;
  readonly #horizon: number;

  /** Starts at `initKlCoef` (>= 0), aiming at `target` (> 0) over `horizon` (> 0) samples. */
  constructor(initKlCoef: number, target: number, horizon: number) {
    this.#value = checkCoef(initKlCoef);
    this.#target = checkPositive(target, "target KL");
    this.#horizon = checkPositive(horizon, "KL horizon");
  }

  /** The current coefficient. */
  get value(): number {
    return this.#value;
  }

  /** The target KL. */
  get target(): number {
    return this.#target;
  }

  /** The horizon (in samples). */
  get horizon(): number {
    return this.#horizon;
  }

  /** Moves the coefficient by the batch's KL `current` measured over `nSteps` samples. */
  update(current: number, nSteps: number): void {
    checkFinite(current, "current KL");
    checkFinite(nSteps, "nSteps");
    if (nSteps < 0) throw new RangeError(`nSteps must be >= 0, got ${nSteps}`);
    const error = Math.min(MAX_ERROR, Math.max(-MAX_ERROR, current / this.#target - 1));
    this.#value *= 1 + error * nSteps / this.#horizon;
  }

  /** `{ kind: "adaptive", value, target, horizon }`. */
  toJSON(): KlControllerState {
    return { kind: "adaptive", value: this.#value, target: this.#target, horizon: this.#horizon };
  }
}

/** ROLL's KL settings: `init_kl_coef`, `target_kl`, `kl_horizon`. */
export interface KlControllerOptions {
  initKlCoef: number;
  /** null or absent: a fixed coefficient. */
  targetKl?: number | null;
  /** Needed when targetKl is set. */
  klHorizon?: number | null;
}

/**
 * ROLL's choice: adaptive when a target KL is set, fixed otherwise.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createKlController } from "./kl_controller.ts";
 * assert.equal(createKlController({ initKlCoef: 0.2 }).toJSON().kind, "fixed");
 * const c = createKlController({ initKlCoef: 0.2, targetKl: 0.1, klHorizon: 10000 });
 * assert.equal(c.toJSON().kind, "adaptive");
 * ```
 */
export function createKlController(options: KlControllerOptions): KlController {
  const target = options.targetKl ?? null;
  if (target === null) return new FixedKlController(options.initKlCoef);
  const horizon = options.klHorizon ?? null;
  if (horizon === null) {
    throw new RangeError("An adaptive KL controller (targetKl set) needs klHorizon");
  }
  return new AdaptiveKlController(options.initKlCoef, target, horizon);
}

/**
 * Rebuilds a controller from its `toJSON()` state (e.g. a checkpoint).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AdaptiveKlController, klControllerFromJSON } from "./kl_controller.ts";
 * const c = new AdaptiveKlController(0.2, 0.1, 1000);
 * c.update(1, 50);
 * const back = klControllerFromJSON(JSON.parse(JSON.stringify(c)));
 * assert.equal(back.value, c.value);
 * ```
 */
export function klControllerFromJSON(state: unknown): KlController {
  if (typeof state !== "object" || state === null) {
    throw new TypeError(`KL controller state must be an object, got ${JSON.stringify(state)}`);
  }
  const s = state as Record<string, unknown>;
  if (s.kind === "fixed") return new FixedKlController(s.value as number);
  if (s.kind === "adaptive") {
    return new AdaptiveKlController(s.value as number, s.target as number, s.horizon as number);
  }
  throw new RangeError(
    `Unknown KL controller kind ${JSON.stringify(s.kind)}: expected "fixed" or "adaptive"`,
  );
}

function checkCoef(value: number): number {
  checkFinite(value, "KL coefficient");
  if (value < 0) throw new RangeError(`KL coefficient must be >= 0, got ${value}`);
  return value;
}
