// `agentrl inspect PATH`: what a run reads from a model folder, without loading the weights: a
// random Qwen3 (with the YaRN scaling of its model card) with Qwen3's real tokenizer and template (which cannot play trajectory-wise
// episodes unless actor_train.data_args.template=qwen2_5), as text and JSON, and the clean
// errors for a folder that is not a model.
import assert from "node:assert/strict";
import { Kernels } from "../../ffi/mod.ts";
import { saveHfCheckpoint } from "../../lib/model/checkpoint.ts";
import { parseQwen2Config } from "../../lib/model/hf_config.ts";
import { savePretrained } from "../../lib/model/pretrained.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import { writeTinyModel } from "../../lib/model/make_tiny_tokenizer.ts";
import { writeQwenFolder } from "../model/_qwen_fixture.ts";

const MAIN = new URL("../../lib/cli/main.ts", import.meta.url).pathname;

async function inspect(...args: string[]) {
  return await inspectIn(Deno.cwd(), ...args);
}

async function inspectIn(cwd: string, ...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "inspect", ...args],
    cwd,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("inspect: a Qwen3 folder's architecture (YaRN-scaled), weights, turn ends and template verdicts", async () => {
  const tokenizerDir = await writeQwenFolder();
  const root = await Deno.makeTempDir({ prefix: "agentrl_inspect_" });
  const dir = `${root}/qwen3`;
  try {
    {
      using k = Kernels.open({ threads: 1 });
      const config = parseQwen2Config({
        model_type: "qwen3",
        vocab_size: 151936,
        hidden_size: 32,
        intermediate_size: 64,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        head_dim: 16,
        max_position_embeddings: 40960,
        rope_theta: 1000000,
        tie_word_embeddings: true,
        // Qwen3's model card for contexts past 32,768
        rope_scaling: { rope_type: "yarn", factor: 4.0, original_max_position_embeddings: 32768 },
      }, "test");
      using model = new Qwen2Model(k, config, { seed: 3 });
      await savePretrained(model, dir, { tokenizerDir });
    }
    const r = await inspect(dir);
    assert.equal(r.code, 0, r.stderr);
    const params = 151936 * 32 + 2 * (32 * 64 + 2 * 32 * 32 + 32 * 64 + 2 * 16 + 3 * 32 * 64 + 64) +
      32;
    assert.match(
      r.stdout,
      /^ {2}Qwen3ForCausalLM \(model_type qwen3\): 2 layers, hidden 32, 4 query \/ 2 key-value heads of 16, MLP 64, vocabulary 151936, tied embeddings$/m,
    );
    assert.match(
      r.stdout,
      /^ {2}attention: no biases, q\/k norms; RoPE theta 1000000, YaRN scaling \(factor 4, original 32768 positions, attention factor 1\.1386\); up to 131072 positions$/m,
    );
    assert.match(
      r.stdout,
      new RegExp(`weights: ${params.toLocaleString("en-US")} parameters in 1 file`),
    );
    assert.match(r.stdout, /a turn ends at .*"<\|im_end\|>" \(151645\)/);
    assert.match(
      r.stdout,
      /trajectory-wise episodes: no\. .*actor_train\.data_args\.template=qwen2_5/,
    );
    assert.match(r.stdout, /step-wise episodes \(envs=step\): yes/);
    // ChatML instead: trajectory-wise works, with a note that says so
    const chatml = await inspect(dir, "actor_train.data_args.template=qwen2_5", "--json");
    assert.equal(chatml.code, 0, chatml.stderr);
    const report = JSON.parse(chatml.stdout);
    assert.equal(report.trajectoryWise, null);
    assert.equal(report.template, "the qwen2_5 template (chosen)");
    assert.equal(report.parameters, params);
    assert.equal(report.config.model_type, "qwen3");
    assert.match(report.templateNotes.join("\n"), /prompts use Qwen2\.5's ChatML template/);
    assert.equal(report.memory.loaded, 8 * params);
    assert.equal(report.memory.trained, 16 * params);
    // the bf16 copy: the layers' matrices and the LM head (V x C)
    const matrices = 2 * (32 * 64 + 2 * 32 * 32 + 64 * 32 + 3 * 32 * 64);
    assert.equal(report.memory.bf16Copy, 2 * (matrices + 151936 * 32));
    // the KV cache a training run with the config holds: 8 bytes x 2 layers x 2 kv heads x 16
    const kv = report.memory.kvCache;
    assert.ok(kv.maxRunningRequests >= 1 && kv.maxRunningRequests <= 128, JSON.stringify(kv));
    assert.equal(kv.bytes, 8 * 2 * 2 * 16 * kv.maxRunningRequests * kv.maxModelLen);
    assert.match(
      r.stdout,
      new RegExp(
        `KV cache of a training run with this config \\(actor_infer\\): ${kv.maxRunningRequests} ` +
          `episodes of up to ${kv.maxModelLen} positions, [\\d.]+ MiB`,
      ),
    );
    // its length follows sequence_length
    const longer = await inspect(dir, "sequence_length=2048", "--json");
    assert.equal(longer.code, 0, longer.stderr);
    const kv2 = JSON.parse(longer.stdout).memory.kvCache;
    assert.equal(kv2.maxModelLen, 2048);
    assert.equal(kv2.bytes, 8 * 2 * 2 * 16 * kv2.maxRunningRequests * 2048);
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(tokenizerDir, { recursive: true });
  }
});

Deno.test("inspect: a missing folder, a file, no weights, no tokenizer and a broken template are clean usage errors, as in a run", async () => {
  const root = await Deno.makeTempDir({ prefix: "agentrl_inspect_bad_" });
  try {
    const missing = await inspect(`${root}/nothing`);
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, /nothing: no such folder: expected a Hugging Face model folder/);
    await Deno.writeTextFile(
      `${root}/config.json`,
      JSON.stringify({
        model_type: "qwen3",
        vocab_size: 8,
        hidden_size: 8,
        intermediate_size: 8,
        num_hidden_layers: 1,
        num_attention_heads: 2,
      }),
    );
    // config.json and a tokenizer, no weights (the tokenizer is read first, as in a run)
    await writeTinyModel(`${root}/tiny`);
    for (const f of ["tokenizer.json", "tokenizer_config.json"]) {
      await Deno.copyFile(`${root}/tiny/${f}`, `${root}/${f}`);
    }
    const noWeights = await inspect(root);
    assert.equal(noWeights.code, 2, noWeights.stderr);
    assert.match(noWeights.stderr, /has neither model\.safetensors nor/);
    // weights and config, no tokenizer
    const bare = `${root}/bare`;
    {
      using k = Kernels.open({ threads: 1 });
      const config = parseQwen2Config(
        JSON.parse(await Deno.readTextFile(`${root}/config.json`)),
        "c",
      );
      using model = new Qwen2Model(k, config, { seed: 1 });
      await saveHfCheckpoint(
        bare,
        config,
        model.exportNamed().map((p) => [p.name, p.shape, p.data]),
      );
    }
    const noTokenizer = await inspect(bare);
    assert.equal(noTokenizer.code, 2, noTokenizer.stderr);
    assert.match(noTokenizer.stderr, /tokenizer\.json/);
    // a file, not a folder
    await Deno.writeTextFile(`${root}/afile`, "x");
    const file = await inspect(`${root}/afile`);
    assert.equal(file.code, 2, file.stderr);
    assert.match(file.stderr, /afile is not a folder: expected a Hugging Face model folder/);
    // the tiny tokenizer with a template that does not parse, as a run refuses it at load
    const broken = `${root}/broken`;
    await Deno.mkdir(broken);
    for (const f of Deno.readDirSync(bare)) {
      await Deno.copyFile(`${bare}/${f.name}`, `${broken}/${f.name}`);
    }
    for (const f of ["tokenizer.json", "tokenizer_config.json"]) {
      await Deno.copyFile(`${root}/tiny/${f}`, `${broken}/${f}`);
    }
    await Deno.writeTextFile(`${broken}/chat_template.jinja`, "{{ messages[0].content }");
    const badTemplate = await inspect(broken);
    assert.equal(badTemplate.code, 2, badTemplate.stderr);
    assert.match(badTemplate.stderr, /chat_template\.jinja.*does not parse/);
    // a built-in base model not built yet (from a folder where it is not): a run builds it
    const builtin = await inspectIn(root, "build/models/frozen_lake_base");
    assert.equal(builtin.code, 2, builtin.stderr);
    assert.match(builtin.stderr, /a built-in base model: a run whose pretrain names it builds it/);
    for (const r of [missing, noWeights, noTokenizer, file, badTemplate, builtin]) {
      assert.doesNotMatch(r.stderr, /^\s+at /m, "no stack trace");
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
