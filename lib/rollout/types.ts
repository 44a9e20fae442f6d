/**
 * The rollout's data: what a policy is asked and answers, the trajectory
 * sample one episode becomes (trajectory-wise, StarPO), and a batch of them.
 *
 * @module
 */
import type { EpisodeMetrics } from "../../envs/metrics.ts";
import type { RgbFrame } from "../../envs/types.ts";
import type { ChatMessage } from "../model/chat_template.ts";

/** One turn's request to the policy: the whole conversation so far, as token ids. */
export interface PolicyRequest {
  /** Unique per turn: `<traj_id>/<turn>`. */
  requestId: string;
  /** The context: every earlier prompt and response token, then this turn's prompt. */
  promptIds: readonly number[];
  /** This turn's budget: min(max_tokens_per_step, max_new_tokens, sequence_length - context). */
  maxNewTokens: number;
  /** A seed for this turn's sampling (derived from the episode seed and the turn). */
  seed: number;
  /** The env's uniformly random legal action for this turn (null: the env has none). */
  sampleAction?: () => Promise<string | null>;
}

/** The policy's answer to a {@linkcode PolicyRequest}. */
export interface PolicyResponse {
  /** The generated token ids, exactly as sampled (a stop token included). */
  tokenIds: number[];
  /** Log-prob of each generated token under the sampling distribution. */
  logprobs: number[];
  /** Why generation ended; "abort" ends the trajectory without a sample. */
  finishReason: "stop" | "length" | "abort";
  /** Weight versions that sampled the first and last token (async training). */
  weightVersions?: [number, number];
}

/** Whatever answers turns: the generation engine, or a scripted policy in tests. */
export interface RolloutPolicy {
  generate(request: PolicyRequest): Promise<PolicyResponse>;
  /**
   * Ends request `requestId` early, if it is still running: its `generate` resolves with
   * finish reason "abort". A scheduler that closes calls it for the turns it abandons.
   */
  abort?(requestId: string): void;
}

/** Why a trajectory ended. */
export type EndReason =
  /** The env ended the episode (goal, hole, purchase). */
  | "terminated"
  /** The env cut it short (its own step limit). */
  | "truncated"
  /** `max_steps` actions (ROLL's max_actions_per_traj) were taken. */
  | "max_actions"
  /** The next prompt would not fit in `sequence_length`. */
  | "sequence_length";

/**
 * One episode as a training sample: `[p1 r1 p2 r2 ...]` as the model saw and
 * produced them, a mask on the generated tokens, and the episode's outcome.
 */
export interface TrajectorySample {
  /** `<tag>_<group>_<episode>_<group seed>_<env>` (ROLL's traj_id). */
  trajId: string;
  /** `<tag>_<group>_<episode>_<group seed>` (ROLL's traj_group_id): the GRPO group. */
  trajGroupId: string;
  tag: string;
  groupId: number;
  envId: number;
  episodeId: number;
  /** The seed the env was reset with (group seed + episode id). */
  seed: number;
  /** The scheduler step the episode was created for. */
  createStep: number;
  /** All token ids of the conversation. */
  tokens: Int32Array;
  /** 1 on tokens the model generated, 0 on prompt and template tokens. */
  responseMask: Uint8Array;
  /**
   * 1 on the generated tokens from each response's last `<answer>` tag to its
   * end (the whole response when it has none): what `policy_gradient_tokens:
   * answer` trains with the advantage.
   */
  answerMask: Uint8Array;
  /** Generation log-probs on generated tokens, 0 elsewhere. */
  logprobs: Float32Array;
  /** Reward of every step (env reward plus the manager's format penalty). */
  stepRewards: number[];
  /** The observation each step acted from (GiGPO's anchor-state key). */
  stepStates: string[];
  /**
   * Step-wise episodes (env_manager_cls step): where each turn's [fresh prompt, response]
   * piece starts in `tokens` (each piece is its own training sequence). Absent for
   * trajectory-wise episodes, whose `tokens` are one conversation.
   */
  stepStarts?: number[];
  /** The episode score: the sum of the step rewards (placed on the last token). */
  score: number;
  /** Per-episode env metrics (ROLL's aggregation: mean, success last). */
  metrics: EpisodeMetrics;
  endReason: EndReason;
  /** Tokens of the first prompt (system + instruction + first observation). */
  promptLength: number;
  /** Generated tokens over all turns. */
  responseLength: number;
  /** Oldest and newest weight versions that generated this trajectory. */
  weightVersions: [number, number];
  /** The conversation as messages (for transcripts). */
  messages: ChatMessage[];
  /** Rendered frames, one per state, when the scheduler renders. */
  frames?: RgbFrame[];
}

/** A trajectory that was lost, and why (counted in the metrics; the run goes on). */
export interface LostTrajectory {
  tag: string;
  groupId: number;
  envId: number;
  episodeId: number;
  seed: number;
  reason: "env_error" | "env_timeout" | "policy_error";
  message: string;
}
