/**
 * One episode, as ROLL's TrajEnvManager plays it: reset with the episode seed;
 * each turn, the turn's messages are appended to the conversation token by
 * token (no re-tokenization of earlier turns), the policy answers within the
 * turn budget, and the decoded response goes to
 * `env.step`. The episode ends when the env terminates or truncates, after
 * `max_steps` actions, or when the next prompt would not fit in
 * `sequence_length`. With `env_manager_cls: step` (ROLL's StepEnvManager)
 * each turn is a fresh prompt recalling the last steps instead; the pieces
 * are laid end to end and `stepStarts` says where each begins.
 *
 * @module
 */
import { checkResetResult, checkRgbFrame, checkStepResult } from "../../envs/check_results.ts";
import { aggregateEpisodeMetrics } from "../../envs/metrics.ts";
import type { RgbFrame, StepMetrics } from "../../envs/types.ts";
import type { CustomEnv } from "../config/schema/env_manager.ts";
import type { ChatEncoder, ChatMessage } from "../model/chat_template.ts";
import type { EnvHandle } from "./env_host.ts";
import { RolloutConfigError } from "./errors.ts";
import { answerStart } from "./answer_span.ts";
import { entryTurnMessages, stepHistoryLine, stepTurnMessages } from "./prompt.ts";
import { turnSeed } from "./seeding.ts";
import type { EndReason, RolloutPolicy, TrajectorySample } from "./types.ts";

/** Which episode to play. */
export interface EpisodeSpec {
  tag: string;
  entry: CustomEnv;
  envId: number;
  groupId: number;
  episodeId: number;
  groupSeed: number;
  /** The env reset seed (group seed + episode id). */
  seed: number;
  createStep: number;
}

/** How to play it. */
export interface EpisodeOptions {
  policy: RolloutPolicy;
  encoder: ChatEncoder;
  /** Response ids to the text `env.step` receives (ROLL keeps special tokens). */
  decodeForEnv: (ids: readonly number[]) => string;
  /** Cap on the whole conversation's tokens. */
  sequenceLength: number;
  /** generating_args.max_new_tokens of the env manager. */
  maxNewTokens: number;
  /** The env manager's format_penalty, added to a step whose action was not valid. */
  formatPenalty: number;
  /** Keep a frame per state. */
  render: boolean;
  /** False once the scheduler no longer wants this episode (it is then abandoned). */
  isWanted: () => boolean;
}

/** Thrown when the policy fails a turn (the trajectory is lost, the run goes on). */
export class PolicyError extends Error {
  /** Wraps the policy's own error. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "PolicyError";
  }
}

/**
 * Plays one episode; returns its sample, or null when it was abandoned (the
 * policy aborted, or the scheduler stopped wanting it). Env failures throw.
 */
export async function runEpisode(
  env: EnvHandle,
  spec: EpisodeSpec,
  o: EpisodeOptions,
): Promise<TrajectorySample | null> {
  const { entry } = spec;
  let observation = checkResetResult(await env.reset(spec.seed)).observation;
  const frames: RgbFrame[] = [];
  if (o.render) frames.push(checkRgbFrame(await env.renderRgb()));
  const messages: ChatMessage[] = [];
  const tokens: number[] = [];
  const mask: number[] = [];
  const answer: number[] = [];
  const logprobs: number[] = [];
  const stepRewards: number[] = [];
  const stepStates: string[] = [];
  const stepMetrics: StepMetrics[] = [];
  let promptLength = 0;
  let responseLength = 0;
  let versions: [number, number] | null = null;
  let endReason: EndReason = "max_actions";
  const trajGroupId = `${spec.tag}_${spec.groupId}_${spec.episodeId}_${spec.groupSeed}`;
  const trajId = `${trajGroupId}_${spec.envId}`;
  // Step-wise (ROLL's StepEnvManager): a fresh prompt every turn, recalling the last steps;
  // the turns' [prompt, response] pieces are laid end to end, starting at stepStarts.
  const stepWise = entry.env_manager_cls === "step";
  const history: string[] = [];
  const stepStarts: number[] = [];

  for (let turn = 0;; turn++) {
    if (!o.isWanted()) return null;
    const added = stepWise
      ? stepTurnMessages(entry, env.instruction, observation, turn, history)
      : entryTurnMessages(entry, env.instruction, observation, turn);
    const promptIds = stepWise
      ? o.encoder.turnIds([], [], added)
      : o.encoder.turnIds(messages, tokens, added);
    const context = (stepWise ? 0 : tokens.length) + promptIds.length;
    if (context >= o.sequenceLength) {
      if (turn === 0) {
        throw new RolloutConfigError(
          `The first prompt of ${spec.tag} is ${promptIds.length} tokens, but ` +
            `sequence_length is ${o.sequenceLength}: expected a sequence_length above the prompt`,
        );
      }
      endReason = "sequence_length";
      break;
    }
    messages.push(...(stepWise && turn > 0 ? added.slice(1) : added));
    if (turn === 0) promptLength = promptIds.length;
    if (stepWise) stepStarts.push(tokens.length);
    for (const id of promptIds) {
      tokens.push(id);
      mask.push(0);
      answer.push(0);
      logprobs.push(0);
    }
    const budget = Math.min(entry.max_tokens_per_step, o.maxNewTokens, o.sequenceLength - context);
    let response;
    const seed = turnSeed(spec.seed, spec.envId, turn);
    try {
      response = await o.policy.generate({
        requestId: `${trajId}/${turn}`,
        promptIds: stepWise ? promptIds : tokens.slice(),
        maxNewTokens: budget,
        seed,
        sampleAction: () => env.sampleAction(seed),
      });
    } catch (e) {
      throw new PolicyError(
        `the policy failed turn ${turn + 1} of ${trajId}: ${e instanceof Error ? e.message : e}`,
        { cause: e },
      );
    }
    if (response.finishReason === "abort" || !o.isWanted()) return null;
    if (response.tokenIds.length !== response.logprobs.length) {
      throw new PolicyError(
        `the policy returned ${response.tokenIds.length} tokens but ` +
          `${response.logprobs.length} log-probs for ${trajId}: expected one per token`,
      );
    }
    const answerFrom = answerStart(response.tokenIds, o.decodeForEnv);
    response.tokenIds.forEach((id, i) => {
      tokens.push(id);
      mask.push(1);
      answer.push(i >= answerFrom ? 1 : 0);
      logprobs.push(response.logprobs[i]!);
    });
    responseLength += response.tokenIds.length;
    const v = response.weightVersions;
    if (v) versions = versions ? [Math.min(versions[0], v[0]), Math.max(versions[1], v[1])] : v;
    messages.push(o.encoder.assistantMessage(response.tokenIds));

    const actedFrom = observation;
    const step = checkStepResult(await env.step(o.decodeForEnv(response.tokenIds)));
    const m = step.info.metrics;
    const penalty = !m.action_is_valid && !m.format_penalty ? o.formatPenalty : 0;
    stepRewards.push(step.reward + penalty);
    stepStates.push(actedFrom);
    if (stepWise) {
      const said = typeof step.info.action_content === "string"
        ? step.info.action_content
        : o.decodeForEnv(response.tokenIds);
      history.push(stepHistoryLine(turn + 1, actedFrom, said, m.action_is_valid, step.reward));
    }
    stepMetrics.push(penalty ? { ...m, format_penalty: penalty } : m);
    if (o.render) frames.push(checkRgbFrame(await env.renderRgb()));
    observation = step.observation;
    if (step.terminated) {
      endReason = "terminated";
      break;
    }
    if (step.truncated) {
      endReason = "truncated";
      break;
    }
    if (turn + 1 >= entry.max_steps) {
      endReason = "max_actions";
      break;
    }
  }

  const score = stepRewards.reduce((a, b) => a + b, 0);
  return {
    trajId,
    trajGroupId,
    tag: spec.tag,
    groupId: spec.groupId,
    envId: spec.envId,
    episodeId: spec.episodeId,
    seed: spec.seed,
    createStep: spec.createStep,
    tokens: Int32Array.from(tokens),
    responseMask: Uint8Array.from(mask),
    answerMask: Uint8Array.from(answer),
    logprobs: Float32Array.from(logprobs),
    stepRewards,
    stepStates,
    ...(stepWise ? { stepStarts } : {}),
    score,
    metrics: aggregateEpisodeMetrics(stepMetrics),
    endReason,
    promptLength,
    responseLength,
    weightVersions: versions ?? [0, 0],
    messages,
    ...(o.render ? { frames } : {}),
  };
}
