/**
 * A step's training sequences ("pieces"): one per trajectory-wise episode, one per turn of a
 * step-wise one; per-piece arrays laid back end to end per episode; and the advantages of ROLL's
 * StepEnvManager samples, where each piece is a sample scored by its own turn's reward
 * (`step_sample_reward: step`).
 *
 * @module
 */
import {
  type AlgoSample,
  type BatchAdvantages,
  type BatchAdvantageSettings,
  computeBatchAdvantages,
  type KlController,
} from "../algo/mod.ts";
import type { TrajectorySample } from "../rollout/types.ts";

/** What the pieces read of an episode. */
export type PieceSource = Pick<
  TrajectorySample,
  "tokens" | "responseMask" | "stepRewards" | "stepStarts" | "score" | "trajGroupId" | "tag"
>;

/** A training sequence: tokens [begin, end) of episode `episode`. */
export interface Piece {
  episode: number;
  begin: number;
  end: number;
  /** The reward a step sample carries: its turn's (step-wise), or the episode's score. */
  reward: number;
}

/** One piece per trajectory-wise episode; one per turn of a step-wise one. */
export function trainingPieces(samples: readonly PieceSource[]): Piece[] {
  return samples.flatMap((s, episode) => {
    const starts = s.stepStarts ?? [0];
    return starts.map((begin, t) => ({
      episode,
      begin,
      end: starts[t + 1] ?? s.tokens.length,
      // (a trajectory-wise episode is one piece: its score)
      reward: s.stepStarts ? s.stepRewards[t]! : s.score,
    }));
  });
}

/**
 * ROLL's StepEnvManager samples (`step_sample_reward: step`): each piece is a sample scored by
 * its turn's own reward (a trajectory-wise episode's piece by its score), normalized among its
 * group's pieces, with its own returns (and GAE over its own values); the results laid back end
 * to end per episode.
 */
export function pieceAdvantages(
  samples: readonly PieceSource[],
  pieces: readonly Piece[],
  perPiece: { old: Float32Array[]; ref: Float32Array[] | null; values: Float32Array[] | null },
  settings: BatchAdvantageSettings,
  klController: KlController,
): BatchAdvantages {
  const algo = pieces.map((p, j): AlgoSample => {
    const s = samples[p.episode]!;
    return {
      responseMask: s.responseMask.subarray(p.begin, p.end),
      score: p.reward,
      trajGroupId: s.trajGroupId,
      tag: s.tag,
      logprobs: perPiece.old[j]!,
      ...(perPiece.ref ? { refLogprobs: perPiece.ref[j]! } : {}),
      ...(perPiece.values ? { values: perPiece.values[j]! } : {}),
    };
  });
  const r = computeBatchAdvantages(algo, settings, klController);
  return {
    ...r,
    tokenRewards: joinPieces(samples, pieces, r.tokenRewards),
    advantages: joinPieces(samples, pieces, r.advantages),
    returns: joinPieces(samples, pieces, r.returns),
    kl: r.kl ? joinPieces(samples, pieces, r.kl) : null,
  };
}

/** Per-piece arrays laid back end to end, one per episode. */
export function joinPieces(
  samples: readonly Pick<TrajectorySample, "tokens">[],
  pieces: readonly Piece[],
  values: readonly Float32Array[],
): Float32Array[] {
  const out = samples.map((s) => new Float32Array(s.tokens.length));
  pieces.forEach((p, j) => out[p.episode]!.set(values[j]!, p.begin));
  return out;
}
