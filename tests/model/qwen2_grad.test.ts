// Whole-model gradients of the Qwen2 decoder against finite differences, at
// tiny sizes, over a random subset of parameters of every kind (embeddings
// tied and untied, norms, q/k/v weights and biases, o/gate/up/down, the final
// norm, the LM head, the value head).
//
// Two independent checks per parameter:
// - central differences of the kernels' own float32 forward pass (h = 1e-2)
//   of the scalar loss sum(g logp) + sum(g2 entropy) (or sum(g values)),
//   accumulated in float64. Float32 rounding of the O(10) loss is ~1e-6, so
//   the difference quotient carries ~1e-4 of noise: tolerance 2e-3 absolute
//   + 1e-2 relative (truncation error at h = 1e-2);
// - central differences (h = 1e-5) of the float64 reference model: only the
//   float32 error of the backward pass remains, tolerance 1e-4 of the
//   largest checked gradient + 2e-3 relative.
import assert from "node:assert/strict";
import { Kernels } from "../../ffi/mod.ts";
import type { Qwen2Config } from "../../lib/model/config.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import { BASE_SEED, Rng } from "../kernels/_helpers.ts";
import {
  type Batch,
  LLAMA3_SMALL,
  randomBatch,
  randomizeParams,
  refLogprobs,
  type RefParams,
  refParams,
  refValues,
  tinyConfig,
  YARN_SMALL,
} from "./_qwen2_reference.ts";

interface Probe {
  name: string;
  /** Index inside the named parameter. */
  index: number;
}

/** About `perRegion` random indices of every parameter (more for the big matrices). */
function pickProbes(model: Qwen2Model, rng: Rng, batch: Batch, perRegion: number): Probe[] {
  const probes: Probe[] = [];
  const c = model.config.hidden_size;
  for (const r of model.layout.regions) {
    const count = Math.min(
      r.size,
      r.name.includes("embed") || r.name === "lm_head.weight" ? 2 * perRegion : perRegion,
    );
    const seen = new Set<number>();
    for (let n = 0; n < count; n++) {
      let index: number;
      do {
        if (r.name === "model.embed_tokens.weight" && n % 2 === 0) {
          // a row of a token in the batch (other rows only get the LM head's gradient)
          const tok = batch.tokens[rng.int(0, batch.tokens.length - 1)]!;
          index = tok * c + rng.int(0, c - 1);
        } else {
          index = rng.int(0, r.size - 1);
        }
      } while (seen.has(index));
      seen.add(index);
      probes.push({ name: r.name, index });
    }
  }
  return probes;
}

interface GradCase {
  what: string;
  config: Qwen2Config;
  valueHead?: boolean;
  lens: number[];
  starts?: number[];
  temperature?: number;
  /** Loss weights on entropy too (logprob cases). */
  entropy?: boolean;
}

function runCase(c: GradCase): void {
  using k = Kernels.open({ threads: 2 });
  using model = new Qwen2Model(k, c.config, { valueHead: c.valueHead ?? false });
  randomizeParams(model, `grad ${c.what}`);
  const rng = new Rng(`grad batch ${c.what}`);
  const batch = randomBatch(rng, c.config.vocab_size, c.lens, c.starts);
  const t = batch.tokens.length;
  const g = rng.randn(t, 1);
  const g2 = c.entropy ? rng.randn(t, 1) : null;
  const temperature = c.temperature ?? 1;

  // The kernels' loss, in float64 over float32 outputs.
  const kernelLoss = (): number => {
    let s = 0;
    if (c.valueHead) {
      const v = model.forwardValues(batch).view();
      for (let i = 0; i < t; i++) s += g[i]! * v[i]!;
      return s;
    }
    const r = model.forward(batch, { temperature, entropy: g2 !== null });
    const lp = r.logp.view();
    const en = r.entropy?.view();
    for (let i = 0; i < t; i++) s += g[i]! * lp[i]! + (g2 && en ? g2[i]! * en[i]! : 0);
    return s;
  };
  // The reference's loss, all in float64.
  const refLoss = (p: RefParams): number => {
    let s = 0;
    if (c.valueHead) {
      const v = refValues(c.config, p, batch);
      for (let i = 0; i < t; i++) s += g[i]! * v[i]!;
      return s;
    }
    const r = refLogprobs(c.config, p, batch, temperature);
    for (let i = 0; i < t; i++) s += g[i]! * r.logp[i]! + (g2 ? g2[i]! * r.entropy[i]! : 0);
    return s;
  };

  // Analytic gradients: two micro-batches accumulate (+=) into a zeroed buffer, so
  // half the sum is the gradient (and a backward that overwrote would fail).
  model.grads.view().fill(NaN);
  model.zeroGrad();
  for (let rep = 0; rep < 2; rep++) {
    kernelLoss();
    if (c.valueHead) model.backward({ dvalues: g });
    else model.backward(g2 ? { dlogp: g, dentropy: g2 } : { dlogp: g });
  }
  const grads = model.grads.toArray().map((x) => x / 2);

  const probes = pickProbes(model, rng, batch, 7);
  const params = model.params.view();
  const ref = refParams(model);
  const an: number[] = [], fd32: number[] = [], fd64: number[] = [];
  for (const p of probes) {
    const at = model.layout.get(p.name).offset + p.index;
    an.push(grads[at]!);
    const x = params[at]!;
    const h = 1e-2;
    params[at] = x + h;
    const up = kernelLoss();
    params[at] = x - h;
    const down = kernelLoss();
    params[at] = x;
    fd32.push((up - down) / (2 * h));
    const r = ref.get(p.name)!;
    const x64 = r[p.index]!;
    const h64 = 1e-5;
    r[p.index] = x64 + h64;
    const up64 = refLoss(ref);
    r[p.index] = x64 - h64;
    const down64 = refLoss(ref);
    r[p.index] = x64;
    fd64.push((up64 - down64) / (2 * h64));
  }

  const kinds = new Set(probes.map((p) => p.name.replace(/\.\d+\./, ".N.")));
  assert.ok(probes.length >= 150, `${c.what}: only ${probes.length} probes`);
  const nonzero = an.filter((x) => Math.abs(x) > 1e-3).length;
  assert.ok(
    nonzero >= 0.8 * probes.length,
    `${c.what}: only ${nonzero} of ${probes.length} probed gradients are non-zero, ` +
      "so the check is weak",
  );
  const scale = Math.max(...fd64.map(Math.abs));
  const bad: string[] = [];
  probes.forEach((p, i) => {
    const e32 = Math.abs(an[i]! - fd32[i]!);
    const e64 = Math.abs(an[i]! - fd64[i]!);
    const ok32 = e32 <= 2e-3 + 1e-2 * Math.abs(fd32[i]!);
    const ok64 = e64 <= 1e-4 * scale + 2e-3 * Math.abs(fd64[i]!);
    if (!ok32 || !ok64) {
      bad.push(
        `${p.name}[${p.index}]: backward ${an[i]!.toExponential(4)}, float32 differences ` +
          `${fd32[i]!.toExponential(4)}, float64 reference differences ${
            fd64[i]!.toExponential(4)
          }`,
      );
    }
  });
  assert.equal(
    bad.length,
    0,
    `${c.what}: ${bad.length} of ${probes.length} gradients (${kinds.size} kinds) are off ` +
      `(seed ${BASE_SEED}):\n  ${bad.slice(0, 8).join("\n  ")}`,
  );
}

Deno.test("qwen2 gradients: untied embeddings, log-probs and entropies at temperature 0.8", () => {
  runCase({
    what: "untied",
    config: tinyConfig(),
    lens: [5, 3, 6],
    starts: [0, 4, 0],
    temperature: 0.8,
    entropy: true,
  });
});

Deno.test("qwen2 gradients: tied embeddings (LM head and embedding share one gradient)", () => {
  runCase({
    what: "tied",
    config: tinyConfig({ tie_word_embeddings: true, vocab_size: 40 }),
    lens: [4, 7, 1],
    entropy: true,
  });
});

Deno.test("qwen2 gradients: log-probs only, MQA (1 kv head), no attention bias, odd sizes", () => {
  runCase({
    what: "mqa",
    config: tinyConfig({
      vocab_size: 37,
      hidden_size: 24,
      intermediate_size: 40,
      num_attention_heads: 4,
      num_key_value_heads: 1,
      head_dim: 6,
      attention_bias: false,
      rope_theta: 1e6,
    }),
    lens: [6, 0, 5],
    entropy: false,
  });
});

Deno.test("qwen2 gradients: Qwen3's per-head q/k norms (and their weights), GQA, tied", () => {
  runCase({
    what: "qwen3",
    config: tinyConfig({
      model_type: "qwen3",
      attention_bias: false,
      tie_word_embeddings: true,
      head_dim: 12,
      rms_norm_eps: 1e-5,
    }),
    lens: [5, 4],
    starts: [0, 3],
    temperature: 1.1,
    entropy: true,
  });
});

Deno.test("qwen2 gradients: Llama with Llama 3.1's RoPE scaling (the backward rotation uses the table)", () => {
  runCase({
    what: "llama3 rope",
    config: tinyConfig({
      model_type: "llama",
      attention_bias: false,
      rope_scaling: LLAMA3_SMALL,
    }),
    lens: [12, 5],
    starts: [0, 18],
    entropy: true,
  });
});

Deno.test("qwen2 gradients: YaRN (the table and the attention factor in the backward pass)", () => {
  runCase({
    what: "yarn",
    config: tinyConfig({ rope_scaling: YARN_SMALL }),
    lens: [12, 5],
    starts: [0, 70],
    entropy: true,
  });
});

Deno.test("qwen2 gradients: the critic's value head and the body below it", () => {
  runCase({
    what: "critic",
    config: tinyConfig({ tie_word_embeddings: true }),
    valueHead: true,
    lens: [6, 5],
  });
});
