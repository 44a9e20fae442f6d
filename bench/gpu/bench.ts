/**
 * Our side of the GPU benchmark against PyTorch eager (bench/gpu/torch_bench.py,
 * same shapes, same machine): a Qwen2.5-0.5B-shaped model with random
 * weights; training tokens/s (forward + backward of a packed log-prob batch),
 * log-prob forward tokens/s, decode tokens/s with the KV cache at batch 32 and
 * batch 1, and batch-1 decode as a fraction of the memory-bandwidth bound
 * (every weight read once per token, at the measured device-to-device copy rate).
 *
 * Usage: `deno run -A bench/gpu/bench.ts --torch TORCH_JSON [--json OUT] [--small]`
 *
 * @module
 */
import { Kernels, sample, Tensor } from "../../ffi/mod.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import { QWEN2_5_0_5B_CONFIG } from "../model.ts";

/** Rates measured on our side. */
export interface OurRates {
  backend: string;
  copyBwGbs: number;
  trainTokensS: number;
  logprobTokensS: number;
  decodeTokensS: number;
  decode1TokensS: number;
  decode1BwFraction: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function timed(fn: () => void, reps: number): number {
  fn(); // warm-up (and workspace allocation)
  const times: number[] = [];
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    fn();
    times.push((performance.now() - t0) / 1000);
  }
  return median(times);
}

function randomTokens(n: number, vocab: number, salt: number): Int32Array {
  return Int32Array.from({ length: n }, (_, i) => (i * 7919 + salt * 104729 + 13) % vocab);
}

function decodeRate(model: Qwen2Model, b: number, prompt: number, steps: number): number {
  const vocab = model.config.vocab_size;
  const k = model.kernels;
  const run = (): number => {
    using cache = model.createKvCache(b, prompt + steps + 1);
    const tokens = randomTokens(b * prompt, vocab, 3);
    const positions = Int32Array.from({ length: b * prompt }, (_, i) => i % prompt);
    const slots = Int32Array.from({ length: b * prompt }, (_, i) => Math.floor(i / prompt));
    const lastRows = Int32Array.from({ length: b }, (_, s) => s * prompt + prompt - 1);
    const greedy = Array.from({ length: b }, (_, s) => ({ temperature: 0, seed: s, counter: 0 }));
    let next = sample(k, model.forwardCached(cache, tokens, positions, slots, lastRows)!, greedy)
      .tokens;
    const slotIds = Int32Array.from({ length: b }, (_, s) => s);
    const rows = Int32Array.from({ length: b }, (_, s) => s);
    const t0 = performance.now();
    for (let step = 0; step < steps; step++) {
      const pos = new Int32Array(b).fill(prompt + step);
      const logits = model.forwardCached(cache, next, pos, slotIds, rows)!;
      next = sample(k, logits, greedy).tokens; // reads the tokens back: a synchronize
    }
    return (performance.now() - t0) / 1000 / steps;
  };
  run();
  return b / median([run(), run(), run()]);
}

/** Two training steps of the benchmark's shape, nothing else (for a profiler). */
export function profileTrain(device: "cuda" | "cpu", small: boolean): void {
  using k = Kernels.open({ device });
  const config = small ? { ...QWEN2_5_0_5B_CONFIG, num_hidden_layers: 2 } : QWEN2_5_0_5B_CONFIG;
  using model = new Qwen2Model(k, config, { init: "none" });
  k.check(
    "arl_fill_f32",
    k.sym.arl_fill_f32(k.ctx, model.params.ptr, 0.01, BigInt(model.params.size)),
  );
  const [b, len] = [8, 512];
  const t = b * len;
  const tokens = randomTokens(t, config.vocab_size, 2);
  const batch = {
    tokens,
    positions: Int32Array.from({ length: t }, (_, i) => i % len),
    cuSeqlens: Int32Array.from({ length: b + 1 }, (_, s) => s * len),
    targets: Int32Array.from({ length: t }, (_, i) => tokens[(i + 1) % t]!),
  };
  for (let step = 0; step < 2; step++) {
    model.zeroGrad();
    model.forward(batch, { entropy: false });
    model.backward({ dlogp: new Float32Array(t).fill(-1 / t) });
    model.grad("model.norm.weight").read();
  }
}

/** Measures our rates on `device`. */
export function benchOurs(device: "cuda" | "cpu", small: boolean): OurRates {
  using k = Kernels.open({ device });
  const config = small
    ? {
      ...QWEN2_5_0_5B_CONFIG,
      vocab_size: 1000,
      hidden_size: 128,
      intermediate_size: 256,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: 32,
    }
    : QWEN2_5_0_5B_CONFIG;
  const [trainB, trainLen] = small ? [2, 64] : [8, 512];
  const [decodeB, prompt, steps] = small ? [4, 16, 8] : [32, 128, 64];
  const reps = small ? 2 : 5;

  // device-to-device copy bandwidth (bytes read + written)
  const n = small ? 1 << 20 : 1 << 28;
  let copyBwGbs: number;
  {
    using x = Tensor.from(k, Float32Array.from({ length: n }, (_, i) => i % 977));
    using y = new Tensor(k, [n], "f32");
    copyBwGbs = (2 * n * 4) / timed(() => y.copyFrom(x), 10) / 1e9;
  }

  using model = new Qwen2Model(k, config, { seed: 0 });
  const t = trainB * trainLen;
  const tokens = randomTokens(t, config.vocab_size, 2);
  const batch = {
    tokens,
    positions: Int32Array.from({ length: t }, (_, i) => i % trainLen),
    cuSeqlens: Int32Array.from({ length: trainB + 1 }, (_, s) => s * trainLen),
    targets: Int32Array.from({ length: t }, (_, i) => tokens[(i + 1) % t]!),
  };
  const dlogp = new Float32Array(t).fill(-1 / t);
  const probe = model.grad("model.norm.weight");
  const trainS = timed(() => {
    model.zeroGrad();
    model.forward(batch, { entropy: false });
    model.backward({ dlogp });
    probe.read(); // a synchronize
  }, reps);
  const logprobS = timed(() => {
    model.forward(batch, { entropy: false }).logp.read();
  }, reps);
  model.releaseWorkspaces();
  const decodeTokensS = decodeRate(model, decodeB, prompt, steps);
  const decode1TokensS = decodeRate(model, 1, prompt, steps);
  return {
    backend: `${k.backend}${
      device === "cuda" ? `, matmul ${Deno.env.get("AGENTRL_CUDA_MATMUL") ?? "tf32"}` : ""
    }`,
    copyBwGbs,
    trainTokensS: t / trainS,
    logprobTokensS: t / logprobS,
    decodeTokensS,
    decode1TokensS,
    decode1BwFraction: (decode1TokensS * model.params.byteSize) / (copyBwGbs * 1e9),
  };
}

if (import.meta.main) {
  const args = [...Deno.args];
  const flag = (name: string) => {
    const i = args.indexOf(name);
    if (i < 0) return undefined;
    const v = args[i + 1];
    args.splice(i, 2);
    return v;
  };
  const torchPath = flag("--torch");
  const jsonOut = flag("--json");
  const device = (flag("--device") ?? "cuda") as "cuda" | "cpu";
  const small = args.includes("--small");
  if (args.includes("--train-only")) {
    // one warm-up and one timed training step, for a profiler (ncu) to attribute
    profileTrain(device, small);
    Deno.exit(0);
  }
  const ours = benchOurs(device, small);
  const torch = torchPath ? JSON.parse(Deno.readTextFileSync(torchPath)) : null;
  const rows: [string, number, number | null, string][] = [
    [
      "training tokens/s (fwd+bwd, 8x512)",
      ours.trainTokensS,
      torch?.train_tokens_s ?? null,
      ">= 1.0x",
    ],
    [
      "log-prob forward tokens/s (8x512)",
      ours.logprobTokensS,
      torch?.logprob_tokens_s ?? null,
      ">= 1.0x",
    ],
    ["decode tokens/s, batch 32", ours.decodeTokensS, torch?.decode_tokens_s ?? null, ">= 1.0x"],
    ["decode tokens/s, batch 1", ours.decode1TokensS, torch?.decode1_tokens_s ?? null, ">= 1.0x"],
    ["decode batch 1, fraction of bandwidth bound", ours.decode1BwFraction, null, ">= 0.6"],
  ];
  console.log(`ours: ${ours.backend}; copy bandwidth ${ours.copyBwGbs.toFixed(0)} GB/s`);
  if (torch) {
    console.log(
      `PyTorch: ${torch.mode}; bf16-weight decode x1 ${
        torch.decode1_bf16_tokens_s?.toFixed(0)
      } tokens/s (${torch.decode1_bf16_bw_fraction?.toFixed(2)} of its bound)`,
    );
  }
  console.log(
    `${"metric".padEnd(46)} ${"ours".padStart(10)} ${"PyTorch".padStart(10)} ${
      "ratio".padStart(7)
    }  target`,
  );
  for (const [name, o, t, target] of rows) {
    const ratio = t ? (o / t).toFixed(2) : "-";
    console.log(
      `${name.padEnd(46)} ${o.toFixed(o < 10 ? 3 : 0).padStart(10)} ${
        (t ? t.toFixed(0) : "-").padStart(10)
      } ${ratio.padStart(7)}  ${target}`,
    );
  }
  if (jsonOut) Deno.writeTextFileSync(jsonOut, JSON.stringify({ ours, torch }, null, 2));
}
