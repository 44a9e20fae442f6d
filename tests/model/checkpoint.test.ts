// Hugging Face model folders: config.json parsing (the real Qwen2.5-0.5B-Instruct
// config and bad ones), the Qwen2 weight list (its parameter count against the
// published 494,032,768), save/load round trips (single file, bf16, sharded with an
// index), and the errors for missing weights, shards and wrong shapes; and a save
// killed before its final rename leaves no folder that looks complete.
import assert from "node:assert/strict";
import {
  CheckpointError,
  checkQwen2Weights,
  expectedQwen2Weights,
  loadHfCheckpoint,
  saveHfCheckpoint,
} from "../../lib/model/checkpoint.ts";
import type { Qwen2Config } from "../../lib/model/config.ts";
import { configJsonText, parseQwen2Config, qwen2ConfigToJson } from "../../lib/model/hf_config.ts";
import { SafetensorsFile, writeSafetensors } from "../../lib/model/safetensors.ts";

/** Qwen2.5-0.5B-Instruct's config.json as published on the Hugging Face Hub. */
const QWEN25_05B_INSTRUCT = `{
  "architectures": [
    "Qwen2ForCausalLM"
  ],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "hidden_act": "silu",
  "hidden_size": 896,
  "initializer_range": 0.02,
  "intermediate_size": 4864,
  "max_position_embeddings": 32768,
  "max_window_layers": 21,
  "model_type": "qwen2",
  "num_attention_heads": 14,
  "num_hidden_layers": 24,
  "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000.0,
  "sliding_window": 32768,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.1",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
}`;

const TINY = {
  architectures: ["Qwen2ForCausalLM"],
  model_type: "qwen2",
  vocab_size: 40,
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  rope_theta: 1e6,
  tie_word_embeddings: false,
  eos_token_id: [3, 4],
  bos_token_id: 1,
};

function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Weight = [string, number[], Float32Array];

/** Random weights with the names and shapes the config implies. */
function randomWeights(config: Qwen2Config, seed = 1): Weight[] {
  const r = rng(seed);
  return expectedQwen2Weights(config).map(({ name, shape }) => [
    name,
    shape,
    Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => r() * 2 - 1),
  ]);
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_ckpt_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function checkpointError(fn: () => unknown, pattern: RegExp): CheckpointError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof CheckpointError, `expected a CheckpointError, got ${caught}`);
  assert.match(caught.message, pattern);
  return caught;
}

const bf16 = (x: number): number => {
  // Round-to-nearest-even to bf16 via float64 arithmetic (x is a float32 here,
  // not near overflow): add half an ulp, and on an exact tie pick the even one.
  if (x === 0) return x;
  const e = Math.floor(Math.log2(Math.abs(x)));
  const ulp = 2 ** (Math.max(e, -126) - 7);
  const q = x / ulp;
  const f = Math.floor(q), rest = q - f;
  const n = rest > 0.5 || (rest === 0.5 && f % 2 !== 0) ? f + 1 : f;
  return n * ulp;
};

Deno.test("parses Qwen2.5-0.5B-Instruct's config.json", () => {
  const c = parseQwen2Config(JSON.parse(QWEN25_05B_INSTRUCT), "Qwen2.5-0.5B-Instruct/config.json");
  assert.deepEqual(c, {
    vocab_size: 151936,
    hidden_size: 896,
    intermediate_size: 4864,
    num_hidden_layers: 24,
    num_attention_heads: 14,
    num_key_value_heads: 2,
    head_dim: 64,
    max_position_embeddings: 32768,
    rope_theta: 1e6,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
    attention_bias: true,
    bos_token_id: 151643,
    eos_token_id: 151645,
    model_type: "qwen2",
    rope_scaling: null,
  });
  // The published parameter count of Qwen2.5-0.5B.
  const weights = expectedQwen2Weights(c);
  const params = weights.reduce((n, w) => n + w.shape.reduce((a, b) => a * b, 1), 0);
  assert.equal(params, 494_032_768);
  assert.equal(weights.length, 1 + 24 * 12 + 1);
  assert.ok(!weights.some((w) => w.name === "lm_head.weight"));
  const shape = (n: string) => weights.find((w) => w.name === n)?.shape;
  assert.deepEqual(shape("model.embed_tokens.weight"), [151936, 896]);
  assert.deepEqual(shape("model.layers.23.self_attn.q_proj.weight"), [896, 896]);
  assert.deepEqual(shape("model.layers.23.self_attn.k_proj.bias"), [128]);
  assert.deepEqual(shape("model.layers.0.self_attn.o_proj.weight"), [896, 896]);
  assert.equal(shape("model.layers.0.self_attn.o_proj.bias"), undefined);
  assert.deepEqual(shape("model.layers.5.mlp.down_proj.weight"), [896, 4864]);
  assert.deepEqual(shape("model.layers.5.mlp.up_proj.weight"), [4864, 896]);
});

Deno.test("config defaults follow transformers' Qwen2Config", () => {
  const c = parseQwen2Config({
    model_type: "qwen2",
    vocab_size: 10,
    hidden_size: 12,
    intermediate_size: 20,
    num_hidden_layers: 1,
    num_attention_heads: 3,
    rope_scaling: null,
  }, "min.json");
  assert.equal(c.num_key_value_heads, 3);
  assert.equal(c.head_dim, 4);
  assert.equal(c.rope_theta, 10000);
  assert.equal(c.rms_norm_eps, 1e-6);
  assert.equal(c.tie_word_embeddings, false);
  assert.equal(c.attention_bias, true);
  assert.equal(c.max_position_embeddings, 32768);
  // "swish" is SiLU's other name; a zero dropout is no dropout
  parseQwen2Config({ ...TINY, hidden_act: "swish", attention_dropout: 0.0 }, "swish.json");
  assert.equal(c.bos_token_id, null);
  assert.equal(c.eos_token_id, null);
  // An explicit head_dim need not be hidden / heads.
  const wide = parseQwen2Config({ ...TINY, head_dim: 8 }, "wide.json");
  assert.deepEqual(
    expectedQwen2Weights(wide).find((w) => w.name.endsWith("0.self_attn.o_proj.weight"))?.shape,
    [16, 32],
  );
});

Deno.test("bad configs are refused naming the file, the key and what was expected", () => {
  const bad: [unknown, RegExp][] = [
    [[1], /expected a JSON object \(a model config\), found \[1\]/],
    [
      { ...TINY, model_type: "gemma" },
      /model_type is "gemma"; expected one this toolkit implements: "qwen2" \(Qwen2ForCausalLM\), "qwen3" \(Qwen3ForCausalLM\), "llama" \(LlamaForCausalLM\), "mistral" \(MistralForCausalLM\)/,
    ],
    [{ ...TINY, model_type: undefined }, /model_type is nothing; expected one this toolkit/],
    [
      { ...TINY, model_type: "qwen3" },
      /architectures is \["Qwen2ForCausalLM"\]; expected it to include "Qwen3ForCausalLM" \(model_type "qwen3"\)/,
    ],
    [
      { ...TINY, model_type: "qwen3", architectures: ["Qwen3ForCausalLM"], attention_bias: true },
      /attention_bias is true; Qwen3ForCausalLM then also biases o_proj, which is not implemented/,
    ],
    [
      { ...TINY, model_type: "llama", architectures: undefined, mlp_bias: true },
      /mlp_bias is true; MLP biases are not implemented/,
    ],
    [
      {
        ...TINY,
        model_type: "llama",
        architectures: ["LlamaForCausalLM"],
        rope_scaling: { rope_type: "llama3", factor: 32 },
      },
      /rope_scaling\.low_freq_factor is nothing; expected a positive number/,
    ],
    [
      { ...TINY, architectures: ["Qwen2ForSequenceClassification"] },
      /architectures is \["Qwen2ForSequenceClassification"\]; expected it to include "Qwen2ForCausalLM"/,
    ],
    [{ ...TINY, vocab_size: -3 }, /vocab_size is -3; expected a positive integer/],
    [{ ...TINY, hidden_size: 16.5 }, /hidden_size is 16.5; expected a positive integer/],
    [{ ...TINY, num_hidden_layers: "2" }, /num_hidden_layers is "2"; expected a positive integer/],
    [
      { ...TINY, intermediate_size: undefined },
      /intermediate_size is nothing; expected a positive/,
    ],
    [
      { ...TINY, num_attention_heads: 3, num_key_value_heads: 1 },
      /num_attention_heads \(3\) must divide hidden_size \(16\) when head_dim is not given/,
    ],
    [
      { ...TINY, num_key_value_heads: 3 },
      /num_key_value_heads \(3\) must divide num_attention_heads \(4\)/,
    ],
    [{ ...TINY, head_dim: 5 }, /head_dim is 5; expected an even number/],
    [{ ...TINY, rope_theta: 0 }, /rope_theta is 0; expected a positive number/],
    [{ ...TINY, rms_norm_eps: "1e-6" }, /rms_norm_eps is "1e-6"; expected a positive number/],
    [{ ...TINY, tie_word_embeddings: 1 }, /tie_word_embeddings is 1; expected true or false/],
    [{ ...TINY, hidden_act: "gelu" }, /hidden_act is "gelu"; expected "silu"/],
    [
      { ...TINY, attention_dropout: 0.1 },
      /attention_dropout is 0\.1; attention dropout is not implemented \(expected 0/,
    ],
    [{ ...TINY, use_sliding_window: true }, /sliding-window attention is not implemented/],
    [
      { ...TINY, rope_scaling: { type: "longrope", factor: 4 } },
      /rope_scaling is \{"type":"longrope","factor":4\}; RoPE scaling of type "longrope" is not implemented \(expected "default", "llama3", "linear" or "yarn"\)/,
    ],
    [
      { ...TINY, eos_token_id: "x" },
      /eos_token_id is "x"; expected a token id in \[0, 40\), a list/,
    ],
    [
      { ...TINY, bos_token_id: [1] },
      /bos_token_id is \[1\]; expected a token id in \[0, 40\) or null/,
    ],
    [
      { ...TINY, rope_scaling: { type: "linear", rope_type: "default", factor: 4 } },
      /rope_scaling has type "linear" and rope_type "default"; expected one type \(transformers 4\.x takes "rope_type" over "type"\)/,
    ],
    [
      { ...TINY, partial_rotary_factor: 0.5 },
      /partial_rotary_factor is 0\.5; rotating part of each head is not implemented \(expected 1 or none\)/,
    ],
    [
      { ...TINY, rope_parameters: { rope_type: "default", partial_rotary_factor: 0.25 } },
      /rope_parameters\.partial_rotary_factor is 0\.25; rotating part of each head is not implemented/,
    ],
    // an id the model cannot emit: generation would never stop on it
    [{ ...TINY, eos_token_id: 40 }, /eos_token_id is 40; expected a token id in \[0, 40\)/],
    [{ ...TINY, eos_token_id: [39, 151643] }, /eos_token_id is \[39,151643\]/],
  ];
  for (const [json, pattern] of bad) {
    const e = checkpointError(() => parseQwen2Config(json, "models/x/config.json"), pattern);
    assert.ok(e.message.startsWith("models/x/config.json: "), e.message);
    assert.equal(e.details.file, "models/x/config.json");
  }
});

/** A Qwen3-0.6B-shaped config.json (Qwen3's dense layout: head_dim 128 beside hidden 1024). */
const QWEN3_06B = {
  architectures: ["Qwen3ForCausalLM"],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  head_dim: 128,
  hidden_act: "silu",
  hidden_size: 1024,
  initializer_range: 0.02,
  intermediate_size: 3072,
  max_position_embeddings: 40960,
  max_window_layers: 28,
  model_type: "qwen3",
  num_attention_heads: 16,
  num_hidden_layers: 28,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_scaling: null,
  rope_theta: 1000000,
  sliding_window: null,
  tie_word_embeddings: true,
  torch_dtype: "bfloat16",
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

Deno.test("Qwen3 and Llama configs: their architectures, transformers' defaults for each, written back", () => {
  const q3 = parseQwen2Config(QWEN3_06B, "Qwen3-0.6B/config.json");
  assert.equal(q3.model_type, "qwen3");
  assert.equal(q3.head_dim, 128);
  assert.equal(q3.attention_bias, false);
  assert.equal(q3.max_position_embeddings, 40960);
  const weights = expectedQwen2Weights(q3);
  assert.equal(weights.length, 1 + 28 * 11 + 1); // no biases; q_norm and k_norm
  assert.equal(weights.reduce((n, w) => n + w.shape.reduce((a, b) => a * b, 1), 0), 596_049_920);
  assert.deepEqual(
    weights.find((w) => w.name === "model.layers.3.self_attn.q_norm.weight")?.shape,
    [
      128,
    ],
  );
  assert.deepEqual(
    weights.find((w) => w.name === "model.layers.3.self_attn.q_proj.weight")?.shape,
    [
      2048,
      1024,
    ],
  );
  // Qwen3Config's defaults: head_dim 128 (not hidden / heads), no attention bias.
  const q3min = parseQwen2Config({ ...TINY, model_type: "qwen3", architectures: undefined }, "m");
  assert.equal(q3min.head_dim, 128);
  assert.equal(q3min.attention_bias, false);
  // LlamaConfig's: head_dim hidden / heads, no attention bias, 2048 positions.
  const llama = parseQwen2Config({ ...TINY, model_type: "llama", architectures: undefined }, "l");
  assert.equal(llama.head_dim, 4);
  assert.equal(llama.attention_bias, false);
  assert.equal(llama.max_position_embeddings, 2048);
  assert.ok(!expectedQwen2Weights(llama).some((w) => /bias|q_norm/.test(w.name)));
  // bos 1 and eos 2 where config.json names none (Qwen's configs have no such default)
  const { bos_token_id: _b, eos_token_id: _e, ...noIds } = TINY;
  const llamaNoIds = parseQwen2Config(
    { ...noIds, model_type: "llama", architectures: undefined },
    "n",
  );
  assert.deepEqual([llamaNoIds.bos_token_id, llamaNoIds.eos_token_id], [1, 2]);
  // an explicit null is kept (transformers keeps None), and written back as null
  const llamaNulls = parseQwen2Config(
    {
      ...noIds,
      model_type: "llama",
      architectures: undefined,
      bos_token_id: null,
      eos_token_id: null,
    },
    "n",
  );
  assert.deepEqual([llamaNulls.bos_token_id, llamaNulls.eos_token_id], [null, null]);
  const written = JSON.parse(JSON.stringify(qwen2ConfigToJson(llamaNulls)));
  assert.deepEqual([written.bos_token_id, written.eos_token_id], [null, null]);
  const qwenNoIds = parseQwen2Config(
    { ...noIds, model_type: "qwen3", architectures: undefined },
    "n",
  );
  assert.deepEqual([qwenNoIds.bos_token_id, qwenNoIds.eos_token_id], [null, null]);
  // (a vocabulary without them: none)
  const tiny = parseQwen2Config(
    { ...noIds, vocab_size: 2, model_type: "llama", architectures: undefined },
    "n",
  );
  assert.deepEqual([tiny.bos_token_id, tiny.eos_token_id], [1, null]);
  for (const c of [q3, q3min, llama]) {
    const json = JSON.parse(JSON.stringify(qwen2ConfigToJson(c)));
    assert.equal(json.model_type, c.model_type);
    assert.deepEqual(json.architectures, [
      c.model_type === "qwen3" ? "Qwen3ForCausalLM" : "LlamaForCausalLM",
    ]);
    assert.equal(json.attention_bias, false);
    assert.deepEqual(parseQwen2Config(json, "back.json"), c);
  }
  assert.equal(qwen2ConfigToJson(llama).mlp_bias, false);
});

Deno.test("qwen2ConfigToJson writes what transformers expects and parses back unchanged", () => {
  const c = parseQwen2Config(JSON.parse(QWEN25_05B_INSTRUCT), "q.json");
  const json = qwen2ConfigToJson(c, { torch_dtype: "bfloat16" });
  assert.deepEqual(json.architectures, ["Qwen2ForCausalLM"]);
  assert.equal(json.model_type, "qwen2");
  assert.equal(json.hidden_act, "silu");
  assert.equal(json.use_sliding_window, false);
  assert.equal(json.rope_scaling, null);
  assert.equal(json.torch_dtype, "bfloat16");
  // Every field of the published config that describes the model is reproduced.
  const published = JSON.parse(QWEN25_05B_INSTRUCT) as Record<string, unknown>;
  for (const key of Object.keys(published)) {
    if (key === "transformers_version" || key === "max_window_layers") continue;
    assert.deepEqual(json[key], published[key], key);
  }
  assert.deepEqual(parseQwen2Config(JSON.parse(JSON.stringify(json)), "back.json"), c);
  const tiny = parseQwen2Config(TINY, "tiny.json");
  assert.equal(qwen2ConfigToJson(tiny).torch_dtype, "float32");
  assert.deepEqual(
    parseQwen2Config(JSON.parse(JSON.stringify(qwen2ConfigToJson(tiny))), "t"),
    tiny,
  );
});

Deno.test("save and load a model folder in f32: exact values, config.json last", async () => {
  await withDir(async (root) => {
    const config = parseQwen2Config(TINY, "tiny.json");
    const weights = randomWeights(config);
    const dir = `${root}/model`;
    const saved = await saveHfCheckpoint(dir, config, weights, {
      generationConfig: { eos_token_id: [3, 4], temperature: 0.7 },
      extraFiles: { "tokenizer.json": "{}" },
    });
    assert.equal(saved.files.at(-1), "config.json");
    assert.deepEqual(saved.files, [
      "model.safetensors",
      "generation_config.json",
      "tokenizer.json",
      "config.json",
    ]);
    assert.deepEqual([...Deno.readDirSync(root)].map((e) => e.name), ["model"]); // no temp left
    using ckpt = loadHfCheckpoint(dir);
    assert.deepEqual(ckpt.config, config);
    assert.deepEqual(ckpt.generationConfig, { eos_token_id: [3, 4], temperature: 0.7 });
    assert.deepEqual(ckpt.notes, []);
    assert.deepEqual(ckpt.weights.names(), weights.map(([n]) => n).sort());
    for (const [name, shape, data] of weights) {
      assert.deepEqual(ckpt.weights.shape(name), shape);
      assert.equal(ckpt.weights.dtype(name), "F32");
      assert.deepEqual(ckpt.weights.readF32(name), data, name);
    }
    assert.equal(saved.totalBytes, weights.reduce((n, [, , d]) => n + d.byteLength, 0));
    // transformers refuses safetensors files without metadata format "pt".
    using f = SafetensorsFile.open(`${dir}/model.safetensors`);
    assert.deepEqual(f.metadata, { format: "pt" });
    // A misspelled weight name suggests the right one.
    checkpointError(
      () => ckpt.weights.readF32("model.layers.1.mlp.up_proj.weigth"),
      /Weight 'model.layers.1.mlp.up_proj.weigth' not found in .*model.safetensors \(27 weights\); close names: model.layers.1.mlp.up_proj.weight/,
    );
  });
});

Deno.test("bf16 save rounds to nearest even and records torch_dtype", async () => {
  await withDir(async (root) => {
    const config = parseQwen2Config({ ...TINY, tie_word_embeddings: true }, "tiny.json");
    const weights = randomWeights(config, 2);
    await saveHfCheckpoint(`${root}/m`, config, weights, { dtype: "bf16" });
    const json = JSON.parse(Deno.readTextFileSync(`${root}/m/config.json`));
    assert.equal(json.torch_dtype, "bfloat16");
    assert.equal(json.tie_word_embeddings, true);
    using ckpt = loadHfCheckpoint(`${root}/m`);
    assert.ok(!ckpt.weights.has("lm_head.weight"));
    for (const [name, , data] of weights) {
      assert.equal(ckpt.weights.dtype(name), "BF16");
      const back = ckpt.weights.readF32(name);
      for (let i = 0; i < data.length; i++) {
        assert.equal(back[i], bf16(data[i]!), `${name}[${i}] = ${data[i]}`);
      }
    }
  });
});

Deno.test("sharded save writes an index and loads back across shards", async () => {
  await withDir(async (root) => {
    const config = parseQwen2Config(TINY, "tiny.json");
    const weights = randomWeights(config, 3);
    const dir = `${root}/sharded`;
    const maxShardBytes = 4000; // embed_tokens alone is 40 × 16 × 4 = 2560 bytes
    const saved = await saveHfCheckpoint(dir, config, weights, { maxShardBytes });
    const shards = saved.files.filter((f) => f.endsWith(".safetensors"));
    assert.ok(shards.length > 2, `expected several shards, got ${shards}`);
    shards.forEach((name, i) => {
      assert.equal(
        name,
        `model-${String(i + 1).padStart(5, "0")}-of-${
          String(shards.length).padStart(5, "0")
        }.safetensors`,
      );
    });
    assert.ok(!saved.files.includes("model.safetensors"));
    const index = JSON.parse(Deno.readTextFileSync(`${dir}/model.safetensors.index.json`));
    assert.equal(index.metadata.total_size, weights.reduce((n, [, , d]) => n + d.byteLength, 0));
    assert.deepEqual(Object.keys(index.weight_map).sort(), weights.map(([n]) => n).sort());
    for (const shard of shards) {
      using f = SafetensorsFile.open(`${dir}/${shard}`);
      const bytes = f.tensors().reduce((n, t) => n + t.end - t.begin, 0);
      assert.ok(bytes <= maxShardBytes || f.names().length === 1, `${shard}: ${bytes} bytes`);
      for (const name of f.names()) assert.equal(index.weight_map[name], shard);
    }
    using ckpt = loadHfCheckpoint(dir);
    for (const [name, , data] of weights) {
      assert.deepEqual(ckpt.weights.readF32(name), data, name);
      assert.equal(ckpt.weights.file(name), `${dir}/${index.weight_map[name]}`);
    }
  });
});

Deno.test("a missing shard, or a weight missing from its shard, is named", async () => {
  await withDir(async (root) => {
    const config = parseQwen2Config(TINY, "tiny.json");
    const dir = `${root}/m`;
    const saved = await saveHfCheckpoint(dir, config, randomWeights(config), {
      maxShardBytes: 4000,
    });
    const indexPath = `${dir}/model.safetensors.index.json`;
    const index = JSON.parse(Deno.readTextFileSync(indexPath));
    // Point one weight at a shard that does not hold it.
    const [first, second] = saved.files;
    const moved = Object.keys(index.weight_map).find((n) => index.weight_map[n] === first)!;
    index.weight_map[moved] = second;
    Deno.writeTextFileSync(indexPath, JSON.stringify(index));
    checkpointError(
      () => loadHfCheckpoint(dir),
      new RegExp(`maps weight '${moved}' to ${second}, but that shard has no such tensor`),
    );
    Deno.removeSync(`${dir}/${second}`);
    const e = checkpointError(
      () => loadHfCheckpoint(dir),
      new RegExp(`Shard ${dir}/${second} is missing: ${indexPath} maps \\d+ weights to it`),
    );
    assert.equal(e.details.file, `${dir}/${second}`);
    index.weight_map[moved] = "../elsewhere.safetensors";
    Deno.writeTextFileSync(indexPath, JSON.stringify(index));
    checkpointError(() => loadHfCheckpoint(dir), /expected a shard file name in the same folder/);
  });
});

Deno.test("missing weights and wrong shapes are listed; extras become notes", async () => {
  await withDir(async (root) => {
    const config = parseQwen2Config(TINY, "tiny.json");
    const weights = randomWeights(config);
    const save = async (name: string, list: Weight[]) => {
      await saveHfCheckpoint(`${root}/${name}`, config, list, { check: false });
      return `${root}/${name}`;
    };
    // One weight dropped, one misspelled.
    const dropped = await save(
      "missing",
      weights
        .filter(([n]) => n !== "model.layers.1.mlp.up_proj.weight")
        .map(([n, s, d]) => [n === "model.norm.weight" ? "model.norm.weigth" : n, s, d]),
    );
    const e = checkpointError(
      () => loadHfCheckpoint(dropped),
      /2 expected weights are missing: model.layers.1.mlp.up_proj.weight, model.norm.weight \(found 'model.norm.weigth'\)/,
    );
    assert.ok(e.message.includes(dropped));

    // Wrong shapes: a transposed k_proj, a vector as a matrix.
    const wrong = await save(
      "wrong",
      weights.map(([n, s, d]): Weight => {
        if (n === "model.layers.0.self_attn.k_proj.weight") return [n, [16, 8], d];
        if (n === "model.norm.weight") return [n, [1, 16], d];
        return [n, s, d];
      }),
    );
    checkpointError(
      () => loadHfCheckpoint(wrong),
      /weight 'model.layers.0.self_attn.k_proj.weight' has shape \[16, 8\]; expected \[8, 16\]\n {2}weight 'model.norm.weight' has shape \[1, 16\]; expected \[16\]/,
    );
    // Without the check the folder still opens (for inspection).
    using unchecked = loadHfCheckpoint(wrong, { check: false });
    assert.deepEqual(unchecked.weights.shape("model.norm.weight"), [1, 16]);

    // Extras are ignored with notes, as transformers does.
    const tied = parseQwen2Config({ ...TINY, tie_word_embeddings: true }, "tied.json");
    const extra = `${root}/extra`;
    await saveHfCheckpoint(extra, tied, [
      ...randomWeights(tied),
      ["lm_head.weight", [40, 16], new Float32Array(640)],
      ["model.layers.0.self_attn.rotary_emb.inv_freq", [2], new Float32Array(2)],
      ["model.layers.1.self_attn.rotary_emb.inv_freq", [2], new Float32Array(2)],
      ["value_head.weight", [1, 16], new Float32Array(16)],
    ], { check: false });
    using ckpt = loadHfCheckpoint(extra);
    assert.deepEqual(ckpt.notes, [
      "2 rotary inv_freq buffer(s) ignored (recomputed from rope_theta and rope_scaling)",
      "lm_head.weight ignored: tie_word_embeddings is true, so the output layer reuses model.embed_tokens.weight",
      "1 unexpected weight(s) ignored: value_head.weight",
    ]);
  });
});

Deno.test("a Qwen2 folder whose config says attention_bias false but holds q/k/v biases uses them, as transformers does", async () => {
  await withDir(async (root) => {
    const config = parseQwen2Config(TINY, "tiny.json");
    const dir = `${root}/biased`;
    await saveHfCheckpoint(dir, config, randomWeights(config));
    const json = JSON.parse(Deno.readTextFileSync(`${dir}/config.json`));
    Deno.writeTextFileSync(
      `${dir}/config.json`,
      JSON.stringify({ ...json, attention_bias: false }),
    );
    using ckpt = loadHfCheckpoint(dir);
    assert.equal(ckpt.config.attention_bias, true);
    assert.deepEqual(ckpt.notes, [
      "attention_bias is false in config.json but the weights have q/k/v biases: they are used, as transformers' Qwen2 always uses them",
    ]);
    // without biases in the folder, false stands (our own folders write it so)
    const plain = parseQwen2Config({ ...TINY, attention_bias: false }, "plain.json");
    const bare = `${root}/bare`;
    await saveHfCheckpoint(bare, plain, randomWeights(plain));
    using loaded = loadHfCheckpoint(bare);
    assert.equal(loaded.config.attention_bias, false);
    assert.deepEqual(loaded.notes, []);
    // a layer count far past the weights is named before the list of expected weights is built
    Deno.writeTextFileSync(
      `${bare}/config.json`,
      JSON.stringify({
        ...JSON.parse(Deno.readTextFileSync(`${bare}/config.json`)),
        num_hidden_layers: 1e8,
      }),
    );
    const e = checkpointError(
      () => loadHfCheckpoint(bare),
      /num_hidden_layers is 100000000, which needs at least 900000000 weights; the checkpoint holds 21/,
    );
    assert.equal(e.details.key, "num_hidden_layers");
  });
});

Deno.test("integer weights are refused by the check", () => {
  const c = parseQwen2Config({ ...TINY, num_hidden_layers: 1 }, "c");
  const specs = new Map(expectedQwen2Weights(c).map((w) => [w.name, w.shape]));
  checkpointError(
    () =>
      checkQwen2Weights(c, {
        names: () => [...specs.keys()],
        shape: (n) => specs.get(n)!,
        dtype: (n) => n === "model.norm.weight" ? "I32" : "BF16",
      }, "fake"),
    /Checkpoint fake does not match.*\n {2}weight 'model.norm.weight' is I32; expected one of F32, BF16, F16, F64/,
  );
});

Deno.test("folders without weights or config are explained", async () => {
  await withDir(async (root) => {
    const config = parseQwen2Config(TINY, "tiny.json");
    Deno.mkdirSync(`${root}/pt`);
    Deno.writeTextFileSync(`${root}/pt/config.json`, JSON.stringify(TINY));
    Deno.writeFileSync(`${root}/pt/pytorch_model.bin`, new Uint8Array(4));
    checkpointError(
      () => loadHfCheckpoint(`${root}/pt`),
      /has neither model.safetensors nor model.safetensors.index.json \(found pytorch_model.bin: PyTorch pickles are not read/,
    );
    Deno.mkdirSync(`${root}/noconfig`);
    await writeSafetensors(`${root}/noconfig/model.safetensors`, []);
    checkpointError(
      () => loadHfCheckpoint(`${root}/noconfig`),
      /Model config .*\/noconfig\/config.json does not exist/,
    );
    Deno.writeTextFileSync(`${root}/noconfig/config.json`, "{ nope");
    checkpointError(
      () => loadHfCheckpoint(`${root}/noconfig`),
      /noconfig\/config.json is not valid JSON/,
    );
    checkpointError(
      () => loadHfCheckpoint(`${root}/absent`),
      /Model folder .*\/absent does not exist/,
    );
    // a folder where config.json should be
    Deno.mkdirSync(`${root}/dirconfig/config.json`, { recursive: true });
    checkpointError(
      () => loadHfCheckpoint(`${root}/dirconfig`),
      /Model config .*\/dirconfig\/config.json cannot be read \(.*\): expected a JSON file/,
    );
    // Loading via a file URL works too.
    await saveHfCheckpoint(`${root}/url`, config, randomWeights(config));
    using ckpt = loadHfCheckpoint(new URL(`file://${root}/url/`));
    assert.equal(ckpt.config.hidden_size, 16);
  });
});

Deno.test("saving checks weights, refuses a non-empty folder unless overwrite", async () => {
  await withDir(async (root) => {
    const config = parseQwen2Config(TINY, "tiny.json");
    const weights = randomWeights(config);
    const dir = `${root}/m`;
    await assert.rejects(
      saveHfCheckpoint(dir, config, weights.slice(1)),
      /1 expected weight is missing: model.embed_tokens.weight/,
    );
    await assert.rejects(
      saveHfCheckpoint(dir, config, [...weights, ["extra.weight", [1], new Float32Array(1)]]),
      /1 weight\(s\) a Qwen2 checkpoint does not have: extra.weight/,
    );
    await assert.rejects(
      saveHfCheckpoint(dir, config, [["model.norm.weight", [16], new Float32Array(3)]]),
      /weight 'model.norm.weight' has shape \[16\] \(16 values\) but 3 values were given/,
    );
    assert.deepEqual([...Deno.readDirSync(root)], []); // nothing written, no temp left

    await saveHfCheckpoint(dir, config, weights, { maxShardBytes: 4000 });
    await assert.rejects(
      saveHfCheckpoint(dir, config, weights),
      /the folder exists and is not empty \(pass overwrite: true/,
    );
    const second = randomWeights(config, 9);
    await saveHfCheckpoint(dir, config, second, { overwrite: true });
    // The old shards and index are gone; the new single file is read.
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name).sort(), [
      "config.json",
      "model.safetensors",
    ]);
    assert.deepEqual([...Deno.readDirSync(root)].map((e) => e.name), ["m"]);
    using ckpt = loadHfCheckpoint(dir);
    assert.deepEqual(ckpt.weights.readF32(second[0]![0]), second[0]![2]);
    // An existing empty folder is simply filled.
    Deno.mkdirSync(`${root}/empty`);
    await saveHfCheckpoint(`${root}/empty`, config, weights);
    assert.ok(Deno.statSync(`${root}/empty/config.json`).isFile);
  });
});

Deno.test("a save killed before its final rename leaves no folder at the target", async () => {
  await withDir(async (root) => {
    const target = `${root}/model`;
    const checkpointUrl = new URL("../../lib/model/checkpoint.ts", import.meta.url).href;
    const hfConfigUrl = new URL("../../lib/model/hf_config.ts", import.meta.url).href;
    // The child saves a checkpoint, but its rename of the finished folder never
    // returns: it reports that and waits to be killed.
    const child = `
      import { expectedQwen2Weights, saveHfCheckpoint } from ${JSON.stringify(checkpointUrl)};
      import { parseQwen2Config } from ${JSON.stringify(hfConfigUrl)};
      const target = ${JSON.stringify(target)};
      const rename = Deno.rename;
      Deno.rename = (from, to) => {
        if (to !== target) return rename(from, to);
        console.log("HANGING");
        return new Promise(() => setInterval(() => {}, 1000));
      };
      const config = parseQwen2Config(${JSON.stringify(TINY)}, "c");
      const weights = expectedQwen2Weights(config).map(({ name, shape }) =>
        [name, shape, new Float32Array(shape.reduce((a, b) => a * b, 1))]);
      await saveHfCheckpoint(target, config, weights, { maxShardBytes: 4000 });
    `;
    const script = `${root}/child.ts`;
    Deno.writeTextFileSync(script, child);
    const proc = new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-check", "-A", script],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const reader = proc.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    while (!out.includes("HANGING")) {
      const { value, done } = await reader.read();
      if (done) break;
      out += value;
    }
    assert.match(out, /HANGING/);
    proc.kill("SIGKILL");
    await reader.cancel();
    const status = await proc.status;
    await proc.stderr.cancel();
    assert.equal(status.success, false);
    // Everything including config.json was written, in the temporary folder only.
    assert.equal(Deno.statSync(`${target}.tmp-${proc.pid}/config.json`).isFile, true);
    assert.throws(() => Deno.statSync(target), Deno.errors.NotFound);
    checkpointError(() => loadHfCheckpoint(target), /Model folder .* does not exist/);
  });
});

/** A Mistral-7B-v0.3-shaped config.json (no sliding window). */
const MISTRAL_7B_V03 = {
  architectures: ["MistralForCausalLM"],
  attention_dropout: 0.0,
  bos_token_id: 1,
  eos_token_id: 2,
  head_dim: 128,
  hidden_act: "silu",
  hidden_size: 4096,
  intermediate_size: 14336,
  max_position_embeddings: 32768,
  model_type: "mistral",
  num_attention_heads: 32,
  num_hidden_layers: 32,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-5,
  rope_theta: 1000000.0,
  sliding_window: null,
  tie_word_embeddings: false,
  vocab_size: 32768,
};

Deno.test("Mistral configs: Llama's layer without a sliding window; a window below the context is refused", () => {
  const c = parseQwen2Config(MISTRAL_7B_V03, "Mistral-7B-v0.3/config.json");
  assert.equal(c.model_type, "mistral");
  assert.equal(c.attention_bias, false);
  const weights = expectedQwen2Weights(c);
  assert.ok(
    !weights.some((w) =>
      /bias|_norm\.weight$/.test(w.name) && !/layernorm/.test(w.name) &&
      w.name !== "model.norm.weight"
    ),
  );
  // the parameters of this shape: 32 layers of 218,112,000, two 32768 x 4096 embeddings, a norm
  assert.equal(weights.reduce((n, w) => n + w.shape.reduce((a, b) => a * b, 1), 0), 7_248_023_552);
  const back = JSON.parse(JSON.stringify(qwen2ConfigToJson(c)));
  assert.deepEqual(back.architectures, ["MistralForCausalLM"]);
  assert.equal(back.sliding_window, null);
  assert.deepEqual(parseQwen2Config(back, "back"), c);
  // a window as wide as the context never binds
  parseQwen2Config({ ...MISTRAL_7B_V03, sliding_window: 32768 }, "w");
  checkpointError(
    () => parseQwen2Config({ ...MISTRAL_7B_V03, sliding_window: 4096 }, "v01.json"),
    /sliding_window is 4096, below max_position_embeddings \(32768\): sliding-window attention is not implemented \(expected null/,
  );
  // transformers' Mistral has no projection biases whatever attention_bias says
  assert.equal(
    parseQwen2Config({ ...MISTRAL_7B_V03, attention_bias: true }, "b").attention_bias,
    false,
  );
  const { sliding_window: _, ...noKey } = MISTRAL_7B_V03;
  checkpointError(
    () => parseQwen2Config(noKey, "d.json"),
    /sliding_window is 4096 \(MistralConfig's default\), below max_position_embeddings/,
  );
});

/** A Llama-3.2-1B-shaped config.json: Llama 3.1's RoPE scaling with factor 32. */
const LLAMA32_1B = {
  architectures: ["LlamaForCausalLM"],
  attention_bias: false,
  bos_token_id: 128000,
  eos_token_id: 128001,
  head_dim: 64,
  hidden_act: "silu",
  hidden_size: 2048,
  intermediate_size: 8192,
  max_position_embeddings: 131072,
  mlp_bias: false,
  model_type: "llama",
  num_attention_heads: 32,
  num_hidden_layers: 16,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-5,
  rope_scaling: {
    factor: 32.0,
    high_freq_factor: 4.0,
    low_freq_factor: 1.0,
    original_max_position_embeddings: 8192,
    rope_type: "llama3",
  },
  rope_theta: 500000.0,
  tie_word_embeddings: true,
  vocab_size: 128256,
};

Deno.test("Llama 3.1's RoPE scaling (llama3) is read from rope_scaling or rope_parameters, checked, and written back", () => {
  const c = parseQwen2Config(LLAMA32_1B, "Llama-3.2-1B/config.json");
  assert.deepEqual(c.rope_scaling, {
    rope_type: "llama3",
    factor: 32,
    low_freq_factor: 1,
    high_freq_factor: 4,
    original_max_position_embeddings: 8192,
  });
  const back = parseQwen2Config(JSON.parse(JSON.stringify(qwen2ConfigToJson(c))), "back");
  assert.deepEqual(back, c);
  // config.json's text: the float fields as Python writes them (transformers warns on an int
  // factor), and it parses back the same
  const text = configJsonText(qwen2ConfigToJson(c));
  for (const line of ['"factor": 32.0', '"low_freq_factor": 1.0', '"high_freq_factor": 4.0']) {
    assert.ok(text.includes(line), line);
  }
  assert.match(text, /"rope_theta": 500000\.0,/);
  assert.match(text, /"original_max_position_embeddings": 8192\n/);
  assert.match(text, /"num_hidden_layers": 16,/);
  assert.deepEqual(parseQwen2Config(JSON.parse(text), "text"), c);
  // transformers 5: the scaling beside rope_theta in rope_parameters
  const { rope_scaling: _, rope_theta: __, ...rest } = LLAMA32_1B;
  const v5 = parseQwen2Config({
    ...rest,
    rope_parameters: { ...LLAMA32_1B.rope_scaling, rope_theta: 500000 },
  }, "v5.json");
  assert.deepEqual(v5, c);
  // a default type, or none, is plain RoPE (as transformers reads it)
  for (const plainRope of [{ rope_type: "default" }, {}, null]) {
    assert.equal(
      parseQwen2Config({ ...LLAMA32_1B, rope_scaling: plainRope }, "p").rope_scaling,
      null,
    );
  }
  const bad: [unknown, RegExp][] = [
    [
      { ...LLAMA32_1B, rope_scaling: { ...LLAMA32_1B.rope_scaling, factor: 0 } },
      /rope_scaling\.factor is 0; expected a positive number/,
    ],
    [
      { ...LLAMA32_1B, rope_scaling: { ...LLAMA32_1B.rope_scaling, high_freq_factor: 1 } },
      /rope_scaling\.high_freq_factor \(1\) must exceed low_freq_factor \(1\)/,
    ],
    [
      {
        ...LLAMA32_1B,
        rope_scaling: { ...LLAMA32_1B.rope_scaling, original_max_position_embeddings: 8192.5 },
      },
      /original_max_position_embeddings is 8192\.5; expected a positive integer/,
    ],
    [
      { ...LLAMA32_1B, rope_scaling: { type: "dynamic", factor: 2 } },
      /RoPE scaling of type "dynamic" is not implemented/,
    ],
    [
      {
        ...LLAMA32_1B,
        rope_parameters: {
          rope_type: "llama3",
          factor: 8,
          low_freq_factor: 1,
          high_freq_factor: 4,
          original_max_position_embeddings: 8192,
        },
      },
      /rope_parameters and rope_scaling describe different RoPE scalings/,
    ],
  ];
  for (const [json, re] of bad) checkpointError(() => parseQwen2Config(json, "l.json"), re);
});

Deno.test("linear RoPE scaling is read (rope_scaling's type or rope_type, or rope_parameters), checked, and written back", () => {
  const withLinear = { ...TINY, model_type: "llama", architectures: undefined };
  for (
    const json of [
      { ...withLinear, rope_scaling: { type: "linear", factor: 2 } },
      { ...withLinear, rope_scaling: { rope_type: "linear", factor: 2.0 } },
      { ...withLinear, rope_parameters: { rope_type: "linear", factor: 2 } },
    ]
  ) {
    const c = parseQwen2Config(json, "linear.json");
    assert.deepEqual(c.rope_scaling, { rope_type: "linear", factor: 2 });
    const text = configJsonText(qwen2ConfigToJson(c));
    // (with "type" too: transformers before 4.43 reads only that key)
    assert.match(
      text,
      /"rope_scaling": \{\n\s+"type": "linear",\n\s+"rope_type": "linear",\n\s+"factor": 2\.0\n\s+\}/,
    );
    assert.deepEqual(parseQwen2Config(JSON.parse(text), "back"), c);
  }
  checkpointError(
    () => parseQwen2Config({ ...withLinear, rope_scaling: { type: "linear", factor: -1 } }, "l"),
    /rope_scaling\.factor is -1; expected a positive number/,
  );
  checkpointError(
    () => parseQwen2Config({ ...withLinear, rope_scaling: { type: "dynamic", factor: 4 } }, "l"),
    /RoPE scaling of type "dynamic" is not implemented \(expected "default", "llama3", "linear" or "yarn"\)/,
  );
});

Deno.test("YaRN is read (Qwen's model-card form, rope_type, rope_parameters), defaulted, checked, and written back", () => {
  // Qwen2.5's model cards: add this rope_scaling to config.json for contexts past 32,768
  const qwen = { ...TINY, max_position_embeddings: 32768 };
  const card = { factor: 4.0, original_max_position_embeddings: 32768, type: "yarn" };
  const expected = { rope_type: "yarn", factor: 4, original_max_position_embeddings: 32768 };
  const { rope_theta: _, ...noTheta } = qwen;
  for (
    const json of [
      { ...qwen, rope_scaling: card },
      { ...qwen, rope_scaling: { ...card, type: undefined, rope_type: "yarn" } },
      { ...noTheta, rope_parameters: { ...card, rope_theta: TINY.rope_theta } },
    ]
  ) {
    const c = parseQwen2Config(json, "yarn.json");
    assert.deepEqual(c.rope_scaling, expected);
    const text = configJsonText(qwen2ConfigToJson(c));
    assert.match(text, /"rope_scaling": \{\n\s+"type": "yarn",\n\s+"rope_type": "yarn",\n/);
    assert.match(text, /"factor": 4\.0,/);
    assert.deepEqual(parseQwen2Config(JSON.parse(text), "back"), c);
  }
  // transformers 5's defaults: the original context is max_position_embeddings where absent, and
  // a missing factor is the ratio of the two
  assert.deepEqual(
    parseQwen2Config({ ...qwen, rope_scaling: { type: "yarn", factor: 2 } }, "y").rope_scaling,
    { rope_type: "yarn", factor: 2, original_max_position_embeddings: 32768 },
  );
  assert.deepEqual(
    parseQwen2Config({
      ...qwen,
      max_position_embeddings: 131072,
      rope_scaling: { type: "yarn", original_max_position_embeddings: 32768 },
    }, "y").rope_scaling,
    { rope_type: "yarn", factor: 4, original_max_position_embeddings: 32768 },
  );
  // the optional fields are kept (null is absent), and survive a save
  const full = {
    rope_type: "yarn",
    factor: 40,
    original_max_position_embeddings: 4096,
    beta_fast: 32,
    beta_slow: 1,
    mscale: 1.0,
    mscale_all_dim: 0.707,
    truncate: false,
  };
  const deepseek = parseQwen2Config(
    { ...qwen, rope_scaling: { ...full, attention_factor: null } },
    "d",
  );
  assert.deepEqual(deepseek.rope_scaling, full);
  const saved = configJsonText(qwen2ConfigToJson(deepseek));
  assert.deepEqual(parseQwen2Config(JSON.parse(saved), "back").rope_scaling, full);
  // a null truncate is transformers' None: no rounding of the ramp's bounds
  assert.deepEqual(
    parseQwen2Config({ ...qwen, rope_scaling: { ...card, truncate: null } }, "t").rope_scaling,
    { ...expected, truncate: false },
  );
  // rope_parameters beside rope_scaling: the defaults written out are the same scaling
  const explicit = { ...card, beta_fast: 32, beta_slow: 1, truncate: true, attention_factor: null };
  assert.deepEqual(
    parseQwen2Config({ ...qwen, rope_scaling: card, rope_parameters: explicit }, "both")
      .rope_scaling,
    { ...expected, beta_fast: 32, beta_slow: 1, truncate: true },
  );
  checkpointError(
    () =>
      parseQwen2Config({
        ...qwen,
        rope_scaling: card,
        rope_parameters: { ...card, beta_fast: 16 },
      }, "both"),
    /rope_parameters and rope_scaling describe different RoPE scalings/,
  );
  // a top-level original_max_position_embeddings (transformers 5 reads it first)
  assert.deepEqual(
    parseQwen2Config({
      ...qwen,
      original_max_position_embeddings: 8192,
      rope_scaling: { type: "yarn", factor: 4 },
    }, "top").rope_scaling,
    { rope_type: "yarn", factor: 4, original_max_position_embeddings: 8192 },
  );
  checkpointError(
    () =>
      parseQwen2Config(
        { ...qwen, original_max_position_embeddings: 8192, rope_scaling: card },
        "t",
      ),
    /original_max_position_embeddings \(8192\) and rope_scaling\.original_max_position_embeddings \(32768\) disagree/,
  );
  // YaRN's longer context must not outrun the rest of the config
  checkpointError(
    () => parseQwen2Config({ ...qwen, rope_theta: 1, rope_scaling: card }, "t"),
    /rope_theta is 1; YaRN needs it above 1/,
  );
  checkpointError(
    () =>
      parseQwen2Config({
        ...qwen,
        model_type: "mistral",
        architectures: undefined,
        sliding_window: 32768,
        rope_scaling: card,
      }, "m"),
    /sliding_window is 32768, below the context YaRN gives \(131072 positions\)/,
  );
  // YaRN's float fields are written as floats (transformers 5 warns on an int attention_factor)
  const withFactor = parseQwen2Config(
    { ...qwen, rope_scaling: { ...card, attention_factor: 1 } },
    "f",
  );
  assert.match(configJsonText(qwen2ConfigToJson(withFactor)), /"attention_factor": 1\.0\n/);
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ ...card, factor: 0 }, /rope_scaling\.factor is 0; expected a positive number/],
    [
      { ...card, original_max_position_embeddings: "32k" },
      /rope_scaling\.original_max_position_embeddings is "32k"; expected a positive integer/,
    ],
    [
      { ...card, beta_fast: 1, beta_slow: 2 },
      /rope_scaling\.beta_fast \(1\) must exceed beta_slow \(2\)/,
    ],
    [
      { ...card, attention_factor: -1 },
      /rope_scaling\.attention_factor is -1; expected a positive number or none/,
    ],
    [{ ...card, truncate: "yes" }, /rope_scaling\.truncate is "yes"; expected true, false or none/],
  ];
  for (const [scaling, re] of bad) {
    checkpointError(() => parseQwen2Config({ ...qwen, rope_scaling: scaling }, "y.json"), re);
  }
});

Deno.test("transformers 5's rope_parameters gives RoPE's theta; other RoPE types are refused", () => {
  const v5 = parseQwen2Config(
    { ...TINY, rope_theta: undefined, rope_parameters: { rope_type: "default", rope_theta: 1e6 } },
    "v5.json",
  );
  assert.equal(v5.rope_theta, 1e6);
  const both = parseQwen2Config(
    { ...TINY, rope_theta: 5e5, rope_parameters: { rope_theta: 5e5 } },
    "both.json",
  );
  assert.equal(both.rope_theta, 5e5);
  const bad: [unknown, RegExp][] = [
    [
      { ...TINY, rope_parameters: { rope_type: "longrope", factor: 4 } },
      /RoPE scaling of type "longrope" is not implemented \(expected "default", "llama3", "linear" or "yarn"\)/,
    ],
    [
      { ...TINY, rope_parameters: { rope_theta: -1 } },
      /rope_parameters.rope_theta is -1; expected a positive/,
    ],
    [{ ...TINY, rope_parameters: 3 }, /rope_parameters is 3; expected an object/],
    [{ ...TINY, rope_theta: 1e4, rope_parameters: { rope_theta: 1e6 } }, /disagree/],
  ];
  for (const [json, re] of bad) assert.throws(() => parseQwen2Config(json, "c.json"), re);
});
