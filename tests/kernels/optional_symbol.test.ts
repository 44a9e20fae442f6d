// arl_rope_freqs, arl_norm_rope_kv_cache_write and arl_decode_layer_norms_bf16 joined the ABI
// without a new version, so that libraries built before them still load: a copy of the CPU
// library with those names made unfindable stands in for such a library. It loads, runs a plain
// model, and a scaled-RoPE model or a ropeFreqs or normRopeKvCacheWrite call says to rebuild (the
// model's decode on the GPU asks hasDecodeLayerNorms and hasNormRopeKvCacheWrite first and takes
// the separate calls).
import assert from "node:assert/strict";
import { CPU_LIBRARY } from "../../kernels/build.ts";

const FFI = new URL("../../ffi/mod.ts", import.meta.url).href;
const MODEL = new URL("../../lib/model/qwen2.ts", import.meta.url).href;

Deno.test("a library built before arl_rope_freqs and arl_norm_rope_kv_cache_write loads; scaled RoPE then asks for a rebuild", async () => {
  const bytes = await Deno.readFile(CPU_LIBRARY);
  for (
    const [name, to] of [
      ["arl_rope_freqs", "arl_rope_frex_"],
      ["arl_norm_rope_kv_cache_write", "arl_norm_rope_kv_cache_writ_"],
      ["arl_decode_layer_norms_bf16", "arl_decode_layer_norms_bf1_"],
    ]
  ) {
    const from = new TextEncoder().encode(name);
    let renamed = 0;
    for (let i = 0; i + from.length <= bytes.length; i++) {
      if (from.every((b, j) => bytes[i + j] === b)) {
        bytes.set(new TextEncoder().encode(to), i);
        renamed++;
      }
    }
    assert.ok(renamed > 0, `the library names ${name}`);
  }
  const dir = await Deno.makeTempDir({ prefix: "agentrl_old_lib_" });
  try {
    await Deno.writeFile(`${dir}/libold.so`, bytes);
    const script = `
      import { hasDecodeLayerNorms, hasNormRopeKvCacheWrite, Kernels, normRopeKvCacheWrite, ropeFreqs, Tensor }
        from ${JSON.stringify(FFI)};
      import { Qwen2Model } from ${JSON.stringify(MODEL)};
      const k = Kernels.open();
      console.log("symbol", k.sym.arl_rope_freqs);
      const config = { vocab_size: 16, hidden_size: 8, intermediate_size: 8, num_hidden_layers: 1,
        num_attention_heads: 2, num_key_value_heads: 1, head_dim: 4, max_position_embeddings: 32,
        rope_theta: 10000, rms_norm_eps: 1e-6, tie_word_embeddings: true, attention_bias: false,
        bos_token_id: null, eos_token_id: null, model_type: "llama" };
      const plain = new Qwen2Model(k, config);
      const lp = plain.forward({ tokens: Int32Array.of(1, 2), positions: Int32Array.of(0, 1),
        cuSeqlens: Int32Array.of(0, 2), targets: Int32Array.of(2, 3) }).logp.toArray();
      console.log("plain", lp.length);
      try {
        new Qwen2Model(k, { ...config, rope_scaling: { rope_type: "llama3", factor: 8,
          low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 64 } });
      } catch (e) { console.log("scaled", e.name, e.message); }
      const x = Tensor.from(k, new Float32Array(4), [1, 1, 4]);
      try { ropeFreqs(k, x, x, Tensor.from(k, Int32Array.of(0)), Tensor.from(k, new Float32Array(2))); }
      catch (e) { console.log("ropeFreqs", e.name, e.message); }
      console.log("has normRope", hasNormRopeKvCacheWrite(k), hasDecodeLayerNorms(k));
      const c = Tensor.from(k, new Float32Array(16), [1, 1, 4, 4]);
      try {
        normRopeKvCacheWrite(k, Tensor.from(k, new Float32Array(4), [1, 1, 4]),
          Tensor.from(k, new Float32Array(4), [1, 1, 4]), c, Tensor.from(k, new Float32Array(16), [1, 1, 4, 4]),
          Tensor.from(k, new Float32Array(4), [1, 1, 4]), Tensor.from(k, Int32Array.of(0)),
          Tensor.from(k, Int32Array.of(0)), { qNorm: null, kNorm: null, invFreq: null, eps: 1e-6, theta: 1e4 });
      } catch (e) { console.log("normRope", e.name, e.message); }`;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--ext=ts", script],
      env: { AGENTRL_KERNELS_CPU: `${dir}/libold.so`, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, text);
    assert.match(text, /^symbol null$/m);
    assert.match(text, /^plain 2$/m);
    assert.match(
      text,
      /^scaled KernelLibraryError The cpu kernel library .*libold\.so was built before arl_rope_freqs, which scaled RoPE \(rope_scaling\) needs: run `deno task build`\.$/m,
    );
    assert.match(text, /^ropeFreqs KernelLibraryError .* was built before arl_rope_freqs/m);
    assert.match(text, /^has normRope false false$/m);
    assert.match(
      text,
      /^normRope KernelLibraryError .* was built before arl_norm_rope_kv_cache_write: run `deno task build`/m,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
