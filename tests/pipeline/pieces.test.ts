// A step's training pieces and ROLL's StepEnvManager samples (step_sample_reward: step): each
// turn of a step-wise episode is a sample scored by its own step's reward, normalized among its
// group's turns; the advantages come back laid end to end per episode.
import assert from "node:assert/strict";
import { advantageSettingsFromConfig, FixedKlController } from "../../lib/algo/mod.ts";
import {
  joinPieces,
  pieceAdvantages,
  type PieceSource,
  trainingPieces,
} from "../../lib/pipeline/pieces.ts";

/** A step-wise episode: per turn a prompt of 2 tokens and a response of `responses[t]`. */
function stepEpisode(group: string, rewards: number[], responses: number[]): PieceSource {
  const mask: number[] = [], stepStarts: number[] = [];
  responses.forEach((n) => {
    stepStarts.push(mask.length);
    mask.push(0, 0, ...Array(n).fill(1));
  });
  return {
    tokens: new Int32Array(mask.length),
    responseMask: Uint8Array.from(mask),
    stepRewards: rewards,
    stepStarts,
    score: rewards.reduce((a, b) => a + b, 0),
    trajGroupId: group,
    tag: "FrozenLake",
  };
}

function settings(method: "mean" | "identity", advEstimator: "grpo" | "gae" = "grpo") {
  return advantageSettingsFromConfig({
    adv_estimator: advEstimator,
    gamma: 1,
    lambd: 1,
    reward_normalization: {
      grouping: "traj_group_id",
      method,
      norm_mean_type: null,
      norm_std_type: null,
    },
    reward_clip: null,
    whiten_rewards: false,
    whiten_advantages: false,
    advantage_clip: null,
    add_token_level_kl: false,
    kl_penalty: "kl",
  });
}

const zeros = (n: number) => new Float32Array(n);

Deno.test("pieces: a turn is a sample scored by its own reward, normalized among its group's turns (ROLL's StepEnvManager)", () => {
  // one group: A's steps [0, 0, 1], B's [0, 0]; the mean over its 5 turns is 0.2
  const a = stepEpisode("g0", [0, 0, 1], [3, 2, 4]);
  const b = stepEpisode("g0", [0, 0], [1, 2]);
  // another group with one episode: its single turn's reward minus itself
  const c = stepEpisode("g1", [1], [2]);
  const samples = [a, b, c];
  const pieces = trainingPieces(samples);
  assert.deepEqual(pieces.map((p) => [p.episode, p.begin, p.end, p.reward]), [
    [0, 0, 5, 0],
    [0, 5, 9, 0],
    [0, 9, 15, 1],
    [1, 0, 3, 0],
    [1, 3, 7, 0],
    [2, 0, 4, 1],
  ]);
  const perPiece = {
    old: pieces.map((p) => zeros(p.end - p.begin)),
    ref: null,
    values: null,
  };
  const r = pieceAdvantages(samples, pieces, perPiece, settings("mean"), new FixedKlController(0));
  const expected = [[-0.2, -0.2, 0.8], [-0.2, -0.2], [0]];
  samples.forEach((s, e) => {
    const adv = r.advantages[e]!;
    assert.equal(adv.length, s.tokens.length);
    s.stepStarts!.forEach((begin, t) => {
      const end = s.stepStarts![t + 1] ?? s.tokens.length;
      for (let i = begin; i < end; i++) {
        // gamma 1: every response token of a turn carries its turn's normalized reward
        const want = s.responseMask[i] ? expected[e]![t]! : 0;
        assert.ok(Math.abs(adv[i]! - want) < 1e-6, `episode ${e} turn ${t} token ${i}: ${adv[i]}`);
      }
    });
  });
  // the returns too (what the critic would learn)
  assert.ok(Math.abs(r.returns[0]![11]! - 0.8) < 1e-6);
});

Deno.test("pieces: GAE runs within each turn, from its own values (the next turn's values do not enter)", () => {
  const a = stepEpisode("g0", [0, 1], [2, 2]);
  const pieces = trainingPieces([a]);
  // values 0.5 on the first turn's tokens, 9 on the second's: with per-turn GAE (gamma 1, lambda
  // 1) a turn's advantage is its reward minus its own first value, whatever the next turn holds
  const values = pieces.map((p, j) => new Float32Array(p.end - p.begin).fill(j === 0 ? 0.5 : 9));
  const r = pieceAdvantages(
    [a],
    pieces,
    { old: pieces.map((p) => zeros(p.end - p.begin)), ref: null, values },
    settings("identity", "gae"),
    new FixedKlController(0),
  );
  // first turn: reward 0, values 0.5 on its two response tokens: advantages -0.5, -0.5
  assert.deepEqual(Array.from(r.advantages[0]!.subarray(0, 4), (x) => Math.round(x * 1e6) / 1e6), [
    0,
    0,
    -0.5,
    -0.5,
  ]);
  // second: reward 1 against values 9
  assert.ok(Math.abs(r.advantages[0]![7]! - (1 - 9)) < 1e-5);
});

Deno.test("pieces: joinPieces lays per-piece arrays back end to end; a trajectory-wise episode is one piece with its score", () => {
  const traj: PieceSource = {
    tokens: new Int32Array(5),
    responseMask: Uint8Array.of(0, 1, 1, 0, 1),
    stepRewards: [0, 0.5],
    score: 0.5,
    trajGroupId: "g",
    tag: "t",
  };
  const step = stepEpisode("g", [1, 2], [1, 1]);
  const pieces = trainingPieces([traj, step]);
  assert.deepEqual(pieces.map((p) => p.reward), [0.5, 1, 2]);
  const joined = joinPieces(
    [traj, step],
    pieces,
    pieces.map((p, j) => new Float32Array(p.end - p.begin).fill(j + 1)),
  );
  assert.deepEqual(Array.from(joined[0]!), [1, 1, 1, 1, 1]);
  assert.deepEqual(Array.from(joined[1]!), [2, 2, 2, 3, 3, 3]);
});

Deno.test("pieces: the token-level KL reads each turn's own old and reference log-probs, and comes back per episode", () => {
  const a = stepEpisode("g0", [0, 1], [2, 2]);
  const pieces = trainingPieces([a]);
  // old log-probs 0 everywhere; the reference 0.5 below them on the second turn only
  const old = pieces.map((p) => zeros(p.end - p.begin));
  const ref = pieces.map((p, j) => new Float32Array(p.end - p.begin).fill(j === 1 ? -0.5 : 0));
  const klSettings = {
    ...settings("identity"),
    addTokenLevelKl: true,
    klPenalty: "kl" as const,
  };
  const r = pieceAdvantages(
    [a],
    pieces,
    { old, ref, values: null },
    klSettings,
    new FixedKlController(1),
  );
  // kl (old - ref) on the second turn's response tokens only
  assert.deepEqual(Array.from(r.kl![0]!), [0, 0, 0, 0, 0, 0, 0.5, 0.5]);
  // the token rewards: - kl_coef x kl on each response token, the step's reward on its last
  assert.deepEqual(Array.from(r.tokenRewards[0]!), [0, 0, 0, 0, 0, 0, -0.5, 0.5]);
  // critic/kl: the mean over the pieces of each one's mean KL
  assert.equal(r.metrics["critic/kl"], 0.25);
});
