/**
 * Merging duplicate training samples. Step-wise rollouts repeat themselves: a
 * group's episodes start from one state, and a near-uniform policy over four
 * actions gives at most four distinct (prompt, response) pairs there, so a
 * group of 16 trains the same sequence about four times over. Merged, each
 * distinct sequence is trained once with a weight (its loss mask scaled by the
 * count), which gives the same loss and gradient as the copies for the
 * `token-mean` and `seq-mean-token-sum-norm` aggregations: the PPO objective is
 * linear in the advantage for a given sign, so copies whose advantages share
 * their signs token by token merge into one with their mean advantage.
 *
 * @example
 * ```ts
 * import { mergeDuplicateSamples } from "./dedup.ts";
 * const sample = (a: number) => ({
 *   tokens: Int32Array.of(5, 6, 7), responseMask: Uint8Array.of(0, 1, 1),
 *   advantages: Float32Array.of(0, a, a), oldLogprobs: new Float32Array(3),
 * });
 * const { samples, groups } = mergeDuplicateSamples([sample(1), sample(3), sample(-1)]);
 * console.log(samples.length, samples[0]!.weight, samples[0]!.advantages[1]); // 2 2 2
 * console.log(groups); // [[0, 1], [2]]
 * ```
 *
 * @module
 */
import type { LossAggMode } from "../algo/types.ts";
import type { ActorSample } from "./actor.ts";

/** Aggregations under which a weighted sample equals its copies exactly. */
export function mergesExactly(aggMode: LossAggMode): boolean {
  return aggMode === "token-mean" || aggMode === "seq-mean-token-sum-norm";
}

/** The merged samples and, for each, the input indices it stands for. */
export interface MergedSamples {
  samples: ActorSample[];
  groups: number[][];
}

function key(s: ActorSample, sequenceId: number | undefined): string {
  const signs = Array.from(s.advantages, (a, i) => (s.responseMask[i] ? Math.sign(a) + 1 : 3));
  const tokens = sequenceId ?? s.tokens.join(",");
  return `${tokens}|${s.responseMask.join("")}|${signs.join("")}`;
}

/**
 * Merges samples with the same tokens, response mask and advantage signs into
 * one of weight = their total weight and advantages = their weighted mean
 * (old and reference log-probs are the first copy's: one model gives one
 * sequence one set). Order follows each group's first sample. `sequenceIds`
 * ({@linkcode distinctSequences}' index, when already at hand) names each
 * sample's tokens, so they are not compared again.
 */
export function mergeDuplicateSamples(
  samples: readonly ActorSample[],
  sequenceIds?: readonly number[],
): MergedSamples {
  const byKey = new Map<string, number>();
  const groups: number[][] = [];
  samples.forEach((s, i) => {
    const k = key(s, sequenceIds?.[i]);
    const g = byKey.get(k);
    if (g === undefined) {
      byKey.set(k, groups.length);
      groups.push([i]);
    } else groups[g]!.push(i);
  });
  const merged = groups.map((g) => {
    const first = samples[g[0]!]!;
    if (g.length === 1) return first;
    let weight = 0;
    const advantages = new Float32Array(first.advantages.length);
    for (const i of g) {
      const s = samples[i]!, w = s.weight ?? 1;
      weight += w;
      for (let t = 0; t < advantages.length; t++) {
        advantages[t] = advantages[t]! + w * s.advantages[t]!;
      }
    }
    for (let t = 0; t < advantages.length; t++) advantages[t] = advantages[t]! / weight;
    return { ...first, advantages, weight };
  });
  return { samples: merged, groups };
}

/** The distinct sequences of `sequences` and, for each input, the index of its distinct one. */
export function distinctSequences(
  sequences: readonly Int32Array[],
): { distinct: Int32Array[]; index: number[] } {
  const byKey = new Map<string, number>();
  const distinct: Int32Array[] = [];
  const index = sequences.map((s) => {
    const k = s.join(",");
    let i = byKey.get(k);
    if (i === undefined) {
      i = distinct.length;
      byKey.set(k, i);
      distinct.push(s);
    }
    return i;
  });
  return { distinct, index };
}
