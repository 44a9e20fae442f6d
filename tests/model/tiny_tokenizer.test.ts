/**
 * The tiny default model's folder: the script is deterministic (two runs in
 * separate processes write identical bytes), the tokenizer loads with our
 * Tokenizer, a FrozenLake prompt rendered as the env manager renders it stays
 * short and round-trips, any text encodes (byte fallback), the config is a
 * small Qwen2; and the BPE trainer against a naive reference trainer.
 */
import { deepStrictEqual, equal, ok, throws } from "node:assert/strict";
import { fillTemplate } from "../../lib/rollout/prompt.ts";
import { loadConfig } from "../../lib/config/load_config.ts";
import type { CustomEnv } from "../../lib/config/schema/env_manager.ts";
import {
  BYTE_TO_UNICODE,
  byteLevelPieces,
  trainByteLevelBpe,
} from "../../lib/model/bpe_trainer.ts";
import {
  ChatEncoder,
  type ChatMessage,
  QWEN2_5_CHAT_TEMPLATE,
} from "../../lib/model/chat_template.ts";
import {
  buildTinyModelFiles,
  TINY_SPECIAL_TOKENS,
  TINY_VOCAB_SIZE,
} from "../../lib/model/make_tiny_tokenizer.ts";
import { tinyTokenizerCorpus } from "../../lib/model/tiny_corpus.ts";
import { Tokenizer } from "../../lib/model/tokenizer.ts";
import { createEnv } from "../../envs/registry.ts";
import { Rng } from "../../envs/random.ts";

const REPO_ROOT = new URL("../../", import.meta.url);
const FILES = ["tokenizer.json", "tokenizer_config.json", "config.json", "generation_config.json"];

const tmp = await Deno.makeTempDir({ prefix: "agentrl_tiny_" });
globalThis.addEventListener("unload", () => Deno.removeSync(tmp, { recursive: true }));

/** Runs the script as a user would, into `dir`. */
async function runScript(dir: string): Promise<void> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "lib/model/make_tiny_tokenizer.ts",
      dir,
    ],
    cwd: REPO_ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  equal(code, 0, `exit ${code}\n${d.decode(stdout)}\n${d.decode(stderr)}`);
  ok(d.decode(stdout).includes(`Wrote the tiny model folder ${dir}`));
}

const dirA = `${tmp}/a/tiny`;
const dirB = `${tmp}/b/tiny`;
await runScript(dirA);
await runScript(dirB);
const tiny = await Tokenizer.load(dirA);

Deno.test("script: two runs write identical bytes, equal to the in-process build", async () => {
  const built = await buildTinyModelFiles();
  for (const name of FILES) {
    const a = await Deno.readFile(`${dirA}/${name}`);
    const b = await Deno.readFile(`${dirB}/${name}`);
    deepStrictEqual(a, b, name);
    equal(new TextDecoder().decode(a), built[name as keyof typeof built], name);
  }
});

Deno.test("tokenizer: loads with our Tokenizer; Qwen-style special tokens at the end", () => {
  equal(tiny.vocabSize, TINY_VOCAB_SIZE);
  const base = TINY_VOCAB_SIZE - 3;
  equal(tiny.requireTokenId("<|endoftext|>"), base);
  equal(tiny.requireTokenId("<|im_start|>"), base + 1);
  equal(tiny.requireTokenId("<|im_end|>"), base + 2);
  deepStrictEqual([...tiny.specialTokens.keys()], [...TINY_SPECIAL_TOKENS]);
  deepStrictEqual(tiny.eosTokenIds, [base + 2, base]);
  equal(tiny.padTokenId, base);
  equal(tiny.chatTemplate, QWEN2_5_CHAT_TEMPLATE);
  // The 256 bytes are ids 0..255, in byte order.
  for (let b = 0; b < 256; b++) equal(tiny.tokenToId(BYTE_TO_UNICODE[b]!), b);
  // Action words and the answer tags are a handful of tokens.
  ok(
    tiny.encode("<answer>Left</answer>").length <= 6,
    String(tiny.tokenize("<answer>Left</answer>")),
  );
  for (const word of ["Left", "Down", "Right", "Up"]) {
    ok(tiny.encode(word).length <= 2, `${word}: ${tiny.tokenize(word)}`);
  }
});

Deno.test("config.json: a small Qwen2 whose vocabulary is the tokenizer's", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${dirA}/config.json`));
  deepStrictEqual(config.architectures, ["Qwen2ForCausalLM"]);
  equal(config.model_type, "qwen2");
  equal(config.vocab_size, tiny.vocabSize);
  ok(config.hidden_size >= 64 && config.hidden_size <= 128);
  ok(config.num_hidden_layers >= 2 && config.num_hidden_layers <= 4);
  equal(config.num_attention_heads, 4);
  equal(config.num_key_value_heads, 2);
  equal(config.head_dim * config.num_attention_heads, config.hidden_size);
  equal(config.tie_word_embeddings, true);
  equal(config.rope_theta, 10000);
  equal(config.eos_token_id, tiny.requireTokenId("<|im_end|>"));
  equal(config.bos_token_id, tiny.requireTokenId("<|endoftext|>"));
  const generation = JSON.parse(await Deno.readTextFile(`${dirA}/generation_config.json`));
  deepStrictEqual(generation.eos_token_id, [...tiny.eosTokenIds]);
});

Deno.test("FrozenLake: the env manager's first prompt is under 400 tokens and round-trips", async () => {
  // The shipped default config, rendered as `agentrl rollout` shows the first turn.
  const { config } = await loadConfig({ configName: "agent_val_frozen_lake" });
  const entry = (config.custom_envs as Record<string, CustomEnv>).FrozenLake!;
  ok(entry.agent_system_template && entry.agent_template);
  const env = await createEnv(entry.env_type, entry.env_config ?? {});
  const chat = new ChatEncoder(tiny);
  const qwenStyleLength: number[] = [];
  for (let seed = 0; seed < 32; seed++) {
    const { observation } = await env.reset(seed);
    const user = fillTemplate(entry.agent_template!, {
      turn_idx: 1,
      observation,
      actions_left: entry.max_steps,
      max_response_length: entry.max_tokens_per_step,
    });
    const messages: ChatMessage[] = [
      { role: "system", content: entry.agent_system_template! },
      { role: "user", content: `${env.instruction}\n${user}` },
    ];
    const ids = chat.encode(messages);
    qwenStyleLength.push(ids.length);
    ok(ids.length < 400, `seed ${seed}: ${ids.length} tokens`);
    equal(tiny.decode(ids), chat.template.render(messages, { addGenerationPrompt: true }));
    ok(tiny.decode(ids).includes(observation));
  }
  // A few hundred tokens at most: the prompt is mostly words the corpus knows.
  ok(Math.max(...qwenStyleLength) < 250, String(qwenStyleLength));
});

Deno.test("byte fallback: any text encodes and decodes to itself", () => {
  const samples = [
    "你好，世界！こんにちは 안녕하세요 🌍🚀👨‍👩‍👧",
    "\u0000\u0001\u007f control \t\r\n bytes",
    "e\u0301 and é stay distinct (no normalizer)",
    "WebShop [SEP] i need a long clip-in hair extension, and price lower than 40.00 dollars",
  ];
  const rng = new Rng(7, 3);
  for (let i = 0; i < 200; i++) {
    let s = "";
    const n = 1 + Math.floor(rng.float() * 20);
    for (let j = 0; j < n; j++) {
      // Any code point outside the surrogate range.
      let cp = Math.floor(rng.float() * 0x10ffff);
      if (cp >= 0xd800 && cp <= 0xdfff) cp = 0x41;
      s += String.fromCodePoint(cp);
    }
    samples.push(s);
  }
  for (const s of samples) equal(tiny.decode(tiny.encode(s)), s, JSON.stringify(s));
});

/** A naive BPE trainer: recount every pair each round (the reference for the incremental one). */
function naiveBpe(texts: string[], vocabSize: number): Array<[string, string]> {
  const counts = new Map<string, number>();
  for (const t of texts) {
    for (const p of byteLevelPieces(t)) counts.set(p, (counts.get(p) ?? 0) + 1);
  }
  const ids = new Map<string, number>(BYTE_TO_UNICODE.map((c, i) => [c, i]));
  const words = [...counts].map(([w, c]) => ({ syms: [...w], c }));
  const merges: Array<[string, string]> = [];
  let size = 256;
  while (size < vocabSize) {
    const pairs = new Map<string, { a: string; b: string; n: number }>();
    for (const { syms, c } of words) {
      for (let i = 0; i + 1 < syms.length; i++) {
        const key = `${syms[i]}\u0000${syms[i + 1]}`;
        const e = pairs.get(key) ?? { a: syms[i]!, b: syms[i + 1]!, n: 0 };
        e.n += c;
        pairs.set(key, e);
      }
    }
    let best: { a: string; b: string; n: number } | undefined;
    for (const e of pairs.values()) {
      const rank = (x: typeof e) => [x.n, -ids.get(x.a)!, -ids.get(x.b)!];
      if (!best) best = e;
      else {
        const [n1, a1, b1] = rank(e), [n2, a2, b2] = rank(best);
        if (n1! > n2! || (n1 === n2 && (a1! > a2! || (a1 === a2 && b1! > b2!)))) best = e;
      }
    }
    if (!best || best.n < 2) break;
    merges.push([best.a, best.b]);
    const merged = best.a + best.b;
    if (!ids.has(merged)) ids.set(merged, size++);
    for (const w of words) {
      const out: string[] = [];
      for (let i = 0; i < w.syms.length; i++) {
        if (w.syms[i] === best.a && w.syms[i + 1] === best.b) {
          out.push(merged);
          i++;
        } else out.push(w.syms[i]!);
      }
      w.syms = out;
    }
  }
  return merges;
}

Deno.test("trainer: the same merges as a naive reference trainer; order does not matter", async () => {
  const corpus = (await tinyTokenizerCorpus()).slice(0, 40)
    .map((t) => t.replaceAll(/<\|im_start\|>|<\|im_end\|>|<\|endoftext\|>/g, "\n"));
  const rng = new Rng(11, 0);
  const alphabet = ["a", "b", "ab", "ba", " ", "√", "_", "\n", "é", "aa"];
  for (let i = 0; i < 30; i++) {
    let s = "";
    for (let j = 0; j < 40; j++) s += alphabet[Math.floor(rng.float() * alphabet.length)];
    corpus.push(s);
  }
  const ours = trainByteLevelBpe(corpus, { vocabSize: 500 });
  deepStrictEqual(ours.merges, naiveBpe(corpus, 500));
  equal(ours.vocab.size, 500);
  deepStrictEqual(trainByteLevelBpe([...corpus].reverse(), { vocabSize: 500 }).merges, ours.merges);
  deepStrictEqual(
    trainByteLevelBpe(["low lower lowest"], { vocabSize: 259 }).merges,
    [["l", "o"], ["lo", "w"], ["Ġ", "low"]],
  );
  // Special tokens are cut out before counting: nothing merges across them.
  const special = trainByteLevelBpe(["ab<|x|>ab<|x|>ab"], {
    vocabSize: 300,
    specialTokens: ["<|x|>"],
  });
  deepStrictEqual(special.merges, [["a", "b"]]);
  throws(() => trainByteLevelBpe([], { vocabSize: 100 }), /vocabSize 100 is not valid/);
  throws(
    () => trainByteLevelBpe([], { vocabSize: 300, minFrequency: 0 }),
    /minFrequency 0 is not valid/,
  );
});
