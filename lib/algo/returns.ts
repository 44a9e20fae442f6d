/**
 * The backward recursions of one sample: GAE, discounted returns (REINFORCE) and
 * ROLL's segment-wise returns (agentic_reinforce). Rewards where the mask is 0 are
 * ignored (ROLL zeroes them first) and every output is 0 where the mask is 0.
 *
 * @module
 */
import { checkFinite, checkLength, checkMask, checkUnit } from "./_check.ts";
import type { RecursionPositions, TokenValues } from "./types.ts";

/** Per-token advantages and returns of one sample. */
export interface AdvantagesAndReturns {
  advantages: Float32Array;
  returns: Float32Array;
}

/**
 * Generalized advantage estimation (Schulman et al. 2016) over one sample:
 * delta_t = r_t + gamma V_{t+1} - V_t, A_t = delta_t + gamma lambda A_{t+1},
 * returns = A + V, with V = 0 after the last step. `positions` picks the steps
 * ({@linkcode RecursionPositions}): by default the generated tokens only, so
 * "t + 1" is the next generated token.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { gae } from "./returns.ts";
 * // one step: A = r - V = 1 - 0.25
 * const { advantages, returns } = gae([0, 1], [9, 0.25], [0, 1], 1, 0.95);
 * assert.deepEqual(Array.from(advantages), [0, 0.75]);
 * assert.deepEqual(Array.from(returns), [0, 1]);
 * ```
 */
export function gae(
  rewards: TokenValues,
  values: TokenValues,
  mask: TokenValues,
  gamma: number,
  lambd: number,
  positions: RecursionPositions = "response",
): AdvantagesAndReturns {
  checkInputs(rewards, mask, gamma);
  checkUnit(lambd, "lambd");
  checkLength(values, rewards.length, "values");
  const steps = stepsOf(mask, positions);
  const advantages = new Float32Array(rewards.length);
  const returns = new Float32Array(rewards.length);
  let nextValue = 0, lastAdv = 0;
  for (let k = steps.length - 1; k >= 0; k--) {
    const t = steps[k]!;
    const v = checkFinite(values[t], `values[${t}]`);
    const r = mask[t] ? rewards[t]! : 0;
    lastAdv = r + gamma * nextValue - v + gamma * lambd * lastAdv;
    nextValue = v;
    if (mask[t]) {
      advantages[t] = lastAdv;
      returns[t] = lastAdv + v;
    }
  }
  return { advantages, returns };
}

/**
 * Discounted reward-to-go G_t = r_t + gamma G_{t+1} (ROLL's `compute_reinforce_return`;
 * advantages = returns). With gamma = 1 and a single reward on the last token every
 * generated token gets that reward.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { discountedReturns } from "./returns.ts";
 * // generated tokens 1, 2, 4; the env token 3 is skipped: 2, 0.5 * 2, 0.25 * 2
 * const g = discountedReturns([0, 0, 0, 0, 2], [0, 1, 1, 0, 1], 0.5);
 * assert.deepEqual(Array.from(g), [0, 0.5, 1, 0, 2]);
 * ```
 */
export function discountedReturns(
  rewards: TokenValues,
  mask: TokenValues,
  gamma: number,
  positions: RecursionPositions = "response",
): Float32Array {
  checkInputs(rewards, mask, gamma);
  const out = new Float32Array(rewards.length);
  const steps = stepsOf(mask, positions);
  let g = 0;
  for (let k = steps.length - 1; k >= 0; k--) {
    const t = steps[k]!;
    g = (mask[t] ? rewards[t]! : 0) + gamma * g;
    if (mask[t]) out[t] = g;
  }
  return out;
}

/**
 * ROLL's agentic_reinforce return: each run of consecutive generated tokens (one
 * turn) is one step whose reward is the token reward at its last token; every token
 * of the run gets G_j = r_j + gamma G_{j+1}. Rewards elsewhere in a run are ignored.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { segmentReturns } from "./returns.ts";
 * // turns [1, 2] and [4]: reward 1 ends turn 1, reward 2 ends turn 2
 * const g = segmentReturns([0, 0, 1, 0, 2], [0, 1, 1, 0, 1], 0.5);
 * assert.deepEqual(Array.from(g), [0, 2, 2, 0, 2]);
 * ```
 */
export function segmentReturns(
  rewards: TokenValues,
  mask: TokenValues,
  gamma: number,
): Float32Array {
  checkInputs(rewards, mask, gamma);
  const out = new Float32Array(rewards.length);
  let g = 0;
  let end = rewards.length;
  while (end > 0) {
    while (end > 0 && !mask[end - 1]) end--;
    if (end === 0) break;
    let start = end - 1;
    while (start > 0 && mask[start - 1]) start--;
    g = rewards[end - 1]! + gamma * g;
    out.fill(g, start, end);
    end = start;
  }
  return out;
}

function checkInputs(rewards: TokenValues, mask: TokenValues, gamma: number): void {
  checkUnit(gamma, "gamma");
  checkLength(mask, rewards.length, "mask");
  checkMask(mask, "mask");
  for (let i = 0; i < rewards.length; i++) {
    if (mask[i]) checkFinite(rewards[i], `rewards[${i}]`);
  }
}

/** The positions a recursion steps through, in order. */
function stepsOf(mask: TokenValues, positions: RecursionPositions): number[] {
  const steps: number[] = [];
  if (positions === "all") { for (let t = 0; t < mask.length; t++) steps.push(t); }
  else if (positions === "response") {
    for (let t = 0; t < mask.length; t++) if (mask[t]) steps.push(t);
  } else {
    throw new RangeError(
      `Unknown recursion positions ${JSON.stringify(positions)}: expected response, all`,
    );
  }
  return steps;
}
