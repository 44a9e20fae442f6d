/**
 * The policy model: the Qwen2 decoder on the native kernels, Hugging Face
 * model folders (safetensors, config.json), tokenizers and chat templates.
 *
 * @example
 * ```ts
 * import { Kernels } from "../../ffi/mod.ts";
 * import { parseQwen2Config, Qwen2Model } from "./mod.ts";
 * using k = Kernels.open({ threads: 1 });
 * const config = parseQwen2Config({
 *   model_type: "qwen2", vocab_size: 32, hidden_size: 16, intermediate_size: 32,
 *   num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1,
 * }, "example");
 * using model = new Qwen2Model(k, config, { seed: 1 });
 * const { logp } = model.forward({
 *   tokens: Int32Array.of(1, 2, 3), positions: Int32Array.of(0, 1, 2),
 *   cuSeqlens: Int32Array.of(0, 3), targets: Int32Array.of(2, 3, 4),
 * });
 * console.log(logp.toArray().length); // 3
 * ```
 *
 * @module
 */
export { hasQkNorm, type ModelType, type Qwen2Config } from "./config.ts";
export {
  type BackwardInput,
  type LogprobBatch,
  type LogprobOptions,
  type LogprobResult,
  type NamedParam,
  type PackedBatch,
  Qwen2Model,
  type Qwen2ModelOptions,
} from "./qwen2.ts";
export { Qwen2KvCache } from "./qwen2_kv_cache.ts";
export { parseQwen2Config, qwen2ConfigToJson } from "./hf_config.ts";
export {
  CheckpointError,
  expectedQwen2Weights,
  loadHfCheckpoint,
  openHfWeights,
  saveHfCheckpoint,
} from "./checkpoint.ts";
export { SafetensorsFile, writeSafetensors } from "./safetensors.ts";
export { Tokenizer, TokenizerLoadError } from "./tokenizer.ts";
export {
  ChatEncoder,
  type ChatMessage,
  ChatTemplate,
  type ChatTemplateChoice,
  ChatTemplateIncrementError,
  ChatTemplateRenderError,
  QWEN2_5_CHAT_TEMPLATE,
} from "./chat_template.ts";
export { loadPretrained, type Pretrained, savePretrained } from "./pretrained.ts";
export { TINY_MODEL_SHAPE, writeTinyModel } from "./make_tiny_tokenizer.ts";
