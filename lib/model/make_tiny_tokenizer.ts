/**
 * Builds the tiny default model's folder: a compact byte-level BPE
 * `tokenizer.json` trained on agentrl's own prompts (see
 * {@linkcode tinyTokenizerCorpus}), a `tokenizer_config.json` with the Qwen2.5
 * chat template, a small Qwen2-architecture `config.json` and a
 * `generation_config.json`. Deterministic: every run of the same checkout
 * writes the same bytes. No weights: the trainer initializes them.
 *
 * ```sh
 * npx -y deno@2.9.6 run --allow-read --allow-write --allow-env lib/model/make_tiny_tokenizer.ts build/models/tiny
 * ```
 *
 * @module
 */
import { GRID_CELL_PATTERN, QWEN2_PRETOKENIZE_PATTERN, trainByteLevelBpe } from "./bpe_trainer.ts";
import { QWEN2_5_CHAT_TEMPLATE } from "./chat_template.ts";
import { tinyTokenizerCorpus } from "./tiny_corpus.ts";

/** The added tokens, in Qwen's order (`<|endoftext|>` first), after the BPE vocabulary. */
export const TINY_SPECIAL_TOKENS: readonly string[] = [
  "<|endoftext|>",
  "<|im_start|>",
  "<|im_end|>",
];

/** The tokenizer's size, added tokens included (a multiple of 64 for the embedding). */
export const TINY_VOCAB_SIZE = 768;

/** The tiny model's shape (Qwen2 architecture); `vocab_size` is the tokenizer's. */
export const TINY_MODEL_SHAPE = {
  hidden_size: 128,
  intermediate_size: 256,
  num_hidden_layers: 4,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 32,
  max_position_embeddings: 4096,
  rope_theta: 10000,
  rms_norm_eps: 1e-6,
} as const;

/** The default output folder, relative to the working directory. */
export const TINY_MODEL_DIR = "build/models/tiny";

/** File name → content of the tiny model folder. */
export type TinyModelFiles = Record<
  "tokenizer.json" | "tokenizer_config.json" | "config.json" | "generation_config.json",
  string
>;

/**
 * The tiny model folder's files as text (JSON with two-space indent and a
 * final newline). `configDir` is the `configs/` folder whose agent templates
 * go into the corpus (default: this checkout's).
 *
 * @example
 * ```ts
 * import { buildTinyModelFiles } from "./make_tiny_tokenizer.ts";
 * const files = await buildTinyModelFiles();
 * console.log(JSON.parse(files["config.json"]).vocab_size); // 768
 * ```
 */
export async function buildTinyModelFiles(configDir?: URL): Promise<TinyModelFiles> {
  const corpus = await tinyTokenizerCorpus(configDir);
  const baseSize = TINY_VOCAB_SIZE - TINY_SPECIAL_TOKENS.length;
  const { vocab, merges } = trainByteLevelBpe(corpus, {
    vocabSize: baseSize,
    minFrequency: 2,
    specialTokens: TINY_SPECIAL_TOKENS,
  });
  if (vocab.size !== baseSize) {
    throw new Error(
      `The tiny tokenizer corpus yields ${vocab.size} vocabulary entries: expected ${baseSize} ` +
        "(the corpus is too small for TINY_VOCAB_SIZE)",
    );
  }
  const added = TINY_SPECIAL_TOKENS.map((content, i) => ({
    id: baseSize + i,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const byteLevel = {
    type: "ByteLevel",
    add_prefix_space: false,
    trim_offsets: false,
    use_regex: false,
  };
  const tokenizer = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    // No normalizer (Qwen applies NFC): decode(encode(text)) is text for any string.
    normalizer: null,
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        // grid cells are single tokens (see GRID_CELL_PATTERN)
        {
          type: "Split",
          pattern: { Regex: GRID_CELL_PATTERN },
          behavior: "Isolated",
          invert: false,
        },
        {
          type: "Split",
          pattern: { Regex: QWEN2_PRETOKENIZE_PATTERN },
          behavior: "Isolated",
          invert: false,
        },
        byteLevel,
      ],
    },
    post_processor: byteLevel,
    decoder: byteLevel,
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: "",
      end_of_word_suffix: "",
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: Object.fromEntries(vocab),
      merges,
    },
  };
  const [endOfText, , imEnd] = added.map((t) => t.id) as [number, number, number];
  const tokenizerConfig = {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: Object.fromEntries(added.map(({ id, ...rest }) => [String(id), rest])),
    additional_special_tokens: ["<|im_start|>", "<|im_end|>"],
    bos_token: null,
    chat_template: QWEN2_5_CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: "<|im_end|>",
    errors: "replace",
    model_max_length: TINY_MODEL_SHAPE.max_position_embeddings,
    pad_token: "<|endoftext|>",
    split_special_tokens: false,
    tokenizer_class: "Qwen2Tokenizer",
    unk_token: null,
  };
  const config = {
    architectures: ["Qwen2ForCausalLM"],
    attention_dropout: 0.0,
    bos_token_id: endOfText,
    eos_token_id: imEnd,
    hidden_act: "silu",
    ...TINY_MODEL_SHAPE,
    initializer_range: 0.02,
    max_window_layers: TINY_MODEL_SHAPE.num_hidden_layers,
    model_type: "qwen2",
    sliding_window: TINY_MODEL_SHAPE.max_position_embeddings,
    tie_word_embeddings: true,
    torch_dtype: "float32",
    use_cache: true,
    use_sliding_window: false,
    vocab_size: TINY_VOCAB_SIZE,
  };
  const generationConfig = {
    bos_token_id: endOfText,
    eos_token_id: [imEnd, endOfText],
    pad_token_id: endOfText,
  };
  const text = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
  return {
    "tokenizer.json": text(tokenizer),
    "tokenizer_config.json": text(tokenizerConfig),
    "config.json": text(config),
    "generation_config.json": text(generationConfig),
  };
}

/**
 * Writes the tiny model folder (creating it) and returns the written paths.
 *
 * @example
 * ```ts
 * import { writeTinyModel } from "./make_tiny_tokenizer.ts";
 * const dir = await Deno.makeTempDir();
 * console.log(await writeTinyModel(dir)); // [".../tokenizer.json", ...]
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function writeTinyModel(dir: string, configDir?: URL): Promise<string[]> {
  const files = await buildTinyModelFiles(configDir);
  await Deno.mkdir(dir, { recursive: true });
  const written: string[] = [];
  for (const [name, content] of Object.entries(files)) {
    const path = `${dir.replace(/\/+$/, "")}/${name}`;
    await Deno.writeTextFile(path, content);
    written.push(path);
  }
  return written;
}

if (import.meta.main) {
  const dir = Deno.args[0] ?? TINY_MODEL_DIR;
  const written = await writeTinyModel(dir);
  console.log(
    `Wrote the tiny model folder ${dir}: ${
      written.map((p) => p.slice(p.lastIndexOf("/") + 1)).join(", ")
    }`,
  );
}
