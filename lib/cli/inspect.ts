/**
 * `agentrl inspect PATH`: what agentrl makes of a Hugging Face model folder before a run loads
 * it: the architecture and shape it reads from `config.json`, the weights' files, dtypes and
 * parameter count (headers only: nothing is loaded), the tokenizer's end-of-turn tokens, the
 * chat template a run would use, whether that template can play trajectory-wise episodes, and
 * the memory its weights and optimizer state take, and the KV cache a run with the config holds.
 *
 * @module
 */
import type { AgenticConfig } from "../config/agentic_config.ts";
import { expectedQwen2Weights, loadHfCheckpoint } from "../model/checkpoint.ts";
import { contextLength, type Qwen2Config } from "../model/config.ts";
import { ARCHITECTURES } from "../model/hf_config.ts";
import { ropeAttentionFactor } from "../model/rope_scaling.ts";
import { expectModelFolder, probeChatTemplate } from "../model/pretrained.ts";
import { Tokenizer } from "../model/tokenizer.ts";
import { chatEncoderFor } from "../rollout/chat_setup.ts";
import { endOfTurnIds } from "../rollout/engine_policy.ts";
import { turnIncrementProblem } from "../rollout/turn_probe.ts";
import { formatBytes, kvCacheBytes } from "../infer/kv_cache_size.ts";
import { trainEngineSize } from "../pipeline/engine_size.ts";

/** What {@linkcode inspectModel} finds. */
export interface ModelReport {
  dir: string;
  architecture: string;
  config: Qwen2Config;
  /** Parameters the model has (a tied embedding counts once). */
  parameters: number;
  /** Weight files and the dtypes stored in them. */
  files: number;
  dtypes: string[];
  /** What the weight check ignored (rotary buffers, a tied lm_head, other extras). */
  notes: string[];
  vocabSize: number;
  /** The ids a turn ends at, with their text. */
  turnEnds: { id: number; text: string }[];
  template: string;
  /** Why trajectory-wise episodes cannot use the template, or null when they can. */
  trajectoryWise: string | null;
  /** Why step-wise episodes cannot render a prompt with the template, or null when they can. */
  stepWise: string | null;
  /** A tokenizer larger than config.json's vocabulary (a run refuses it), or null. */
  vocabProblem: string | null;
  /** The config's own notes (a chosen template, ...). */
  templateNotes: string[];
  /** Bytes of native memory a role holds for its parameters (before activations and caches). */
  memory: {
    /** fp32 weights and the gradient buffer every model has (a role that is not trained). */
    loaded: number;
    /** With AdamW's two moments too (a trained role: actor_train, a critic). */
    trained: number;
    /** The bf16 copy of the matrices a role with bf16 weights adds (CUDA's default). */
    bf16Copy: number;
    /** The generation engine's KV cache in a training run with this config (actor_infer). */
    kvCache: { maxRunningRequests: number; maxModelLen: number; bytes: number };
  };
}

/**
 * Reads the folder at `dir` as a run with `config` would (config.json, weight headers,
 * tokenizer, chat template) without loading the weights. Folder problems throw the loaders'
 * errors ({@linkcode CheckpointError}, {@linkcode TokenizerLoadError}).
 *
 * @example
 * ```ts ignore
 * import { loadConfig } from "../config/load_config.ts";
 * import { formatModelReport, inspectModel } from "./inspect.ts";
 * const { config } = await loadConfig({ configName: "agent_val_frozen_lake" });
 * console.log(formatModelReport(await inspectModel("path/to/Qwen3-0.6B", config)));
 * ```
 */
export async function inspectModel(dir: string, config: AgenticConfig): Promise<ModelReport> {
  // the checks a run makes before it loads (loadPretrained), in its order
  expectModelFolder(dir);
  const tok = await Tokenizer.load(dir);
  probeChatTemplate(tok);
  using ckpt = loadHfCheckpoint(dir);
  const cfg = ckpt.config;
  const expected = expectedQwen2Weights(cfg);
  const size = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);
  const parameters = expected.reduce((n, w) => n + size(w.shape), 0);
  // the bf16 copy (_mixed_precision.ts): every layer matrix and the LM head (V x C, tied or not)
  const layerMatrices = expected.filter((w) => /^model\.layers\.\d+\..*_proj\.weight$/.test(w.name))
    .reduce((n, w) => n + size(w.shape), 0);
  const templateNotes: string[] = [];
  const encoder = chatEncoderFor(tok, config, (n) => templateNotes.push(n));
  const problem = turnIncrementProblem(encoder);
  let stepWise: string | null = null;
  try {
    encoder.encode([{ role: "system", content: "Play." }, { role: "user", content: "Turn 1" }]);
  } catch (e) {
    stepWise = e instanceof Error ? e.message : String(e);
  }
  const vocabProblem = tok.vocabSize > cfg.vocab_size
    ? `config.json's vocab_size ${cfg.vocab_size} is below the tokenizer's ${tok.vocabSize} ` +
      "tokens: a run refuses the folder"
    : null;
  const engine = trainEngineSize(config, contextLength(cfg));
  return {
    dir: ckpt.dir,
    architecture: ARCHITECTURES[cfg.model_type ?? "qwen2"],
    config: cfg,
    parameters,
    files: new Set(expected.map((w) => ckpt.weights.file(w.name))).size,
    dtypes: [...new Set(expected.map((w) => ckpt.weights.dtype(w.name)))].sort(),
    notes: ckpt.notes,
    vocabSize: tok.vocabSize,
    turnEnds: endOfTurnIds(tok, encoder.template).map((id) => ({ id, text: tok.decode([id]) })),
    template: encoder.template.origin,
    trajectoryWise: problem ? problem.message : null,
    stepWise,
    vocabProblem,
    templateNotes,
    memory: {
      loaded: 8 * parameters,
      trained: 16 * parameters,
      bf16Copy: 2 * (layerMatrices + cfg.vocab_size * cfg.hidden_size),
      kvCache: {
        maxRunningRequests: engine.maxRunningRequests,
        maxModelLen: engine.maxModelLen,
        bytes: kvCacheBytes(cfg, engine.maxRunningRequests, engine.maxModelLen),
      },
    },
  };
}

/** The report as the lines `agentrl inspect` prints. */
export function formatModelReport(r: ModelReport): string {
  const c = r.config;
  const s = c.rope_scaling;
  const rope = !s
    ? `theta ${c.rope_theta}`
    : s.rope_type === "llama3"
    ? `theta ${c.rope_theta}, Llama 3.1 scaling (factor ${s.factor}, original ` +
      `${s.original_max_position_embeddings} positions)`
    : s.rope_type === "yarn"
    ? `theta ${c.rope_theta}, YaRN scaling (factor ${s.factor}, original ` +
      `${s.original_max_position_embeddings} positions, attention factor ${
        ropeAttentionFactor(s).toFixed(4)
      })`
    : `theta ${c.rope_theta}, linear scaling (factor ${s.factor})`;
  const attention = [
    c.attention_bias ? "q/k/v biases" : "no biases",
    c.model_type === "qwen3" ? "q/k norms" : null,
  ].filter((x) => x !== null).join(", ");
  const p = r.parameters;
  return [
    `model: ${r.dir}`,
    `  ${r.architecture} (model_type ${c.model_type ?? "qwen2"}): ${c.num_hidden_layers} layers, ` +
    `hidden ${c.hidden_size}, ${c.num_attention_heads} query / ${c.num_key_value_heads} ` +
    `key-value heads of ${c.head_dim}, MLP ${c.intermediate_size}, vocabulary ${c.vocab_size}` +
    `${c.tie_word_embeddings ? ", tied embeddings" : ""}`,
    `  attention: ${attention}; RoPE ${rope}; up to ${contextLength(c)} positions`,
    `  weights: ${p.toLocaleString("en-US")} parameters in ${r.files} file(s), stored as ` +
    `${r.dtypes.join(", ")}`,
    ...r.notes.map((n) => `  note: ${n}`),
    `  memory a role, before activations and caches: ${
      formatBytes(r.memory.loaded)
    } loaded (fp32 ` +
    `weights and gradients: the reference), ${formatBytes(r.memory.trained)} ` +
    `trained (with AdamW's two moments: actor_train, critic), +${formatBytes(r.memory.bf16Copy)} ` +
    "with bf16 weights (CUDA's default)",
    `  KV cache of a training run with this config (actor_infer): ` +
    `${r.memory.kvCache.maxRunningRequests} episodes of up to ${r.memory.kvCache.maxModelLen} ` +
    `positions, ${formatBytes(r.memory.kvCache.bytes)} (f32 keys and values)`,
    `tokenizer: ${r.vocabSize} tokens; a turn ends at ` +
    r.turnEnds.map((t) => `${JSON.stringify(t.text)} (${t.id})`).join(", "),
    ...(r.vocabProblem ? [`  problem: ${r.vocabProblem}`] : []),
    `chat template: ${r.template}`,
    ...r.templateNotes.map((n) => `  note: ${n}`),
    r.trajectoryWise === null
      ? "  trajectory-wise episodes: yes (the template extends a conversation token by token)"
      : `  trajectory-wise episodes: no. ${r.trajectoryWise}`,
    r.stepWise === null
      ? "  step-wise episodes (envs=step): yes (a prompt renders afresh each turn)"
      : `  step-wise episodes (envs=step): no. ${r.stepWise}`,
  ].join("\n");
}
