/**
 * A Hugging Face tokenizer loaded offline from a model folder: `tokenizer.json`
 * (the model, pre-tokenizer, decoder and added tokens) with the optional
 * `tokenizer_config.json` (named special tokens, chat template),
 * `chat_template.jinja` and `generation_config.json` (end-of-sequence ids).
 * Encoding and decoding run in `npm:@huggingface/tokenizers` (pure TypeScript,
 * no native code, no network).
 *
 * @module
 */
import { Tokenizer as HfTokenizer } from "npm:@huggingface/tokenizers@0.2.0";

/** One entry of `tokenizer.json`'s `added_tokens`. */
export interface AddedTokenInfo {
  readonly id: number;
  readonly content: string;
  /** Special tokens are dropped by `decode(..., { skipSpecialTokens: true })`. */
  readonly special: boolean;
  /** Whitespace to the left is swallowed by the token. */
  readonly lstrip: boolean;
  /** Whitespace to the right is swallowed by the token. */
  readonly rstrip: boolean;
  /** Matched in the normalized text rather than the raw text. */
  readonly normalized: boolean;
  readonly singleWord: boolean;
}

/** Options of {@linkcode Tokenizer.encode}. */
export interface EncodeOptions {
  /**
   * Let the post-processor add its special tokens (BOS/EOS, `[CLS]`...), as
   * Hugging Face's `add_special_tokens` (default true). Qwen's adds none. Added
   * tokens written in the text (`<|im_start|>`) are matched either way.
   */
  addSpecialTokens?: boolean;
}

/** Options of {@linkcode Tokenizer.decode}. */
export interface DecodeOptions {
  /** Leave out special tokens (added tokens marked `special`), default false. */
  skipSpecialTokens?: boolean;
}

/** How many recent texts' ids a tokenizer keeps (prompts repeat within a group). */
const ENCODE_MEMO_SIZE = 2048;

/** The parsed files {@linkcode Tokenizer.fromJSON} builds a tokenizer from. */
export interface TokenizerSources {
  /** The parsed `tokenizer.json`. */
  tokenizerJson: unknown;
  /** The parsed `tokenizer_config.json` (optional). */
  tokenizerConfig?: unknown;
  /** The parsed `generation_config.json` (optional): its `eos_token_id` joins the EOS ids. */
  generationConfig?: unknown;
  /** A chat template that overrides `tokenizer_config.json`'s (`chat_template.jinja`). */
  chatTemplate?: string;
  /** Where the files came from, for error messages (default `"<memory>"`). */
  source?: string;
}

/**
 * A tokenizer file could not be read or used. The message names the file and
 * what was expected.
 *
 * @example
 * ```ts
 * import { Tokenizer, TokenizerLoadError } from "./tokenizer.ts";
 * try {
 *   await Tokenizer.load("/nonexistent/model");
 * } catch (e) {
 *   console.log(e instanceof TokenizerLoadError, (e as TokenizerLoadError).path);
 * }
 * ```
 */
export class TokenizerLoadError extends Error {
  /** The file (or folder) at fault. */
  readonly path: string;

  /** An error about `path`. */
  constructor(path: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "TokenizerLoadError";
    this.path = path;
  }
}

type Json = Record<string, unknown>;

/** The `tokenizer.json` model types `@huggingface/tokenizers` implements. */
const MODEL_TYPES: readonly string[] = ["BPE", "WordPiece", "WordLevel", "Unigram"];

/**
 * A tokenizer: text to token ids and back, its special tokens and vocabulary
 * size. Load a model folder with {@linkcode Tokenizer.load}, or parsed JSON
 * with {@linkcode Tokenizer.fromJSON}.
 *
 * @example
 * ```ts
 * import { Tokenizer } from "./tokenizer.ts";
 * // A three-entry BPE with one special token (a real folder has a tokenizer.json).
 * const tok = Tokenizer.fromJSON({
 *   tokenizerJson: {
 *     model: { type: "BPE", vocab: { h: 0, i: 1, hi: 2 }, merges: ["h i"] },
 *     added_tokens: [{ id: 3, content: "<|im_end|>", special: true }],
 *   },
 *   tokenizerConfig: { eos_token: "<|im_end|>" },
 * });
 * console.log(tok.encode("hi<|im_end|>")); // [2, 3]
 * console.log(tok.decode([2, 3], { skipSpecialTokens: true })); // "hi"
 * console.log(tok.vocabSize, tok.eosTokenIds); // 4 [3]
 * ```
 */
export class Tokenizer {
  /** The folder (or `"<memory>"`) the tokenizer came from. */
  readonly source: string;
  /**
   * One more than the largest token id: the smallest embedding table that
   * covers every id (Hugging Face's `len(tokenizer)` when ids are contiguous).
   * A model's `config.json` `vocab_size` may be larger (padding rows).
   */
  readonly vocabSize: number;
  /** `tokenizer.json`'s added tokens, by id. */
  readonly addedTokens: readonly AddedTokenInfo[];
  /** Special tokens (content → id): added tokens marked `special`. */
  readonly specialTokens: ReadonlyMap<string, number>;
  /** The named special tokens of `tokenizer_config.json` (undefined when absent or null). */
  readonly bosToken: string | undefined;
  readonly eosToken: string | undefined;
  readonly padToken: string | undefined;
  readonly unkToken: string | undefined;
  /** The ids of `bosToken` and `padToken` (undefined when absent or not in the vocabulary). */
  readonly bosTokenId: number | undefined;
  readonly padTokenId: number | undefined;
  /**
   * Token ids that end a generation: `tokenizer_config.json`'s `eos_token`, then
   * `generation_config.json`'s `eos_token_id` (Qwen2.5-Instruct: 151645, 151643).
   */
  readonly eosTokenIds: readonly number[];
  /** The `chat_template` source, when the folder has one. */
  readonly chatTemplate: string | undefined;
  /** The file the chat template came from (`<source>/chat_template.jinja` or `tokenizer_config.json`). */
  readonly chatTemplateFile: string | undefined;
  /**
   * Why `tokenizer_config.json`'s `chat_template` gives no template (a list without a
   * `default` entry, say), when it does not: asking for the folder's template then fails.
   */
  readonly chatTemplateProblem: string | undefined;
  readonly #hf: HfTokenizer;
  /** Recent encodings by text (insertion order: the oldest is dropped first). */
  readonly #encoded = new Map<string, number[]>();
  readonly #specialIds: ReadonlySet<number>;
  readonly #unkId: number | undefined;

  private constructor(hf: HfTokenizer, fields: {
    source: string;
    vocabSize: number;
    addedTokens: AddedTokenInfo[];
    specialTokens: Map<string, number>;
    named: Record<"bos" | "eos" | "pad" | "unk", string | undefined>;
    eosTokenIds: number[];
    bosTokenId: number | undefined;
    padTokenId: number | undefined;
    chatTemplate: string | undefined;
    chatTemplateFile: string | undefined;
    chatTemplateProblem?: string | undefined;
    unkId: number | undefined;
  }) {
    this.#hf = hf;
    this.source = fields.source;
    this.vocabSize = fields.vocabSize;
    this.addedTokens = Object.freeze(fields.addedTokens.map((t) => Object.freeze(t)));
    this.specialTokens = fields.specialTokens;
    this.bosToken = fields.named.bos;
    this.eosToken = fields.named.eos;
    this.padToken = fields.named.pad;
    this.unkToken = fields.named.unk;
    this.eosTokenIds = Object.freeze(fields.eosTokenIds);
    this.bosTokenId = fields.bosTokenId;
    this.padTokenId = fields.padTokenId;
    this.chatTemplate = fields.chatTemplate;
    this.chatTemplateFile = fields.chatTemplateFile;
    this.chatTemplateProblem = fields.chatTemplateProblem;
    this.#specialIds = new Set(fields.specialTokens.values());
    this.#unkId = fields.unkId;
  }

  /**
   * Loads `tokenizer.json` from a model folder, with `tokenizer_config.json`,
   * `chat_template.jinja` and `generation_config.json` when present. Nothing is
   * downloaded. A missing `tokenizer.json`, a file that is not valid JSON, or a
   * tokenizer the library cannot build is a {@linkcode TokenizerLoadError}
   * naming the file.
   *
   * @example
   * ```ts
   * import { Tokenizer } from "./tokenizer.ts";
   * const dir = await Deno.makeTempDir();
   * await Deno.writeTextFile(
   *   `${dir}/tokenizer.json`,
   *   JSON.stringify({ model: { type: "BPE", vocab: { a: 0, b: 1, ab: 2 }, merges: ["a b"] } }),
   * );
   * const tok = await Tokenizer.load(dir);
   * console.log(tok.encode("abba")); // [2, 1, 0]
   * await Deno.remove(dir, { recursive: true });
   * ```
   */
  static async load(dir: string | URL): Promise<Tokenizer> {
    const folder = typeof dir === "string" ? dir.replace(/\/+$/, "") || "/" : dir;
    const file = (name: string) =>
      typeof folder === "string"
        ? `${folder === "/" ? "" : folder}/${name}`
        : new URL(name, folder.href.endsWith("/") ? folder : new URL(`${folder.href}/`));
    const source = typeof folder === "string" ? folder : folder.href;
    const tokenizerJson = await readJson(file("tokenizer.json"), true);
    const tokenizerConfig = await readJson(file("tokenizer_config.json"), false);
    const generationConfig = await readJson(file("generation_config.json"), false);
    const chatTemplate = await readText(file("chat_template.jinja"));
    return Tokenizer.fromJSON({
      tokenizerJson,
      source,
      ...(tokenizerConfig !== undefined ? { tokenizerConfig } : {}),
      ...(generationConfig !== undefined ? { generationConfig } : {}),
      ...(chatTemplate !== undefined ? { chatTemplate } : {}),
    });
  }

  /**
   * Builds a tokenizer from parsed `tokenizer.json` (and optional
   * `tokenizer_config.json` / `generation_config.json`) content.
   *
   * @example
   * ```ts
   * import { Tokenizer } from "./tokenizer.ts";
   * const tok = Tokenizer.fromJSON({
   *   tokenizerJson: { model: { type: "BPE", vocab: { a: 0, b: 1 }, merges: [] } },
   * });
   * console.log(tok.tokenize("ab")); // ["a", "b"]
   * ```
   */
  static fromJSON(sources: TokenizerSources): Tokenizer {
    const source = sources.source ?? "<memory>";
    const jsonPath = source === "<memory>" ? "tokenizer.json" : `${source}/tokenizer.json`;
    const configPath = source === "<memory>"
      ? "tokenizer_config.json"
      : `${source}/tokenizer_config.json`;
    const raw = sources.tokenizerJson;
    if (!isObject(raw)) {
      throw new TokenizerLoadError(
        jsonPath,
        `Tokenizer file ${jsonPath} holds ${describe(raw)}: expected a JSON object`,
      );
    }
    if (!isObject(raw.model)) {
      throw new TokenizerLoadError(
        jsonPath,
        `Tokenizer file ${jsonPath} has no "model" object: expected a Hugging Face tokenizer.json`,
      );
    }
    const modelType = raw.model.type;
    if (modelType !== undefined && !MODEL_TYPES.includes(modelType as string)) {
      throw new TokenizerLoadError(
        jsonPath,
        `Tokenizer file ${jsonPath} has model type ${JSON.stringify(modelType)}: expected one of ` +
          MODEL_TYPES.join(", "),
      );
    }
    const config = sources.tokenizerConfig ?? {};
    if (!isObject(config)) {
      throw new TokenizerLoadError(
        configPath,
        `Tokenizer config ${configPath} holds ${describe(config)}: expected a JSON object`,
      );
    }
    const addedTokens = parseAddedTokens(raw.added_tokens, jsonPath);
    // The library wants every section present (null when unused).
    const json: Json = {
      normalizer: null,
      pre_tokenizer: null,
      post_processor: null,
      decoder: null,
      ...raw,
      added_tokens: raw.added_tokens ?? [],
    };
    // Hugging Face now defaults to no clean-up; it would break decode(encode(x)) == x.
    const hfConfig: Json = {
      ...config,
      clean_up_tokenization_spaces: config.clean_up_tokenization_spaces ?? false,
    };
    let hf: HfTokenizer;
    try {
      hf = new HfTokenizer(json, hfConfig);
    } catch (e) {
      throw new TokenizerLoadError(
        jsonPath,
        `Tokenizer file ${jsonPath} could not be loaded: ${e instanceof Error ? e.message : e}`,
        { cause: e },
      );
    }
    let maxId = -1;
    for (const id of hf.get_vocab(true).values()) if (id > maxId) maxId = id;
    if (maxId < 0) {
      throw new TokenizerLoadError(jsonPath, `Tokenizer file ${jsonPath} has an empty vocabulary`);
    }
    const specialTokens = new Map<string, number>();
    for (const t of addedTokens) if (t.special) specialTokens.set(t.content, t.id);
    const named = {
      bos: tokenName(config.bos_token),
      eos: tokenName(config.eos_token),
      pad: tokenName(config.pad_token),
      unk: tokenName(config.unk_token),
    };
    const idOf = (token: string | undefined, key: string): number | undefined => {
      if (token === undefined) return undefined;
      const id = hf.token_to_id(token);
      if (id === undefined) {
        throw new TokenizerLoadError(
          configPath,
          `Tokenizer config ${configPath} names ${key} ${
            JSON.stringify(token)
          }, which is not in the vocabulary of ${jsonPath}`,
        );
      }
      return id;
    };
    const eosTokenIds: number[] = [];
    const eos = idOf(named.eos, "eos_token");
    if (eos !== undefined) eosTokenIds.push(eos);
    const generation = sources.generationConfig;
    if (isObject(generation)) {
      const ids = generation.eos_token_id;
      for (const id of Array.isArray(ids) ? ids : ids === undefined || ids === null ? [] : [ids]) {
        if (!Number.isInteger(id) || id < 0 || id > maxId) {
          throw new TokenizerLoadError(
            `${source}/generation_config.json`,
            `generation_config.json eos_token_id ${JSON.stringify(id)} is not valid: expected ` +
              `token ids in [0, ${maxId + 1})`,
          );
        }
        if (!eosTokenIds.includes(id)) eosTokenIds.push(id);
      }
    }
    const picked = sources.chatTemplate === undefined ? pickChatTemplate(config.chat_template) : {};
    const configTemplate = picked.template;
    return new Tokenizer(hf, {
      source,
      vocabSize: maxId + 1,
      addedTokens,
      specialTokens,
      named,
      eosTokenIds,
      bosTokenId: named.bos === undefined ? undefined : hf.token_to_id(named.bos),
      padTokenId: named.pad === undefined ? undefined : hf.token_to_id(named.pad),
      chatTemplate: sources.chatTemplate ?? configTemplate,
      chatTemplateProblem: picked.problem,
      chatTemplateFile: sources.chatTemplate !== undefined
        ? `${source}/chat_template.jinja`
        : configTemplate !== undefined
        ? `${source}/tokenizer_config.json`
        : undefined,
      unkId: typeof raw.model.unk_token === "string"
        ? hf.token_to_id(raw.model.unk_token)
        : named.unk === undefined
        ? undefined
        : hf.token_to_id(named.unk),
    });
  }

  /**
   * The token ids of `text`. Added tokens written in the text (`<|im_start|>`)
   * become their ids.
   *
   * @example
   * ```ts
   * import { Tokenizer } from "./tokenizer.ts";
   * const tok = Tokenizer.fromJSON({
   *   tokenizerJson: { model: { type: "BPE", vocab: { a: 0, b: 1, ab: 2 }, merges: ["a b"] } },
   * });
   * console.log(tok.encode("aab")); // [0, 2]
   * ```
   */
  encode(text: string, options: EncodeOptions = {}): number[] {
    if (typeof text !== "string") {
      throw new TypeError(`Text to encode is ${describe(text)}: expected a string`);
    }
    const special = options.addSpecialTokens ?? true;
    // step-wise prompts repeat (a group's boards): encoding is pure, so a seen text is a copy
    const key = `${special ? 1 : 0}${text}`;
    const seen = this.#encoded.get(key);
    if (seen !== undefined) return seen.slice();
    const ids = this.#encodeUncached(text, special);
    if (this.#encoded.size >= ENCODE_MEMO_SIZE) {
      this.#encoded.delete(this.#encoded.keys().next().value!); // the oldest first
    }
    this.#encoded.set(key, ids.slice());
    return ids;
  }

  #encodeUncached(text: string, addSpecialTokens: boolean): number[] {
    const { ids, tokens } = this.#hf.encode(text, { add_special_tokens: addSpecialTokens });
    for (let i = 0; i < ids.length; i++) {
      if (ids[i] !== undefined) continue;
      // The library leaves WordLevel's unknown words without an id.
      if (this.#unkId === undefined) {
        throw new RangeError(
          `Text piece ${JSON.stringify(tokens[i])} has no token id in ${this.source}, and the ` +
            "tokenizer has no unknown token",
        );
      }
      ids[i] = this.#unkId;
    }
    return ids;
  }

  /**
   * The text of token ids. Byte-level pieces of an unfinished UTF-8 character
   * decode to U+FFFD. An id past the vocabulary (a model's unused padding row) decodes to
   * nothing, as in Hugging Face; a negative or fractional id is a RangeError.
   *
   * @example
   * ```ts
   * import { Tokenizer } from "./tokenizer.ts";
   * const tok = Tokenizer.fromJSON({
   *   tokenizerJson: {
   *     model: { type: "BPE", vocab: { a: 0, b: 1 }, merges: [] },
   *     decoder: { type: "Fuse" },
   *     added_tokens: [{ id: 2, content: "</s>", special: true }],
   *   },
   * });
   * console.log(tok.decode([0, 1, 2])); // "ab</s>"
   * console.log(tok.decode([0, 1, 2], { skipSpecialTokens: true })); // "ab"
   * ```
   */
  decode(ids: ArrayLike<number>, options: DecodeOptions = {}): string {
    const list: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (!Number.isInteger(id) || id < 0) {
        throw new RangeError(
          `Token id ${id} (at index ${i}) is not valid: expected an integer >= 0`,
        );
      }
      // a model row past the tokenizer (Qwen2.5: 151936 rows, 151665 tokens) has no text:
      // skipped, as Hugging Face's decode does, so sampling one cannot break a rollout
      if (id >= this.vocabSize) continue;
      if (options.skipSpecialTokens && this.#specialIds.has(id)) continue;
      list.push(id);
    }
    if (list.length === 0) return "";
    return this.#hf.decode(list, { skip_special_tokens: false });
  }

  /**
   * The token strings of `text` (byte-level pieces such as `Ġworld`), for
   * inspection.
   *
   * @example
   * ```ts
   * import { Tokenizer } from "./tokenizer.ts";
   * const tok = Tokenizer.fromJSON({
   *   tokenizerJson: { model: { type: "BPE", vocab: { a: 0, b: 1, ab: 2 }, merges: ["a b"] } },
   * });
   * console.log(tok.tokenize("abb")); // ["ab", "b"]
   * ```
   */
  tokenize(text: string): string[] {
    return this.#hf.tokenize(text);
  }

  /**
   * The id of a token string (a vocabulary entry or an added token), or undefined.
   *
   * @example
   * ```ts
   * import { Tokenizer } from "./tokenizer.ts";
   * const tok = Tokenizer.fromJSON({
   *   tokenizerJson: { model: { type: "BPE", vocab: { a: 0 }, merges: [] } },
   * });
   * console.log(tok.tokenToId("a"), tok.tokenToId("z")); // 0 undefined
   * ```
   */
  tokenToId(token: string): number | undefined {
    return this.#hf.token_to_id(token);
  }

  /**
   * The token string of an id, or undefined.
   *
   * @example
   * ```ts
   * import { Tokenizer } from "./tokenizer.ts";
   * const tok = Tokenizer.fromJSON({
   *   tokenizerJson: { model: { type: "BPE", vocab: { a: 0 }, merges: [] } },
   * });
   * console.log(tok.idToToken(0)); // "a"
   * ```
   */
  idToToken(id: number): string | undefined {
    return Number.isInteger(id) && id >= 0 && id < this.vocabSize
      ? this.#hf.id_to_token(id)
      : undefined;
  }

  /**
   * The id of a token that must exist (e.g. `<|im_start|>`); a missing one is
   * an error naming the tokenizer.
   *
   * @example
   * ```ts
   * import { Tokenizer } from "./tokenizer.ts";
   * const tok = Tokenizer.fromJSON({
   *   tokenizerJson: {
   *     model: { type: "BPE", vocab: { a: 0 }, merges: [] },
   *     added_tokens: [{ id: 1, content: "<|im_start|>", special: true }],
   *   },
   * });
   * console.log(tok.requireTokenId("<|im_start|>")); // 1
   * ```
   */
  requireTokenId(token: string): number {
    const id = this.tokenToId(token);
    if (id === undefined) {
      throw new RangeError(
        `Token ${JSON.stringify(token)} is not in the vocabulary of ${this.source}`,
      );
    }
    return id;
  }

  /**
   * Whether an id is a special token (dropped by `skipSpecialTokens`).
   *
   * @example
   * ```ts
   * import { Tokenizer } from "./tokenizer.ts";
   * const tok = Tokenizer.fromJSON({
   *   tokenizerJson: {
   *     model: { type: "BPE", vocab: { a: 0 }, merges: [] },
   *     added_tokens: [{ id: 1, content: "<|endoftext|>", special: true }],
   *   },
   * });
   * console.log(tok.isSpecial(1), tok.isSpecial(0)); // true false
   * ```
   */
  isSpecial(id: number): boolean {
    return this.#specialIds.has(id);
  }

  /**
   * The added token that `text` starts with (longest match), if any: used to
   * check that a chat turn boundary falls on a special token.
   *
   * @example
   * ```ts
   * import { Tokenizer } from "./tokenizer.ts";
   * const tok = Tokenizer.fromJSON({
   *   tokenizerJson: {
   *     model: { type: "BPE", vocab: { a: 0 }, merges: [] },
   *     added_tokens: [{ id: 1, content: "<|im_end|>", special: true }],
   *   },
   * });
   * console.log(tok.addedTokenAt("<|im_end|>a")?.id); // 1
   * ```
   */
  addedTokenAt(text: string): AddedTokenInfo | undefined {
    let best: AddedTokenInfo | undefined;
    for (const t of this.addedTokens) {
      if (text.startsWith(t.content) && (!best || t.content.length > best.content.length)) best = t;
    }
    return best;
  }

  /**
   * The added token with this id, if the id is one.
   *
   * @example
   * ```ts
   * import { Tokenizer } from "./tokenizer.ts";
   * const tok = Tokenizer.fromJSON({
   *   tokenizerJson: {
   *     model: { type: "BPE", vocab: { a: 0 }, merges: [] },
   *     added_tokens: [{ id: 1, content: "<|im_end|>", special: true }],
   *   },
   * });
   * console.log(tok.addedToken(1)?.content, tok.addedToken(0)); // "<|im_end|>" undefined
   * ```
   */
  addedToken(id: number): AddedTokenInfo | undefined {
    return this.addedTokens.find((t) => t.id === id);
  }
}

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return `the string ${JSON.stringify(v.slice(0, 40))}`;
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

/** `tokenizer_config.json` writes a token as a string or as `{ content, ... }` (AddedToken). */
function tokenName(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if (isObject(v) && typeof v.content === "string") return v.content;
  return undefined;
}

/**
 * `tokenizer_config.json`'s `chat_template`: a string, or the `default` entry of a list of
 * named templates (as transformers picks it); absent or null: none. Anything else is a problem
 * (its sentence), raised only when the template is asked for, as transformers does.
 */
function pickChatTemplate(v: unknown): { template?: string; problem?: string } {
  if (v === undefined || v === null) return {};
  if (typeof v === "string") return { template: v };
  const problem = (what: string) => ({
    problem: `tokenizer_config.json chat_template ${what}: expected a string, or a list of ` +
      '{ "name", "template" } entries with one named "default"',
  });
  if (!Array.isArray(v)) return problem(`is ${describe(v)}`);
  const entry = v.find((e) => isObject(e) && e.name === "default");
  if (entry === undefined) {
    const names = v.map((e) => isObject(e) && typeof e.name === "string" ? e.name : "?");
    return problem(`lists templates [${names.join(", ")}] but none named "default"`);
  }
  if (!isObject(entry) || typeof entry.template !== "string") {
    return problem(`has a "default" entry whose template is not a string`);
  }
  return { template: entry.template };
}

function parseAddedTokens(raw: unknown, path: string): AddedTokenInfo[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    throw new TokenizerLoadError(
      path,
      `Tokenizer file ${path} has "added_tokens" ${describe(raw)}: expected an array`,
    );
  }
  return raw.map((t, i) => {
    if (!isObject(t) || !Number.isInteger(t.id) || typeof t.content !== "string") {
      throw new TokenizerLoadError(
        path,
        `Tokenizer file ${path} has a bad added_tokens[${i}]: expected { id, content, ... }`,
      );
    }
    return {
      id: t.id as number,
      content: t.content,
      special: t.special === true,
      lstrip: t.lstrip === true,
      rstrip: t.rstrip === true,
      normalized: t.normalized === true,
      singleWord: t.single_word === true,
    };
  }).sort((a, b) => a.id - b.id);
}

function pathText(path: string | URL): string {
  return typeof path === "string" ? path : path.protocol === "file:" ? path.pathname : path.href;
}

async function readText(path: string | URL): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw new TokenizerLoadError(
      pathText(path),
      `Cannot read ${pathText(path)}: ${e instanceof Error ? e.message : e}`,
      { cause: e },
    );
  }
}

async function readJson(path: string | URL, required: boolean): Promise<unknown> {
  const text = await readText(path);
  const name = pathText(path);
  if (text === undefined) {
    if (!required) return undefined;
    throw new TokenizerLoadError(
      name,
      `Tokenizer file ${name} does not exist: expected a Hugging Face tokenizer.json in the ` +
        "model folder (nothing is downloaded)",
    );
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new TokenizerLoadError(
      name,
      `Tokenizer file ${name} is not valid JSON: ${e instanceof Error ? e.message : e}`,
      { cause: e },
    );
  }
}
