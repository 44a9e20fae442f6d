/**
 * What a think model's policy does, measured without playing: on held-out
 * random boards, prompted as `agent_val_frozen_lake_think` prompts, the model
 * writes its description greedily, then the probability of each of the four
 * answers after that description is read off. Reports how often the
 * description is exact, the mean probability of a *toward-safe* answer (a move
 * that brings the player closer to the goal onto a tile that is not a hole:
 * what the greedy policy of the description plays), the mean share of each
 * action (a global bias shows here) and the mean entropy of the answer.
 *
 * Validation success at temperature 0.2 moves in steps of 1/128 and mostly
 * follows a global bias; these numbers show whether the state-dependent part
 * of the policy is learning at all.
 *
 * ```sh
 * npx -y deno@2.9.6 run -A examples/diagnostics/think_policy.ts \
 *   build/models/frozen_lake_think_base output/agent_val_frozen_lake_think/checkpoints/checkpoint-20/model
 * ```
 *
 * @module
 */
import { Kernels } from "../../ffi/mod.ts";
import { createFrozenLakeEnv, describeFrozenLakeBoard } from "../../envs/frozen_lake/mod.ts";
import { Rng } from "../../envs/random.ts";
import { GenerationEngine } from "../../lib/infer/engine.ts";
import { ChatEncoder } from "../../lib/model/chat_template.ts";
import type { CustomEnvEntry } from "../../lib/model/make_base_model.ts";
import { thinkBaseEntry } from "../../lib/model/make_think_base_model.ts";
import { loadPretrained } from "../../lib/model/pretrained.ts";
import { CheckpointError } from "../../lib/model/safetensors.ts";
import { TokenizerLoadError } from "../../lib/model/tokenizer.ts";
import { stepTurnMessages } from "../../lib/rollout/prompt.ts";
import { sequenceLogprobs } from "../../lib/train/actor.ts";

const ACTIONS = ["Left", "Down", "Right", "Up"] as const;
const MOVES: ReadonlyArray<readonly [number, number]> = [[0, -1], [1, 0], [0, 1], [-1, 0]];

/**
 * For each action (Left, Down, Right, Up): whether it brings the player closer
 * to the goal onto a tile that is not a hole. A board without player or goal
 * gives four `false`.
 */
export function towardSafeActions(observation: string): boolean[] {
  const rows = observation.split("\n");
  const find = (symbol: string) => {
    for (let r = 0; r < rows.length; r++) {
      const c = rows[r]!.indexOf(symbol);
      if (c >= 0) return [r, c] as const;
    }
    return null;
  };
  const player = find("P"), goal = find("G");
  if (!player || !goal) return [false, false, false, false];
  const [pr, pc] = player, [gr, gc] = goal;
  return MOVES.map(([dr, dc]) => {
    const r = pr + dr, c = pc + dc;
    if (r < 0 || c < 0 || r >= rows.length || c >= rows[r]!.length || rows[r]![c] === "O") {
      return false;
    }
    return Math.abs(r - gr) + Math.abs(c - gc) < Math.abs(pr - gr) + Math.abs(pc - gc);
  });
}

/** What {@linkcode thinkPolicy} measured. */
export interface ThinkPolicyReport {
  boards: number;
  /** Share of greedy descriptions equal to {@linkcode describeFrozenLakeBoard}'s. */
  thinkExact: number;
  /** Mean probability of a toward-safe answer after the model's own description. */
  towardSafe: number;
  /** The same for the uniformly random policy on these boards. */
  randomTowardSafe: number;
  /** Mean probability of each action (Left, Down, Right, Up). */
  actionShares: number[];
  /** Mean entropy (nats) of the answer over the four actions. */
  entropy: number;
}

/** Random boards (a reset with a seed from `rng`, then 0-3 random moves) that are still in play. */
function heldOutBoards(entry: CustomEnvEntry, n: number, rng: Rng): string[] {
  const env = createFrozenLakeEnv(entry.env_config ?? {});
  const boards: string[] = [];
  while (boards.length < n) {
    let observation = env.reset(2 ** 40 + rng.int(2 ** 30)).observation;
    let ended = false;
    for (let k = rng.int(4); k > 0 && !ended; k--) {
      const step = env.step(`<answer>${ACTIONS[rng.int(4)]}</answer>`);
      observation = step.observation;
      ended = step.terminated || step.truncated;
    }
    if (!ended) boards.push(observation);
  }
  return boards;
}

/** Measures the model at `dir` on `boards` held-out boards (default 256). */
export async function thinkPolicy(dir: string, options: {
  entry?: CustomEnvEntry;
  boards?: number;
  threads?: number;
} = {}): Promise<ThinkPolicyReport> {
  const entry = options.entry ?? await thinkBaseEntry();
  const n = options.boards ?? 256;
  using kernels = Kernels.open(options.threads !== undefined ? { threads: options.threads } : {});
  using pretrained = await loadPretrained(kernels, dir);
  const { model, tokenizer } = pretrained;
  const chat = new ChatEncoder(tokenizer);
  const imEnd = tokenizer.requireTokenId("<|im_end|>");
  const { instruction } = createFrozenLakeEnv(entry.env_config ?? {});
  const boards = heldOutBoards(entry, n, new Rng(7, 0x7b0));
  const prompts = boards.map((b) =>
    chat.turnIds([], [], stepTurnMessages(entry, instruction, b, 0, []))
  );
  const thinks: string[] = [];
  {
    await using engine = new GenerationEngine(model, {
      maxRunningRequests: Math.min(n, 128),
      maxModelLen: Math.min(1024, pretrained.config.max_position_embeddings),
      decode: (ids) => tokenizer.decode(ids, { skipSpecialTokens: true }),
      eosTokenIds: [...tokenizer.eosTokenIds],
    });
    await Promise.all(prompts.map(async (prompt_token_ids, i) => {
      const r = await engine.generate({
        prompt_token_ids,
        max_new_tokens: entry.max_tokens_per_step,
        temperature: 0,
        stop_strings: ["</think>"],
      });
      thinks[i] = /<think>(.*?)(<\/think>|$)/s.exec(r.text)?.[1]?.trim() ?? "";
    }));
  }
  // each board's four answers after its description; the decision is where they first differ
  const sequences: Int32Array[] = [];
  const decisions: number[] = [];
  boards.forEach((_, i) => {
    const answers = ACTIONS.map((a) =>
      tokenizer.encode(`<think>${thinks[i]}</think><answer>${a}</answer>`, {
        addSpecialTokens: false,
      })
    );
    let d = 0;
    while (answers.every((ids) => d < ids.length && ids[d] === answers[0]![d])) d++;
    decisions.push(prompts[i]!.length + d);
    for (const ids of answers) sequences.push(Int32Array.from([...prompts[i]!, ...ids, imEnd]));
  });
  const logprobs = sequenceLogprobs(model, sequences, { maxTokens: 8192 });
  let exact = 0, toward = 0, randomToward = 0, entropy = 0;
  const shares = [0, 0, 0, 0];
  boards.forEach((board, i) => {
    if (thinks[i] === describeFrozenLakeBoard(board)) exact++;
    const p = [0, 1, 2, 3].map((a) => Math.exp(logprobs[4 * i + a]![decisions[i]!]!));
    const z = p.reduce((x, y) => x + y, 0);
    const good = towardSafeActions(board);
    p.forEach((x, a) => {
      const q = x / z;
      shares[a]! += q / n;
      if (good[a]) toward += q / n;
      if (q > 0) entropy -= (q * Math.log(q)) / n;
    });
    randomToward += good.filter(Boolean).length / 4 / n;
  });
  return {
    boards: n,
    thinkExact: exact / n,
    towardSafe: toward,
    randomTowardSafe: randomToward,
    actionShares: shares,
    entropy,
  };
}

if (import.meta.main) {
  if (Deno.args.length === 0) {
    console.error("usage: think_policy.ts MODEL_DIR [MODEL_DIR ...]");
    Deno.exit(2);
  }
  for (const dir of Deno.args) {
    try {
      const r = await thinkPolicy(dir);
      console.log(
        `${dir}: think exact ${r.thinkExact.toFixed(3)}, P(toward-safe) ${
          r.towardSafe.toFixed(3)
        } (random ${r.randomTowardSafe.toFixed(3)}), actions ${
          r.actionShares.map((s) => s.toFixed(2)).join("/")
        } (Left/Down/Right/Up), entropy ${r.entropy.toFixed(2)}`,
      );
    } catch (e) {
      if (!(e instanceof CheckpointError || e instanceof TokenizerLoadError)) throw e;
      console.error(`${dir}: ${e.message}`);
      Deno.exit(2);
    }
  }
}
