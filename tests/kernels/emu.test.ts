// The CUDA emulator (kernels/emu/): its own semantics on a harness of small kernels
// (emu_harness.cu: shuffles, barriers, dynamic shared memory, launch errors, graphs, a
// deadlock, a race, out-of-bounds memory, WMMA tiles; nvcc compiles the same file), and the
// CUDA library run through it: every op against the CPU library (bench/gpu/ops_compare.ts)
// in three thread orders, the "no CUDA device" path and the deferred decode errors.
// Subprocesses, because a process opens each device's library once.
import assert from "node:assert/strict";
import { CUDA_EMU_LIBRARY, findNvcc } from "../../kernels/build.ts";
import { translateCuda } from "../../kernels/emu/translate.ts";

const EMU_LIB = decodeURIComponent(CUDA_EMU_LIBRARY.pathname);
const built = (() => {
  try {
    return Deno.statSync(EMU_LIB).isFile;
  } catch {
    return false;
  }
})();
const linuxX64 = Deno.build.os === "linux" && Deno.build.arch === "x86_64";
const ignore = !built || !linuxX64;
const why = !linuxX64
  ? " (skipped: the emulator's fibers need x86-64 Linux)"
  : !built
  ? " (skipped: run `deno task build --emulator`)"
  : "";

const path = (rel: string) => decodeURIComponent(new URL(rel, import.meta.url).pathname);

async function run(
  cmd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; text: string }> {
  const out = await new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped" })
    .output();
  const dec = new TextDecoder();
  return { code: out.code, text: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

/**
 * Runs `script` (deno eval) on the emulated CUDA library with `env` added; asserts it exits 0 and
 * returns its output's lines.
 */
async function evalOnEmulator(script: string, env: Record<string, string> = {}): Promise<string[]> {
  const { code, text } = await run(Deno.execPath(), ["eval", script], {
    AGENTRL_KERNELS_CUDA: EMU_LIB,
    NO_COLOR: "1",
    ...env,
  });
  assert.equal(code, 0, text);
  return text.trim().split("\n");
}

/** ops_compare on the emulated CUDA library: its output, and the outputs within tolerance of all. */
async function opsOnEmulator(
  env: Record<string, string>,
): Promise<{ code: number; text: string; within: number; total: number }> {
  const { code, text } = await run(Deno.execPath(), ["run", "-A", OPS_COMPARE], {
    AGENTRL_KERNELS_CUDA: EMU_LIB,
    NO_COLOR: "1",
    ...env,
  });
  const m = /(\d+) of (\d+) outputs within tolerance \(cpu-\S+ vs cuda-emulated\)/.exec(text);
  return { code, text, within: m ? Number(m[1]) : NaN, total: m ? Number(m[2]) : NaN };
}

let harness: Promise<string> | null = null;

/** Translates and compiles emu_harness.cu with the emulator's runtime, once. */
function buildHarness(): Promise<string> {
  harness ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "agentrl_emu_" });
    const src = await Deno.readTextFile(path("./emu_harness.cu"));
    await Deno.writeTextFile(`${dir}/harness.cpp`, translateCuda(src, "emu_harness.cu"));
    const emu = path("../../kernels/emu/");
    const { code, text } = await run(Deno.env.get("CXX") ?? "g++", [
      "-std=c++17",
      "-O1",
      `-I${emu}`,
      `-I${path("../../kernels/cuda/")}`,
      `${dir}/harness.cpp`,
      `${emu}emu.cpp`,
      "-o",
      `${dir}/harness`,
    ]);
    assert.equal(code, 0, `compiling the emulator harness failed:\n${text}`);
    return `${dir}/harness`;
  })();
  return harness;
}

/** The harness's `name: value` lines for a thread order. */
async function harnessLines(order: string): Promise<Map<string, string>> {
  const { code, text } = await run(await buildHarness(), [], { AGENTRL_CUDA_EMU_ORDER: order });
  assert.equal(code, 0, `the harness failed:\n${text}`);
  const lines = new Map<string, string>();
  for (const line of text.split("\n")) {
    const at = line.indexOf(": ");
    if (at > 0 && !line.startsWith("CUDA emulator")) {
      lines.set(line.slice(0, at), line.slice(at + 2));
    }
  }
  return lines;
}

Deno.test({
  name: `CUDA emulator: shuffles, barriers, shared memory, launch checks and graphs${why}`,
  ignore: !linuxX64,
  async fn() {
    const h = await harnessLines("forward");
    const expected: Record<string, string> = {
      // sum, 16-lane sum, up 1, down 3, lane 5's value, double xor, ballot of lane % 3 == 0
      "shuffle lane 0": `496 120 0 3 50 3 ${0x49249249}`,
      "shuffle lane 17": "496 376 16 20 50 33",
      "shuffle lane 31": "496 376 30 31",
      "shuffle lane 33 (second warp)": "496",
      "block sums match": "1",
      "reversed": "2 1",
      "early exit count": "40 last error: 0",
      "divergent barriers error": "cudaErrorLaunchFailure",
      "handshake, ordinary launch": "cudaErrorLaunchFailure",
      "handshake, cooperative launch": "cudaSuccess 1 1",
      "timed wait, cooperative launch": "cudaSuccess passed 0 waited 1",
      "2048 threads": "cudaErrorInvalidConfiguration",
      "64 KiB shared": "cudaErrorInvalidValue",
      "64 KiB shared after the attribute": "cudaSuccess",
      "while recording": "x[0] 0 copied -1",
      "after two replays": "copied 2",
      "synchronize while recording":
        "cudaErrorStreamCaptureUnsupported, then cudaErrorStreamCaptureInvalidated",
      "fresh memory is NaN": "1",
      "wmma gemm largest error": "below 1e-4",
      "freeing a pointer never allocated": "cudaErrorInvalidValue",
    };
    for (const [name, value] of Object.entries(expected)) {
      assert.equal(h.get(name), value, `harness line '${name}'`);
    }
  },
});

Deno.test({
  name: `CUDA emulator: a read that no barrier orders changes with the thread order${why}`,
  ignore: !linuxX64,
  async fn() {
    const [forward, reverse] = await Promise.all([
      harnessLines("forward"),
      harnessLines("reverse"),
    ]);
    assert.notEqual(forward.get("racy read"), reverse.get("racy read"));
    assert.deepEqual(
      [...forward].filter(([k]) => k !== "racy read"),
      [...reverse].filter(([k]) => k !== "racy read"),
      "everything a barrier orders must not depend on the order",
    );
  },
});

Deno.test({
  name:
    `CUDA emulator: a kernel writing past a buffer's end dies at once, naming kernel and thread${why}`,
  ignore: !linuxX64,
  async fn() {
    const { code, text } = await run(await buildHarness(), ["past-the-end"]);
    assert.notEqual(code, 0, text);
    assert.match(text, /written up to the end/);
    assert.doesNotMatch(text, /not reached/);
    assert.match(
      text,
      /CUDA emulator: kernel past_the_end, block \(0, 0, 0\), thread \(64, 0, 0\) touched 0x[0-9a-f]+, outside every allocation/,
    );
  },
});

Deno.test({
  name: `CUDA emulator: a WMMA load from a misaligned pointer stops naming kernel and call${why}`,
  ignore: !linuxX64,
  async fn() {
    const { code, text } = await run(await buildHarness(), ["wmma-misaligned"]);
    assert.notEqual(code, 0, text);
    assert.doesNotMatch(text, /not reached/);
    assert.match(
      text,
      /CUDA emulator: kernel wmma_gemm, block \(0, 0, 0\), thread \(0, 0, 0\): wmma::load_matrix_sync: pointer not 256-bit aligned/,
    );
  },
});

const nvcc = await findNvcc();

Deno.test({
  name: `CUDA emulator: its harness is real CUDA (nvcc compiles it for sm_80)${
    nvcc === null ? " (skipped: no nvcc)" : ""
  }`,
  ignore: nvcc === null,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "agentrl_emu_nvcc_" });
    const { code, text } = await run(nvcc!, [
      "-std=c++17",
      "-arch=sm_80",
      `-I${path("../../kernels/cuda/")}`,
      "-c",
      path("./emu_harness.cu"),
      "-o",
      `${dir}/harness.o`,
    ]);
    assert.equal(code, 0, `nvcc rejected the harness:\n${text}`);
  },
});

const OPS_COMPARE = path("../../bench/gpu/ops_compare.ts");

/**
 * The start of a script that runs decodeLayer on the emulated library: Qwen2.5-0.5B's attention
 * (896 wide, 14:2 heads of 64, a cache of 320 positions), an MLP `f` wide (a JS expression), bf16
 * weights from a seeded generator, and `step(x, position)` (one token at slot 0).
 */
function qwenLayerPrelude(seed: number, f: string): string {
  return `import { decodeLayer, Kernels, Tensor } from ${JSON.stringify(path("../../ffi/mod.ts"))};
      const k = Kernels.open({ device: "cuda" });
      const f = ${f};
      const [c, hq, hkv, d, l, pos] = [896, 14, 2, 64, 320, 300];
      let seed = ${seed};
      const rand = (n, scale) => Float32Array.from({ length: n },
        () => (((seed = (seed * 16807) % 2147483647) / 2147483647) - 0.5) * scale);
      const f32 = (n, scale, shape = [n]) => Tensor.from(k, rand(n, scale), shape);
      const bf16 = (r, cols) => {
        const bits = new Uint16Array(rand(r * cols, 0.2).buffer).filter((_, i) => i % 2 === 1);
        const t = new Tensor(k, [r, cols], "bf16");
        t.write(bits);
        return t;
      };
      const nq = (hq + 2 * hkv) * d;
      const w = { ln1: f32(c, 1), qkv: bf16(nq, c), bqkv: f32(nq, 0.2), o: bf16(c, hq * d),
        ln2: f32(c, 1), gateUp: bf16(2 * f, c), down: bf16(c, f) };
      const [kCache, vCache] = [0, 1].map(() => f32(hkv * l * d, 1, [1, hkv, l, d]));
      const rows = { qkv: f32(nq, 0), attn: f32(hq * d, 0), act: f32(f, 0) };
      const one = (v) => Tensor.from(k, Int32Array.of(v));
      const step = (x, p) => decodeLayer(k, x, w, { kCache, vCache, slot: one(0),
        position: one(p), len: one(p + 1), hq, eps: 1e-6, theta: 1e6, scale: 0.125 }, rows);`;
}

/** `fn` over `items`, two at a time, results in the items' order. */
async function inPairs<T, R>(items: T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < items.length; i = next++) results[i] = await fn(items[i]!);
  };
  await Promise.all([lane(), lane()]);
  return results;
}

Deno.test({
  name:
    `the CUDA library, emulated, matches the CPU library on every op in three thread orders${why}`,
  ignore,
  async fn() {
    // Three subprocesses at once (the runner is otherwise one core at a time). The reversed one
    // takes the streaming one-row GEMV wherever it fits (AGENTRL_CUDA_GEMV_STREAM=1), the
    // decode chain's attention without clusters (AGENTRL_CUDA_DECODE_ATTN_CLUSTER=0) and kernel 4
    // asking L2 for the next layer's q|k|v rows (AGENTRL_CUDA_DECODE_NEXT_QKV=1: the emulator
    // reads each prefetched range's ends, so a range past the weights faults) with the chain's
    // late starts (AGENTRL_CUDA_DECODE_ATTN_TRIGGER=merge, _DOWN_TRIGGER=rows) and the layer
    // whose kernel 3 takes two blocks an SM through the separate calls (_MLP_PER_SM=1), the
    // shuffled one the GEMV where a block gets two column groups or more (=2), decodeLayers as
    // the persistent kernel (AGENTRL_CUDA_DECODE_TOKEN=1), decodeLayer's q|k|v in kernel 2
    // (AGENTRL_CUDA_DECODE_QKV_IN_ATTN=1) and its kernels 3 and 4 as one (_MLP_FUSED=1).
    const orders = ["forward", "reverse", "shuffle"];
    const results = await Promise.all(
      orders.map((order) =>
        opsOnEmulator({
          AGENTRL_CUDA_EMU_ORDER: order,
          AGENTRL_OPS_SKIP: "(many units)",
          ...(order === "forward" ? {} : order === "reverse"
            ? {
              AGENTRL_CUDA_GEMV_STREAM: "1",
              AGENTRL_CUDA_DECODE_ATTN_CLUSTER: "0",
              AGENTRL_CUDA_DECODE_NEXT_QKV: "1",
              AGENTRL_CUDA_DECODE_ATTN_TRIGGER: "merge",
              AGENTRL_CUDA_DECODE_DOWN_TRIGGER: "rows",
              AGENTRL_CUDA_DECODE_MLP_PER_SM: "1",
            }
            : {
              AGENTRL_CUDA_GEMV_STREAM: "2",
              AGENTRL_CUDA_DECODE_TOKEN: "1",
              AGENTRL_CUDA_DECODE_QKV_IN_ATTN: "1",
              AGENTRL_CUDA_DECODE_MLP_FUSED: "1",
              // The persistent kernel's decode graphs run on 8 emulated SMs (the test below),
              // where its steps are cheap (10 s a case at 132 SMs).
              AGENTRL_OPS_SKIP: "(many units)|decode with graphs, bf16 weights, batch 1",
            }),
        })
      ),
    );
    results.forEach(({ code, text, within, total }, i) => {
      const what = `ops_compare on the emulated CUDA library, ${orders[i]} order${
        orders[i] === "forward"
          ? ""
          : orders[i] === "reverse"
          ? ", AGENTRL_CUDA_GEMV_STREAM=1, AGENTRL_CUDA_DECODE_ATTN_CLUSTER=0, _NEXT_QKV=1, " +
            "_ATTN_TRIGGER=merge, _DOWN_TRIGGER=rows, _MLP_PER_SM=1"
          : ", AGENTRL_CUDA_GEMV_STREAM=2, AGENTRL_CUDA_DECODE_TOKEN=1, _QKV_IN_ATTN=1, " +
            "_MLP_FUSED=1"
      }`;
      assert.equal(code, 0, `${what} failed:\n${text}`);
      assert.ok(Number.isFinite(total), `${what}: no summary line in:\n${text}`);
      assert.equal(within, total, what);
      assert.ok(total > 100, `${what}: only ${total} outputs compared`);
    });
  },
});

Deno.test({
  name: `the CUDA library, emulated with no device, says "no CUDA device"${why}`,
  ignore,
  async fn() {
    const script = `import { Kernels } from ${JSON.stringify(path("../../ffi/mod.ts"))};
      try { Kernels.open({ device: "cuda" }); console.log("opened"); }
      catch (e) { console.log(e.constructor.name + ": " + e.message); }`;
    const text = (await evalOnEmulator(script, { AGENTRL_CUDA_EMU_DEVICES: "0" })).join("\n");
    assert.match(text, /KernelError: .*no CUDA device/);
  },
});

Deno.test({
  name:
    `the CUDA library, emulated: Qwen3 and scaled-RoPE layers decode through arl_decode_layer_norms_bf16 (one token) and arl_norm_rope_kv_cache_write (more)${why}`,
  ignore,
  async fn() {
    // (the calls counted by wrapping the library's functions)
    const script = `import { Kernels } from ${JSON.stringify(path("../../ffi/mod.ts"))};
      import { Qwen2Model } from ${JSON.stringify(path("../../lib/model/qwen2.ts"))};
      const k = Kernels.open({ device: "cuda" });
      const counts = { arl_decode_layer_norms_bf16: 0, arl_norm_rope_kv_cache_write: 0, arl_rope_freqs: 0 };
      for (const name of Object.keys(counts)) {
        const fn = k.sym[name];
        k.sym[name] = (...a) => { counts[name]++; return fn(...a); };
      }
      const base = { vocab_size: 64, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2,
        num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64, max_position_embeddings: 64,
        rope_theta: 10000, rms_norm_eps: 1e-6, tie_word_embeddings: true, attention_bias: false,
        bos_token_id: null, eos_token_id: null };
      const scaling = { rope_type: "llama3", factor: 8, low_freq_factor: 1, high_freq_factor: 4,
        original_max_position_embeddings: 16 };
      for (const config of [{ ...base, model_type: "qwen3" }, { ...base, model_type: "llama", rope_scaling: scaling }]) {
        const m = new Qwen2Model(k, config, { seed: 1 });
        const cache = m.createKvCache(1, 32);
        const z = Int32Array.of(0);
        Object.keys(counts).forEach((n) => counts[n] = 0);
        m.forwardCached(cache, Int32Array.from({ length: 12 }, (_, i) => i + 1),
          Int32Array.from({ length: 12 }, (_, i) => i), new Int32Array(12), Int32Array.of(11));
        console.log(config.model_type, "prefill", JSON.stringify(counts));
        Object.keys(counts).forEach((n) => counts[n] = 0);
        m.forwardCached(cache, Int32Array.of(5), Int32Array.of(12), z, z);
        console.log(config.model_type, "token", JSON.stringify(counts));
      }`;
    // (the chain's time stamps, printed at exit: the layer calls ran as the chain, head dim 64)
    const lines = await evalOnEmulator(script, { AGENTRL_CUDA_DECODE_CHAIN_TIMES: "1" });
    assert.ok(lines.some((t) => /^decode chain, mean of 4 layers/.test(t)), lines.join("\n"));
    const none = {
      arl_decode_layer_norms_bf16: 0,
      arl_norm_rope_kv_cache_write: 0,
      arl_rope_freqs: 0,
    };
    const expect = (line: string, counts: Partial<typeof none>) =>
      assert.ok(
        lines.includes(`${line} ${JSON.stringify({ ...none, ...counts })}`),
        lines.join("\n"),
      );
    // a call a layer (2 layers); none of the separate RoPE calls
    expect("qwen3 prefill", { arl_norm_rope_kv_cache_write: 2 });
    expect("qwen3 token", { arl_decode_layer_norms_bf16: 2 });
    expect("llama prefill", { arl_norm_rope_kv_cache_write: 2 });
    expect("llama token", { arl_decode_layer_norms_bf16: 2 });
    // AGENTRL_DECODE_LAYER_NORMS=0 (a benchmark baseline): the token takes the separate calls
    const apart = await evalOnEmulator(script, { AGENTRL_DECODE_LAYER_NORMS: "0" });
    for (const model of ["qwen3", "llama"]) {
      const line = `${model} token ${JSON.stringify({ ...none, arl_norm_rope_kv_cache_write: 2 })}`;
      assert.ok(apart.includes(line), apart.join("\n"));
    }
  },
});

Deno.test({
  name:
    `the CUDA library, emulated: a YaRN model's prefill and bf16 decode chain give the CPU's logits, its attention factor included${why}`,
  ignore,
  async fn() {
    // (weights of order one, so that the attention factor moves the logits well past bf16's error)
    const script = `import { Kernels } from ${JSON.stringify(path("../../ffi/mod.ts"))};
      import { Qwen2Model } from ${JSON.stringify(path("../../lib/model/qwen2.ts"))};
      const yarn = { rope_type: "yarn", factor: 4, original_max_position_embeddings: 16 };
      const base = { vocab_size: 64, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2,
        num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64, max_position_embeddings: 64,
        rope_theta: 10000, rms_norm_eps: 1e-6, tie_word_embeddings: true, attention_bias: true,
        bos_token_id: null, eos_token_id: null };
      const run = (device, scaling, precision) => {
        const k = Kernels.open({ device });
        const layerCalls = { n: 0 };
        const fn = k.sym.arl_decode_layer_norms_bf16;
        if (fn) k.sym.arl_decode_layer_norms_bf16 = (...a) => { layerCalls.n++; return fn(...a); };
        const m = new Qwen2Model(k, { ...base, rope_scaling: scaling }, { precision });
        m.loadNamed((name, shape) => {
          let s = name.length * 7 + 1;
          const norm = name.includes("norm");
          return Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => {
            s = (Math.imul(s, 1103515245) + 12345) >>> 0;
            return ((s >>> 8) / (1 << 24) - 0.5) * (norm ? 0.2 : 1) + (norm ? 1 : 0);
          });
        });
        const cache = m.createKvCache(1, 32);
        const z = Int32Array.of(0);
        const prefill = Array.from(m.forwardCached(cache, Int32Array.from({ length: 12 }, (_, i) => i + 1),
          Int32Array.from({ length: 12 }, (_, i) => i), new Int32Array(12), Int32Array.of(11)).read());
        layerCalls.n = 0;
        const token = Array.from(m.forwardCached(cache, Int32Array.of(5), Int32Array.of(12), z, z).read());
        return { prefill, token, layerCalls: layerCalls.n };
      };
      const diff = (a, b) => Math.max(...a.map((x, i) => Math.abs(x - b[i])));
      const cpu = run("cpu", yarn, "f32");
      const unscaled = run("cpu", { ...yarn, attention_factor: 1 }, "f32");
      const f32 = run("cuda", yarn, "f32");
      const bf16 = run("cuda", yarn, "bf16");
      console.log(JSON.stringify({
        factorMoves: diff(cpu.token, unscaled.token),
        f32: [diff(cpu.prefill, f32.prefill), diff(cpu.token, f32.token)],
        bf16: [diff(cpu.prefill, bf16.prefill), diff(cpu.token, bf16.token)],
        chainCalls: bf16.layerCalls,
      }));`;
    const lines = await evalOnEmulator(script);
    const r = JSON.parse(lines.at(-1)!);
    assert.ok(r.factorMoves > 0.2, `the attention factor moves the logits by ${r.factorMoves}`);
    assert.ok(Math.max(...r.f32) < 1e-4, `f32 logits differ by ${r.f32}`);
    assert.ok(Math.max(...r.bf16) < r.factorMoves / 4, `bf16 logits differ by ${r.bf16}`);
    assert.equal(r.chainCalls, 2, "a decode-chain call a layer for the token");
  },
});

Deno.test({
  name:
    `the CUDA library, emulated: decode values only the kernel sees are reported at the next synchronizing call${why}`,
  ignore,
  async fn() {
    // (ropeKvCacheWrite, then normRopeKvCacheWrite with q/k norms and a table)
    const script = `import { Kernels, normRopeKvCacheWrite, ropeKvCacheWrite, Tensor } from ${
      JSON.stringify(path("../../ffi/mod.ts"))
    };
      const k = Kernels.open({ device: "cuda" });
      const t = (shape) => Tensor.from(k, new Float32Array(shape.reduce((a, b) => a * b)).fill(1), shape);
      const [q, kk, v] = [t([2, 2, 4]), t([2, 1, 4]), t([2, 1, 4])];
      // the caches as views of one buffer, 8 guard floats after each: no write past them
      const buffer = Tensor.from(k, new Float32Array(64).fill(7), [64]);
      const [kc, vc] = [Tensor.viewOf(buffer, 0, [2, 1, 3, 4]), Tensor.viewOf(buffer, 128, [2, 1, 3, 4])];
      const options = { qNorm: t([4]), kNorm: t([4]), invFreq: t([2]), eps: 1e-6, theta: 1e4 };
      for (const fused of [false, true]) {
        for (const [slots, pos] of [[[0, 2], [0, 1]], [[0, 1], [0, 3]], [[0, 1], [-4, 1]], [[1, 0], [2, 0]]]) {
          const [ts, tp] = [Tensor.from(k, Int32Array.from(slots)), Tensor.from(k, Int32Array.from(pos))];
          if (fused) normRopeKvCacheWrite(k, q, kk, kc, vc, v, ts, tp, options);
          else ropeKvCacheWrite(k, q, kk, kc, vc, v, ts, tp, 1e4);
          try { kc.read(); console.log("read ok"); } catch (e) { console.log(e.message); }
        }
      }
      const all = buffer.read();
      console.log("guards", [...all.subarray(24, 32), ...all.subarray(56, 64)].every((x) => x === 7));`;
    const lines = await evalOnEmulator(script);
    assert.equal(lines.length, 9, lines.join("\n"));
    assert.equal(lines[8], "guards true", "nothing written past the caches");
    for (const at of [0, 4]) {
      assert.match(
        lines[at]!,
        /arl_copy: an earlier call failed: .*slot 2 of token 1 is outside \[0, S\)/,
      );
      assert.match(lines[at + 1]!, /position 3 of token 1 is outside \[0, L\)/);
      assert.match(lines[at + 2]!, /negative position at row 0/);
      assert.equal(lines[at + 3], "read ok", "the flag is cleared once reported");
    }
  },
});

Deno.test({
  name:
    `the CUDA library, emulated: greedy sampling split across blocks resets its counters and reports an earlier call's deferred error${why}`,
  ignore,
  async fn() {
    // Few greedy rows over a wide vocabulary take greedy_split_kernel, whose row counters reset
    // themselves and whose results (and the flag) reach the host without a copy. Several calls
    // in a row must each find the argmax; a bad slot given to an earlier kernel is reported by
    // the sampler, and the call after that is clean.
    const script = `import { Kernels, ropeKvCacheWrite, sample, sampleStart, Tensor } from ${
      JSON.stringify(path("../../ffi/mod.ts"))
    };
      const k = Kernels.open({ device: "cuda" });
      const [n, v] = [2, 40000];
      const rows = [0, 1].map((i) => ({ temperature: 0, seed: i, counter: 0 }));
      const t = (shape) => Tensor.from(k, new Float32Array(shape.reduce((a, b) => a * b)).fill(1), shape);
      const [q, kk, vv, kc, vc] = [t([1, 1, 4]), t([1, 1, 4]), t([1, 1, 4]), t([1, 1, 3, 4]), t([1, 1, 3, 4])];
      for (let call = 0; call < 4; call++) {
        const x = new Float32Array(n * v).map((_, i) => Math.sin(i * 0.37 + call));
        const want = [0, 1].map((r) => 1000 * (call + 1) + 7919 * r * (call + 2) % 30000);
        want.forEach((j, r) => x[r * v + j] = 5);
        const logits = Tensor.from(k, x, [n, v]);
        if (call === 2) {  // a bad slot: the rope kernel flags it, the sampler reports it
          const [slot, pos] = [Tensor.from(k, Int32Array.from([3])), Tensor.from(k, Int32Array.from([0]))];
          ropeKvCacheWrite(k, q, kk, kc, vc, vv, slot, pos, 1e4);
        }
        try {
          const got = sample(k, logits, rows);
          console.log(Array.from(got.tokens).join(",") === want.join(",") ? "argmax ok" : "wrong " + got.tokens + " want " + want);
        } catch (e) { console.log(e.message); }
      }
      // Two samplings queued after a bad slot, greedy (split) and drawn: the first read reports
      // it; the second, which copied the same flag, does not report it again.
      const x = new Float32Array(n * v);
      x[5] = x[v + 5] = 30;
      const logits = Tensor.from(k, x, [n, v]);
      for (const temperature of [0, 1]) {
        const [slot, pos] = [Tensor.from(k, Int32Array.from([3])), Tensor.from(k, Int32Array.from([0]))];
        ropeKvCacheWrite(k, q, kk, kc, vc, vv, slot, pos, 1e4);
        const drawn = rows.map((r) => ({ ...r, temperature }));
        const queued = [sampleStart(k, logits, drawn), sampleStart(k, logits, drawn)];
        for (const p of queued) {
          try { console.log("tokens " + Array.from(p.wait().tokens)); } catch (e) { console.log(e.message); }
        }
      }
      // with the four pending samplings a context holds, sample itself still runs
      const four = [0, 1, 2, 3].map(() => sampleStart(k, logits, rows));
      console.log("sample " + Array.from(sample(k, logits, rows).tokens));
      four.forEach((p) => p.discard());`;
    const lines = await evalOnEmulator(script);
    assert.equal(lines.length, 9, lines.join("\n"));
    assert.equal(lines[8], "sample 5,5", "arl_sample has a slot of its own");
    assert.equal(lines[0], "argmax ok");
    assert.equal(lines[1], "argmax ok", "the second call finds its rows' argmax (counters reset)");
    assert.match(lines[2]!, /arl_sample: an earlier call failed: .*slot 3 of token 0/);
    assert.equal(lines[3], "argmax ok", "the flag is cleared once reported");
    for (const at of [4, 6]) {
      assert.match(lines[at]!, /arl_sample_finish: an earlier call failed: .*slot 3 of token 0/);
      assert.equal(lines[at + 1], "tokens 5,5", "reported once, by the first sampling read");
    }
  },
});

Deno.test({
  name:
    `the CUDA library, emulated: the chained decode layer takes Qwen2.5-0.5B- and 1.5B-shaped layers, not an MLP that needs three blocks an SM (unless asked, then matching the CPU)${why}`,
  ignore,
  async fn() {
    // one decodeLayer call a shape (narrow MLPs keep the emulated run short); the chain's time
    // stamps count the layers it ran (kernel 4's block 0), printed at exit
    // (act at an offset of 4 bytes, too little alignment for kernel 4's 8-byte loads: the
    // separate calls instead). Kernel 3's gate|up rows of MLP 4864 at c = 1536 take two blocks an
    // SM: the chain by default, the separate calls with AGENTRL_CUDA_DECODE_MLP_PER_SM=1; those
    // of MLP 9728 take three: the separate calls by default, the chain with the limit at 3.
    const shapes = [
      [896, 512, 14, 2, 64, 0, "", true],
      [1536, 512, 12, 2, 128, 0, "", true],
      [896, 512, 14, 2, 64, 1, "", false],
      [1536, 4864, 12, 2, 128, 0, "", true],
      [1536, 4864, 12, 2, 128, 0, "1", false],
      [1536, 9728, 12, 2, 128, 0, "", false],
      [1536, 9728, 12, 2, 128, 0, "3", true],
    ] as const;
    for (const [c, f, hq, hkv, d, shift, perSm, chain] of shapes) {
      const script = `import { decodeLayer, Kernels, Tensor } from ${
        JSON.stringify(path("../../ffi/mod.ts"))
      };
        const k = Kernels.open({ device: "cuda" });
        const [c, f, hq, hkv, d, l] = [${c}, ${f}, ${hq}, ${hkv}, ${d}, 64];
        const f32 = (n, v, shape = [n]) => Tensor.from(k, new Float32Array(n).fill(v), shape);
        const bf16 = (r, cols) => { const t = new Tensor(k, [r, cols], "bf16");
          t.write(new Uint16Array(r * cols).fill(0x3c00)); return t; };
        const nq = (hq + 2 * hkv) * d;
        const w = { ln1: f32(c, 1), qkv: bf16(nq, c), bqkv: null, o: bf16(c, hq * d),
          ln2: f32(c, 1), gateUp: bf16(2 * f, c), down: bf16(c, f) };
        const [kCache, vCache] = [0, 1].map(() => f32(hkv * l * d, 0.5, [1, hkv, l, d]));
        const one = (v) => Tensor.from(k, Int32Array.of(v));
        const x = f32(c, 0.01);
        decodeLayer(k, x, w, { kCache, vCache, slot: one(0), position: one(9), len: one(10),
          hq, eps: 1e-6, theta: 1e6, scale: 0.125 },
          { qkv: f32(nq, 0), attn: f32(hq * d, 0),
            act: Tensor.viewOf(f32(f + 1, 0), 4 * ${shift}, [f]) });
        x.read();
        k.close();`;
      const env = {
        AGENTRL_CUDA_DECODE_CHAIN_TIMES: "1",
        ...(perSm ? { AGENTRL_CUDA_DECODE_MLP_PER_SM: perSm } : {}),
      };
      const text = (await evalOnEmulator(script, env)).join("\n");
      const what = `c=${c} f=${f} d=${d}${shift ? " act misaligned" : ""}${
        perSm ? ` AGENTRL_CUDA_DECODE_MLP_PER_SM=${perSm}` : ""
      }`;
      if (chain) assert.match(text, /decode chain, mean of 1 layers/, `${what}: no chain`);
      else assert.doesNotMatch(text, /decode chain/, `${what}: the chain ran`);
    }
    // That MLP's chain (kernel 3 in three waves, kernel 4 in two) against the CPU library: the
    // ops case of its shape, with the limit at 4 (the chain's stamps say it ran)
    const { code, text, within, total } = await opsOnEmulator({
      AGENTRL_OPS_ONLY: "decodeLayer c=1536 f=9728",
      AGENTRL_CUDA_DECODE_MLP_PER_SM: "4",
      AGENTRL_CUDA_DECODE_CHAIN_TIMES: "1",
    });
    assert.equal(code, 0, text);
    assert.ok(within === total && total >= 6, text);
    assert.match(text, /decode chain, mean of 1 layers/, "the MLP of 9728 did not take the chain");
  },
});

Deno.test({
  name:
    `the CUDA library, emulated: decodeLayers runs the persistent kernel where asked, and the layers one by one otherwise${why}`,
  ignore,
  async fn() {
    // its time sums (AGENTRL_CUDA_DECODE_TOKEN_TIMES) count the launches and layers it ran;
    // without AGENTRL_CUDA_DECODE_TOKEN=1 the chain runs each layer (its own time sums)
    const script = `import { decodeLayers, Kernels, Tensor } from ${
      JSON.stringify(path("../../ffi/mod.ts"))
    };
      const k = Kernels.open({ device: "cuda" });
      const [c, f, hq, hkv, d, l] = [128, 96, 4, 2, 64, 16];
      const f32 = (n, v, shape = [n]) => Tensor.from(k, new Float32Array(n).fill(v), shape);
      const bf16 = (r, cols) => { const t = new Tensor(k, [r, cols], "bf16");
        t.write(new Uint16Array(r * cols).fill(0x3c00)); return t; };
      const nq = (hq + 2 * hkv) * d;
      const layer = () => ({ ln1: f32(c, 1), qkv: bf16(nq, c), bqkv: null, o: bf16(c, hq * d),
        ln2: f32(c, 1), gateUp: bf16(2 * f, c), down: bf16(c, f),
        kCache: f32(hkv * l * d, 0.5, [1, hkv, l, d]), vCache: f32(hkv * l * d, 0.5, [1, hkv, l, d]) });
      const one = (v) => Tensor.from(k, Int32Array.of(v));
      const x = f32(c, 0.01);
      const rows = { qkv: f32(nq, 0), attn: f32(hq * d, 0), act: f32(f, 0) };
      const step = { slot: one(0), position: one(3), len: one(4), hq, eps: 1e-6, theta: 1e6, scale: 0.125 };
      decodeLayers(k, x, [layer(), layer(), layer()], step, rows);
      decodeLayers(k, x, [layer(), layer()], step, rows);
      console.log(x.read().every(Number.isFinite) ? "finite" : "not finite");
      k.close();`;
    const env = { AGENTRL_CUDA_DECODE_TOKEN_TIMES: "1", AGENTRL_CUDA_DECODE_CHAIN_TIMES: "1" };
    const on = (await evalOnEmulator(script, { ...env, AGENTRL_CUDA_DECODE_TOKEN: "1" })).join(
      "\n",
    );
    assert.match(on, /finite/);
    assert.match(on, /decode token kernel: 2 launches, 5 layers/);
    assert.doesNotMatch(on, /decode chain/);
    const off = (await evalOnEmulator(script, env)).join("\n");
    assert.match(off, /finite/);
    assert.doesNotMatch(off, /decode token kernel/);
    assert.match(off, /decode chain, mean of 5 layers/);
  },
});

Deno.test({
  name:
    `the CUDA library, emulated on 8 SMs: the persistent decode kernel matches the CPU library with many units a block, several waves a step, more layers than a launch, and in decode graphs${why}`,
  ignore,
  async fn() {
    const { code, text, within, total } = await opsOnEmulator({
      AGENTRL_CUDA_EMU_SMS: "8",
      AGENTRL_CUDA_DECODE_TOKEN: "1",
      AGENTRL_OPS_ONLY: "decodeLayers|decode with graphs, bf16 weights, batch 1",
    });
    assert.equal(code, 0, text);
    assert.ok(Number.isFinite(total), `no summary line in:\n${text}`);
    assert.equal(within, total, text);
    assert.match(text, /decodeLayers 50 layers .*\(many units\)/);
    assert.match(text, /decodeLayers 2 layers c=1152 .*\(many units\)/);
    assert.match(
      text,
      /decode with graphs, bf16 weights, batch 1, token ids sampled on the device/,
    );
  },
});

Deno.test({
  name:
    `the CUDA library, emulated: writeAlternating copies what the data held at the call, in turn or not, fresh or not, and not into a graph${why}`,
  ignore,
  async fn() {
    const script = `import { Kernels, KernelGraph, Tensor } from ${
      JSON.stringify(path("../../ffi/mod.ts"))
    };
      const k = Kernels.open({ device: "cuda" });
      const data = new Int32Array(5);
      const buffers = [new Tensor(k, [5], "i32"), new Tensor(k, [5], "i32")];
      // in turn (fresh at first), then the same parity twice, then fresh again
      const parities = [0, 1, 0, 1, 1, 0, 0, 1];
      const seen = [];
      parities.forEach((p, i) => {
        data.fill(i + 1);
        buffers[p].writeAlternating(data, p, i === 0 || i === 6);
        data.fill(-1); // (after the call: the copy does not see it)
        seen.push(buffers[p].read()[4]);
      });
      console.log(JSON.stringify(seen));
      try { KernelGraph.record(k, () => buffers[0].writeAlternating(data, 0, false)); console.log("recorded"); }
      catch (e) { console.log(e.message); }`;
    const lines = await evalOnEmulator(script);
    assert.deepEqual(JSON.parse(lines[0]!), [1, 2, 3, 4, 5, 6, 7, 8]);
    assert.match(
      lines[1]!,
      /arl_upload_alternating: a copy from host memory cannot be recorded in a graph/,
    );
  },
});

Deno.test({
  name:
    `the CUDA library, emulated: writeAsync copies what the data held at the call, through its four pinned slots and past them, or in a kernel's parameters (AGENTRL_CUDA_UPLOAD=kernel)${why}`,
  ignore,
  async fn() {
    const script = `import { Kernels, KernelGraph, Tensor } from ${
      JSON.stringify(path("../../ffi/mod.ts"))
    };
      const k = Kernels.open({ device: "cuda" });
      const data = new Int32Array(5);
      const small = Array.from({ length: 6 }, () => new Tensor(k, [5], "i32"));
      small.forEach((t, i) => { data.fill(i + 1); t.writeAsync(data); }); // (6 > 4 slots)
      data.fill(-7); // after the calls: none of the copies sees it
      const big = new Tensor(k, [20000], "i32"); // 80 KB: over the pinned slots, a waiting copy
      const bigData = Int32Array.from({ length: 20000 }, (_, i) => i);
      big.writeAsync(bigData);
      bigData.fill(0);
      console.log(JSON.stringify(small.map((t) => Array.from(t.read()))));
      const read = big.read();
      console.log(read[0] === 0 && read[19999] === 19999 ? "big ok" : "big wrong");
      try { KernelGraph.record(k, () => small[0].writeAsync(data)); console.log("recorded"); }
      catch (e) { console.log(e.message); }
      // 6 bytes at an address 2 bytes past a word (the kernel's byte path), between two others
      const halves = new Tensor(k, [8], "bf16");
      halves.write(Uint16Array.from({ length: 8 }, (_, i) => 100 + i));
      Tensor.viewOf(halves, 2, [3]).writeAsync(Uint16Array.of(1, 2, 3));
      // and 6 bytes at a word (the kernel's word path, then its tail's bytes)
      Tensor.viewOf(halves, 8, [3]).writeAsync(Uint16Array.of(4, 5, 6));
      console.log(JSON.stringify(Array.from(halves.read())));`;
    for (const upload of ["copy", "kernel"]) {
      const lines = await evalOnEmulator(script, { AGENTRL_CUDA_UPLOAD: upload });
      assert.deepEqual(
        JSON.parse(lines[0]!),
        [1, 2, 3, 4, 5, 6].map((v) => new Array(5).fill(v)),
        `${upload}: each copy holds the data of its call`,
      );
      assert.equal(lines[1], "big ok", upload);
      assert.match(
        lines[2]!,
        /arl_upload_async: a copy from host memory cannot be recorded in a graph/,
      );
      assert.deepEqual(JSON.parse(lines[3]!), [100, 1, 2, 3, 4, 5, 6, 107], upload);
    }
  },
});

Deno.test({
  name:
    `the CUDA library, emulated: a token id outside the embedding is reported at the next synchronizing call, its row zeros${why}`,
  ignore,
  async fn() {
    const script = `import { embeddingForward, Kernels, Tensor } from ${
      JSON.stringify(path("../../ffi/mod.ts"))
    };
      const k = Kernels.open({ device: "cuda" });
      const wte = Tensor.from(k, Float32Array.from({ length: 10 }, (_, i) => i + 1), [5, 2]);
      const out = Tensor.from(k, new Float32Array(6).fill(-1), [3, 2]);
      embeddingForward(k, out, Tensor.from(k, Int32Array.of(0, 9, 4)), wte);
      console.log("launched");
      try { out.read(); console.log("read ok"); } catch (e) { console.log(e.message); }
      console.log(JSON.stringify(Array.from(out.read())));`;
    const lines = await evalOnEmulator(script);
    assert.equal(lines.length, 3, lines.join("\n"));
    assert.equal(lines[0], "launched", "no error (or synchronize) at the call itself");
    assert.match(
      lines[1]!,
      /^arl_copy failed \(status 3\): arl_copy: an earlier arl_embedding_forward call failed: token id 9 at row 1 is outside \[0, V\)/,
    );
    assert.deepEqual(JSON.parse(lines[2]!), [1, 2, 0, 0, 9, 10], "the bad row is zeros");
  },
});

Deno.test({
  name:
    `the CUDA library, emulated: a loss mask that is not a finite weight >= 0 is an error${why}`,
  ignore,
  async fn() {
    const script = `import { Kernels, ppoLoss, Tensor, valueLoss } from ${
      JSON.stringify(path("../../ffi/mod.ts"))
    };
      const k = Kernels.open({ device: "cuda" });
      const t = (a) => Tensor.from(k, Float32Array.from(a));
      const cu = Tensor.from(k, Int32Array.of(0, 2, 3));
      const x = { logp: t([0, 0, 0]), oldLogp: t([0, 0, 0]), advantages: t([1, 1, 1]), cuSeqlens: cu };
      for (const mask of [[1, 1, 1], [1, -1, 1], [NaN, 1, 1], [1, 1, Infinity]]) {
        const grad = t([777, 777, 777]);
        for (const run of [
          () => ppoLoss(k, { dlogp: grad }, { ...x, mask: t(mask) }, { clipLow: 0.2, clipHigh: 0.2 }).numTokens,
          () => valueLoss(k, grad, { values: x.logp, returns: x.advantages, mask: t(mask), cuSeqlens: cu }).loss,
        ]) {
          try { console.log("ok " + run()); } catch (e) { console.log(e.message + " | " + Array.from(grad.read())); }
        }
      }`;
    const lines = await evalOnEmulator(script);
    const text = lines.join("\n");
    assert.deepEqual(lines.slice(0, 2), ["ok 3", "ok 0.5"], text);
    assert.equal(lines.length, 8, text);
    for (const [i, line] of lines.slice(2).entries()) {
      const fn = i % 2 === 0 ? "arl_ppo_loss" : "arl_value_loss";
      assert.match(line, new RegExp(`${fn}: mask has 1 entries that are negative or not finite`));
      // refused before the token kernels: the gradient is as it was
      assert.match(line, / \| 777,777,777$/, line);
    }
  },
});

Deno.test({
  name:
    `the CUDA library, emulated: a RoPE table entry that is not finite is reported at the next synchronizing call, its rows left as they were; NaN logits keep the argmax, as on the CPU${why}`,
  ignore,
  async fn() {
    const script = `import { Kernels, normRopeKvCacheWrite, ropeFreqs, sample, Tensor } from ${
      JSON.stringify(path("../../ffi/mod.ts"))
    };
      const k = Kernels.open({ device: "cuda" });
      const t = (a, shape) => Tensor.from(k, Float32Array.from(a), shape);
      const report = (what, out) => {
        try { out.read(); console.log(what + " ok"); } catch (e) { console.log(what + " " + e.message); }
        console.log(what + " " + (Array.from(out.read()).every((v) => v === 7) ? "unchanged" : "written"));
      };
      const table = t([1, NaN], [2]);
      const positions = Tensor.from(k, Int32Array.of(3));
      const out = t([7, 7, 7, 7], [1, 1, 4]);
      ropeFreqs(k, out, t([1, 2, 3, 4], [1, 1, 4]), positions, table);
      report("rope_freqs", out);
      const q = t([7, 7, 7, 7], [1, 1, 4]), kk = t([7, 7, 7, 7], [1, 1, 4]);
      const cache = () => t(new Array(8).fill(7), [1, 1, 2, 4]);
      const kCache = cache();
      normRopeKvCacheWrite(k, q, kk, kCache, cache(), t([1, 1, 1, 1], [1, 1, 4]), Tensor.from(k, Int32Array.of(0)), Tensor.from(k, Int32Array.of(1)), { qNorm: null, kNorm: null, invFreq: table, eps: 1e-6, theta: 1e4 });
      report("norm_rope", q);
      console.log("cache " + (Array.from(kCache.read()).every((v) => v === 7) ? "unchanged" : "written"));
      for (const row of [[NaN, 1, 2, 3], [1, NaN, 3, 2], [0.5, Infinity, 0.5, 0.5]]) {
        const logits = t(row, [1, 4]);
        const drawn = [0, 1, 2, 3].map((c) => sample(k, logits, [{ temperature: 1, seed: 5, counter: c }]).tokens[0]);
        console.log("sample " + drawn.join(","));
      }`;
    const lines = await evalOnEmulator(script);
    const text = lines.join("\n");
    assert.match(
      lines[0]!,
      /^rope_freqs .*arl_rope_freqs \(or arl_norm_rope_kv_cache_write, arl_decode_layer_norms_bf16\) call was given a RoPE frequency table whose entry inv_freq\[1\] is not finite/,
      text,
    );
    assert.equal(lines[1], "rope_freqs unchanged", text);
    assert.match(lines[2]!, /^norm_rope .*inv_freq\[1\] is not finite/, text);
    assert.equal(lines[3], "norm_rope unchanged", text);
    assert.equal(lines[4], "cache unchanged", text);
    // the argmax of the finite logits, whatever the draw (the CPU library's rule)
    assert.deepEqual(lines.slice(5), ["sample 3,3,3,3", "sample 2,2,2,2", "sample 1,1,1,1"], text);
  },
});

Deno.test({
  name:
    `the CUDA library, emulated: bf16 attention takes the fp32 kernels where a block cannot get the shared memory${why}`,
  ignore,
  async fn() {
    // Head dim 128: the tensor-core forward needs 93 KB, the backward 119 KB. With 100 KB a block
    // (compute capability 8.9's limit), the bf16 backward must be the fp32 one exactly and the
    // forward must still differ from it (tensor cores); with an H100's 227 KB both differ.
    const script = `import { attentionBackward, attentionForward, Kernels, Tensor } from ${
      JSON.stringify(path("../../ffi/mod.ts"))
    };
      const k = Kernels.open({ device: "cuda" });
      const [t, h, d] = [70, 2, 128];
      let seed = 1;
      const rand = (n) => Float32Array.from({ length: n }, () => ((seed = (seed * 16807) % 2147483647) / 2147483647) - 0.5);
      const f = (shape) => Tensor.from(k, rand(shape.reduce((a, b) => a * b)), shape);
      const [q, kk, v, dout] = [f([t, h, d]), f([t, h, d]), f([t, h, d]), f([t, h, d])];
      const cu = Tensor.from(k, Int32Array.of(0, 30, t));
      const same = (a, b) => a.every((x, i) => x === b[i]);
      const run = (precision) => {
        const [out, lse] = [new Tensor(k, [t, h, d], "f32"), new Tensor(k, [h, t], "f32")];
        attentionForward(k, out, lse, q, kk, v, cu, undefined, precision);
        const g = { dq: new Tensor(k, [t, h, d], "f32"), dk: new Tensor(k, [t, h, d], "f32"), dv: new Tensor(k, [t, h, d], "f32") };
        // the backward of both precisions from the fp32 forward's out and lse
        const [o32, l32] = [new Tensor(k, [t, h, d], "f32"), new Tensor(k, [h, t], "f32")];
        attentionForward(k, o32, l32, q, kk, v, cu, undefined, "f32");
        attentionBackward(k, g, dout, q, kk, v, o32, l32, cu, undefined, precision);
        return { out: out.read(), dq: g.dq.read(), dk: g.dk.read() };
      };
      const [a, b] = [run("f32"), run("bf16")];
      console.log("forward " + (same(a.out, b.out) ? "same" : "differs"));
      console.log("backward " + (same(a.dq, b.dq) && same(a.dk, b.dk) ? "same" : "differs"));`;
    for (const [smem, backward] of [["102400", "same"], ["232448", "differs"]] as const) {
      const text = (await evalOnEmulator(script, { AGENTRL_CUDA_EMU_SMEM: smem })).join("\n");
      assert.equal(text, `forward differs\nbackward ${backward}`, `${smem} bytes: ${text}`);
    }
  },
});

Deno.test({
  name:
    `the CUDA library, emulated: the decode layer (chained kernels, q|k|v in kernel 2 or not) reports bad slots, positions and lengths at the next synchronizing call${why}`,
  ignore,
  async fn() {
    // two heads a kv head, so that q|k|v in kernel 2 (the default; =0: kernel 1) can take its path
    const script = `import { decodeLayer, Kernels, Tensor } from ${
      JSON.stringify(path("../../ffi/mod.ts"))
    };
      const k = Kernels.open({ device: "cuda" });
      const [c, f, hq, hkv, d, s, l] = [64, 64, 4, 2, 64, 2, 4];
      const nq = (hq + 2 * hkv) * d;
      const f32 = (n, v = 0.01, shape = [n]) => Tensor.from(k, new Float32Array(n).fill(v), shape);
      const bf16 = (r, cols) => {
        const t = new Tensor(k, [r, cols], "bf16");
        t.write(new Uint16Array(r * cols).fill(0x3c00));
        return t;
      };
      const w = { ln1: f32(c, 1), qkv: bf16(nq, c), bqkv: null, o: bf16(c, hq * d), ln2: f32(c, 1),
        gateUp: bf16(2 * f, c), down: bf16(c, f) };
      const [kCache, vCache] = [0, 1].map(() => f32(s * hkv * l * d, 0.01, [s, hkv, l, d]));
      const rows = { qkv: f32(nq), attn: f32(hq * d), act: f32(f) };
      const one = (v) => Tensor.from(k, Int32Array.of(v));
      for (const [slot, pos, len] of [[2, 1, 2], [0, 4, 4], [0, -1, 1], [0, 3, 5], [1, 3, 4]]) {
        const x = f32(c, 0.5);
        decodeLayer(k, x, w, { kCache, vCache, slot: one(slot), position: one(pos), len: one(len),
          hq, eps: 1e-6, theta: 1e4, scale: 0.125 }, rows);
        try { x.read(); console.log("read ok"); } catch (e) { console.log(e.message); }
      }
      k.close();`;
    for (const fused of [false, true]) {
      const env: Record<string, string> = { AGENTRL_CUDA_DECODE_CHAIN_TIMES: "1" };
      env.AGENTRL_CUDA_DECODE_QKV_IN_ATTN = fused ? "1" : "0";
      const out = await evalOnEmulator(script, env);
      const lines = out.filter((t) => !/^decode chain/.test(t));
      const text = out.join("\n");
      const what = fused ? "q|k|v in kernel 2" : "kernel 1";
      assert.equal(lines.length, 5, `${what}: ${lines.join("\n")}`);
      assert.match(lines[0]!, /arl_decode_layer_bf16\): slot 2 of token 0 is outside \[0, S\)/);
      assert.match(lines[1]!, /arl_decode_layer_bf16\): position 4 of token 0 is outside \[0, L\)/);
      assert.match(
        lines[2]!,
        /arl_decode_layer_bf16\) call was given a negative position at row 0/,
      );
      assert.match(lines[3]!, /arl_decode_layer_bf16\): length 5 of query 0 is outside \[1, L\]/);
      assert.equal(lines[4], "read ok", `${what}: a good call after the bad ones`);
      // (block 0 counts a layer at its end: the calls with a bad slot or length return before)
      // (and its q phase split: x and its norm, its pairs, the cluster's barrier and q)
      const split =
        /found by kernel 2 \(no kernel 1\): 3 layers; from its wait, us \(block 0\): x and its norm (\d+\.\d\d), then its pairs dotted and stored (\d+\.\d\d), then the cluster's barrier and q (\d+\.\d\d); means over blocks: pairs stored (\d+\.\d\d) from the wait, at the cluster's barrier \(arrive to passed, thread 0's kv word between\) (\d+\.\d\d)/;
      if (fused) {
        const spans = text.match(split);
        assert.ok(spans, `q|k|v in kernel 2: no split of its q phase in ${text}`);
        // (each above 0, and no difference of stamps wrapped around: under 1000 s)
        assert.ok(
          spans.slice(1).every((v) => Number(v) > 0 && Number(v) < 1e9),
          `a span of 0 or a wrapped one: ${spans[0]}`,
        );
      } else assert.doesNotMatch(text, /found by kernel 2/);
    }
  },
});

Deno.test({
  name:
    `the CUDA library, emulated: the chained decode layer gives the same bits in every block order (q|k|v in kernel 2 or not), and the cooperative kernel and the separate calls agree with it${why}`,
  ignore,
  async fn() {
    // Qwen2.5-0.5B's attention with a narrower MLP (MLP_F: its width) at positions 300 and 301:
    // nine key splits a head and 132 blocks in each MLP kernel, whose sums (o projection per head,
    // down rows) have a fixed order.
    const script = `${qwenLayerPrelude(7, 'Number(Deno.env.get("MLP_F"))')}
      const x = f32(c, 2);
      // two steps: the second finds the kv heads' barrier words with their top bits flipped
      for (const p of [pos, pos + 1]) step(x, p);
      const out = [...x.read(), ...rows.attn.read(), ...rows.act.read()];
      console.log(JSON.stringify(out));`;
    // (order, layer path, q|k|v in kernel 2, kernel 3's pieces, its dot rows, MLP width, pace)
    const runs: (string | undefined)[][] = [
      ["forward", "chain", "0"],
      ["reverse", "chain", "0"],
      ["shuffle", "chain", "0"],
      ["shuffle", "coop", "0"],
      ["forward", "steps", "0"],
      ["forward", "chain", "1"],
      ["reverse", "chain", "1"],
      ["shuffle", "chain", "1"],
      // every other cluster held back: the split that reads the new key must wait for it
      ["lag", "chain", "1"],
      // kernel 3's rows in 2 and 4 pieces (AGENTRL_CUDA_DECODE_MLP_PIECES): the same sums
      ["shuffle", "chain", "0", "2"],
      // ... and 4 pieces, with kernel 4's rows by its warps' columns (_DOWN_PIECES=1)
      ["reverse", "chain", "0", "4"],
      // Qwen2.5-0.5B's MLP (74 rows a block of kernel 3: two passes of its warps at 4 rows at
      // once), then its warps at 5 rows (_MLP_DOT_ROWS: one pass), in 1 and 2 pieces
      ["forward", "chain", "0", undefined, "4", "4864"],
      ["shuffle", "chain", "0", undefined, "5", "4864"],
      ["reverse", "chain", "0", "2", "5", "4864"],
      // 4 pieces, the last two issued as the first two land (_MLP_PACE=2)
      ["shuffle", "chain", "0", "4", undefined, undefined, "2"],
    ];
    // two subprocesses at a time (each runs one emulated thread at a time)
    const results = await inPairs(
      runs,
      ([order, layerPath, qkvInAttn, pieces, dotRows, mlpF, pace]) =>
        evalOnEmulator(script, {
          AGENTRL_CUDA_EMU_ORDER: order!,
          AGENTRL_CUDA_DECODE_LAYER: layerPath!,
          AGENTRL_CUDA_DECODE_QKV_IN_ATTN: qkvInAttn!,
          AGENTRL_CUDA_DECODE_CHAIN_TIMES: "1",
          AGENTRL_CUDA_DECODE_MLP_PIECES: pieces ?? "1",
          AGENTRL_CUDA_DECODE_DOWN_PIECES: pieces === "4" ? "1" : "0",
          AGENTRL_CUDA_DECODE_MLP_DOT_ROWS: dotRows ?? "4",
          AGENTRL_CUDA_DECODE_MLP_PACE: pace ?? "0",
          MLP_F: mlpF ?? "1216",
        }),
    );
    const outputs: number[][] = [];
    for (const [i, lines] of results.entries()) {
      const [order, layerPath, qkvInAttn, pieces, dotRows, , pace] = runs[i]!;
      const fused = lines.some((t) => /found by kernel 2 \(no kernel 1\): 2 layers/.test(t));
      assert.equal(fused, qkvInAttn === "1" && layerPath === "chain", `${order} ${layerPath}`);
      const inPieces = lines.find((t) => /kernel 3's rows in \d+ pieces: 2 layers/.test(t));
      assert.equal(inPieces?.match(/in (\d+) pieces/)?.[1], pieces, `${order} ${layerPath}`);
      const downPieces = lines.some((t) => /kernel 4's rows by its warps' columns: 2 l/.test(t));
      assert.equal(downPieces, pieces === "4", `${order} ${layerPath}: kernel 4's pieces`);
      const wide = lines.some((t) => /kernel 3's warps dot 5 rows at once: 2 layers/.test(t));
      assert.equal(wide, dotRows === "5", `${order} ${layerPath}: kernel 3's 5 rows at once`);
      const paced = lines.find((t) =>
        /kernel 3 kept \d+ of its pieces in flight before its wait: 2 l/.test(t)
      );
      assert.equal(paced?.match(/kept (\d+) of/)?.[1], pace, `${order} ${layerPath}: paced`);
      outputs.push(JSON.parse(lines.find((t) => t.startsWith("["))!));
    }
    const [chain, ...others] = outputs;
    assert.deepEqual(others[0], chain, "reverse block order: other bits");
    assert.deepEqual(others[1], chain, "shuffled block order: other bits");
    // q|k|v in kernel 2: x's norm sums in another order (within fp32 rounding of the chain's),
    // the same bits in every block order
    const fusedRuns = others.slice(4, 8);
    assert.deepEqual(others[8], chain, "kernel 3's rows in 2 pieces: other bits");
    assert.deepEqual(others[9], chain, "kernel 3's rows in 4 pieces, kernel 4's too: other bits");
    const [qwenMlp, wide, widePieces, paced] = others.slice(10);
    assert.deepEqual(wide, qwenMlp, "kernel 3's warps at 5 rows at once: other bits");
    assert.deepEqual(widePieces, qwenMlp, "5 rows at once, in 2 pieces: other bits");
    assert.deepEqual(paced, chain, "kernel 3's pieces paced: other bits");
    assert.deepEqual(fusedRuns[1], fusedRuns[0], "q|k|v in kernel 2, reverse order: other bits");
    assert.deepEqual(fusedRuns[2], fusedRuns[0], "q|k|v in kernel 2, shuffled order: other bits");
    assert.deepEqual(fusedRuns[3], fusedRuns[0], "q|k|v in kernel 2, clusters lagging: other bits");
    // the cooperative kernel and the separate calls sum in other orders: within fp32 rounding,
    // and not bit for bit (which would mean that the chain fell back to the separate calls)
    assert.notDeepEqual(others[3], chain, "the chain ran as the separate calls");
    for (const other of [...others.slice(2, 4), fusedRuns[0]!]) {
      const worst = other.reduce((m, v, i) => Math.max(m, Math.abs(v - chain![i]!)), 0);
      const scale = chain!.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      assert.ok(worst <= 1e-4 * scale, `differs by ${worst} (largest value ${scale})`);
    }
  },
});
Deno.test({
  name:
    `the CUDA library, emulated: kernels 3 and 4 as one (AGENTRL_CUDA_DECODE_MLP_FUSED=1) give the same bits in every block order, act the chain's, x within fp32 rounding of it${why}`,
  ignore,
  async fn() {
    // Qwen2.5-0.5B's attention, MLP 1216 wide (152 eight-column chunks over 132 blocks), two steps
    // (the second finds the sums and the count the first one's last block zeroed); X_SCALE 1e8
    // puts r past the sums' 2^24 range: x NaN, and the next call is clean again
    const script = `${qwenLayerPrelude(11, "1216")}
      const x = f32(c, 2);
      step(x, pos);
      const act = rows.act.read(); // (the first step's: from the same x in both paths)
      step(x, pos + 1);
      console.log(JSON.stringify([...x.read(), ...act]));
      const big = Tensor.from(k, new Float32Array(c).fill(1e8));
      step(big, pos + 2);
      try { big.read(); console.log("big: no error"); }
      catch (e) { console.log("big:", e.constructor.name, e.message); }
      console.log("big", big.read().every(Number.isNaN));
      const again = f32(c, 2);
      step(again, pos + 3);
      console.log("again", JSON.stringify([...again.read()]));`;
    const runs = [["forward", "0"], ["forward", "1"], ["reverse", "1"], ["shuffle", "1"]];
    const results = await inPairs(runs, ([order, fused]) =>
      evalOnEmulator(script, {
        AGENTRL_CUDA_EMU_ORDER: order!,
        AGENTRL_CUDA_DECODE_MLP_FUSED: fused!,
      }));
    const outputs = results.map((lines) => JSON.parse(lines.find((t) => t.startsWith("["))!));
    const [chain, fused, ...orders] = outputs as number[][];
    for (const [i, other] of orders.entries()) {
      assert.deepEqual(other, fused, `the fused MLP in ${runs[i + 2]![0]} order: other bits`);
    }
    const c = 896;
    assert.deepEqual(fused!.slice(c), chain!.slice(c), "act (step 1): other bits than the chain's");
    assert.notDeepEqual(fused!.slice(0, c), chain!.slice(0, c), "x: the chain's bits (not fused)");
    const scale = chain!.slice(0, c).reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    const worst = fused!.slice(0, c).reduce((m, v, i) => Math.max(m, Math.abs(v - chain![i]!)), 0);
    assert.ok(worst <= 1e-5 * scale, `x differs by ${worst} (largest value ${scale})`);
    // past the sums' range: a deferred error at the next synchronizing call, x NaN; the next
    // call is clean again (its x within fp32 rounding of the chain's)
    const again = (lines: string[]) =>
      JSON.parse(lines.find((t) => t.startsWith("again "))!.slice(6)) as number[];
    assert.ok(results[0]!.includes("big: no error"), results[0]!.join("\n"));
    for (const lines of results.slice(1)) {
      const error = lines.find((t) => t.startsWith("big: "));
      assert.match(
        error!,
        /^big: KernelError .*AGENTRL_CUDA_DECODE_MLP_FUSED=1 met a value of x's row \d+ that is not finite or not below 2\^24/,
      );
      assert.ok(lines.includes("big true"), lines.join("\n"));
      const [got, want] = [again(lines), again(results[0]!)];
      const off = got.reduce((m, v, i) => Math.max(m, Math.abs(v - want[i]!)), 0);
      assert.ok(off <= 1e-5 * Math.max(...want.map(Math.abs)), `after the flag: x off by ${off}`);
    }
  },
});
Deno.test({
  name:
    `the CUDA library, emulated: the L2 regions (arl_l2_persist) reach the launches that read them and change no bit${why}`,
  ignore,
  async fn() {
    // With AGENTRL_CUDA_L2_PERSIST the kernels that read an offered region (AGENTRL_L2_OFFER: the
    // LM head's GEMV, the chain's q|k|v and attention kernels) launch with its access-policy
    // window (the emulator checks each and says each new one on stderr); the logits are the
    // same bits as without. l2Persist reports what it keeps: the cap, the device's maximum or
    // nothing; a disposed model clears its own regions, and a recording cannot change them.
    const script = `import { KernelGraph, Kernels, l2Persist, l2Regions, Tensor } from ${
      JSON.stringify(path("../../ffi/mod.ts"))
    };
      import { Qwen2Model } from ${JSON.stringify(path("../../lib/model/qwen2.ts"))};
      import { tinyConfig } from ${JSON.stringify(path("../model/_qwen2_reference.ts"))};
      const k = Kernels.open({ device: "cuda" });
      // head dim 64, one kv head for two query heads: the decode chain's shapes
      const cfg = tinyConfig({ vocab_size: 8192, hidden_size: 128, intermediate_size: 256,
        num_attention_heads: 2, num_key_value_heads: 1, head_dim: 64, tie_word_embeddings: true });
      const model = new Qwen2Model(k, cfg, { seed: 3, precision: "bf16" });
      const cache = model.createKvCache(1, 8);
      const one = (v) => Int32Array.of(v);
      const bits = [];
      for (let p = 0; p < 3; p++) {
        const logits = model.forwardCached(cache, one((p * 37 + 5) % 8192), one(p), one(0), one(0));
        bits.push(...new Uint32Array(logits.read().buffer));
      }
      console.log("bits " + bits.reduce((h, b) => (Math.imul(h, 31) + b) >>> 0, 7) + " of " + bits.length);
      console.log("regions " + l2Regions(k).map((t) => t.byteSize).join(","));
      const big = new Tensor(k, [12 << 20], "f32");  // 48 MiB: more than the set-aside
      const small = new Tensor(k, [1024], "f32");
      console.log("kept " + l2Persist(k, [big, small]).join(","));
      console.log("cleared " + l2Persist(k, []).length + " " + l2Regions(k).length);
      l2Persist(k, [small]);
      model.dispose();
      console.log("other regions kept " + (l2Regions(k)[0] === small));
      const again = new Qwen2Model(k, cfg, { seed: 3 });
      again.forwardCached(again.createKvCache(1, 4), one(1), one(0), one(0), one(0));
      again.dispose();
      console.log("disposed model's regions cleared " + l2Regions(k).length);
      try { KernelGraph.record(k, () => l2Persist(k, [small])); console.log("recorded"); }
      catch (e) { console.log(e.message); }`;
    const said = /^emu: an L2 access-policy window of (\d+) bytes at hit ratio ([\d.]+)/;
    const kept = /^arl_l2_persist: (.*)/;
    const run = async (env: Record<string, string>) => {
      const lines = await evalOnEmulator(script, env);
      const windows = lines.flatMap((l) => {
        const m = said.exec(l);
        return m ? [`${m[1]}@${m[2]}`] : [];
      });
      const reports = lines.flatMap((l) => kept.exec(l)?.[1] ?? []);
      return { windows, reports, rest: lines.filter((l) => !said.test(l) && !kept.test(l)) };
    };
    const off = await run({});
    const spread = await run({ AGENTRL_CUDA_L2_PERSIST: "1" });
    const first = await run({ AGENTRL_CUDA_L2_PERSIST: "1", AGENTRL_CUDA_L2_PERSIST_FIRST: "1" });
    const qkv = await run({
      AGENTRL_CUDA_L2_PERSIST: "max",
      AGENTRL_L2_OFFER: "qkv",
      AGENTRL_CUDA_DECODE_QKV_IN_ATTN: "1",
    });
    const attn = await run({ AGENTRL_CUDA_L2_PERSIST: "max", AGENTRL_L2_OFFER: "attn,head" });
    // bytes: the head 8192 x 128 (2 MiB), a layer's q|k|v 256 x 128 and o 128 x 128, all bf16
    const [headBytes, qkvBytes, attnBytes, mib] = [2097152, 65536, 98304, 1048576];
    assert.deepEqual(off.windows, [], off.rest.join("\n"));
    assert.deepEqual(off.reports, [], "nothing asked, nothing said");
    // a 1 MiB set-aside for the 2 MiB head: spread over it at half, or its first MiB
    assert.deepEqual(spread.windows, [`${headBytes}@0.500`]);
    assert.deepEqual(first.windows, [`${mib}@1.000`]);
    assert.deepEqual(qkv.windows, [`${qkvBytes}@1.000`, `${qkvBytes}@1.000`], "one a layer");
    assert.deepEqual(attn.windows, [
      `${attnBytes}@1.000`,
      `${attnBytes}@1.000`,
      `${headBytes}@1.000`,
    ]);
    assert.match(
      spread.reports[0]!,
      /^1048576 of 2097152 bytes kept in L2 \(set-aside 1048576, persisting maximum 39321600, widest window 134217728\): 1 of 1 regions, spread$/,
    );
    assert.match(first.reports[0]!, /: 1 of 1 regions, their first bytes$/);
    assert.match(off.rest[0]!, /^bits \d+ of 24576$/);
    for (const r of [spread, first, qkv, attn]) {
      assert.equal(r.rest[0], off.rest[0], "no logit changes");
    }
    assert.equal(off.rest[1], `regions ${headBytes}`, "the head by default");
    assert.equal(qkv.rest[1], `regions ${qkvBytes},${qkvBytes}`);
    assert.equal(attn.rest[1], `regions ${attnBytes},${attnBytes},${headBytes}`);
    assert.deepEqual(off.rest.slice(2), [
      "kept 0,0",
      "cleared 0 0",
      "other regions kept true",
      "disposed model's regions cleared 0",
      off.rest[6],
    ]);
    assert.match(off.rest[6]!, /arl_l2_persist: a graph recording cannot change the L2 regions/);
    const most = 3 * (50 * 1024 * 1024 / 4);
    assert.equal(attn.rest[2], `kept ${most},0`, "the device's maximum, in the regions' order");
    assert.equal(spread.rest[2], `kept ${mib},0`, "the 1 MiB cap");
  },
});
