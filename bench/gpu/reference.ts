/**
 * Compares our Qwen2 model with Hugging Face transformers on a random
 * checkpoint written by bench/gpu/hf_reference.py: per-token log-probs of a
 * packed batch (3 sequences, positions restarting at 0 in each) and the
 * gradient of loss = -mean(logp) for every parameter (dlogp = -1/T for every
 * token). A tied embedding is one parameter on both sides, its gradient the
 * sum of the lookup's and the LM head's parts. Prints one row per check (the
 * worst parameter of each group, then every parameter) and exits 1 when one
 * fails; `--json` writes `{ device, ok, rows, params, error? }`.
 *
 * Tolerances allow TF32 GEMMs on the GPU: logp relative L2 error 1e-3,
 * gradients 1e-2 (each parameter's own relative L2 error); with bf16 weights
 * (the CUDA default; `AGENTRL_PRECISION=f32` turns it off) 1e-2 and 5e-2, the
 * rounding of bf16's 8-bit mantissa on weights and GEMM inputs.
 *
 * Where the reference holds transformers' rotary table and cos/sin scale (`rope.inv_freq`,
 * `rope.attention_scaling`), they are compared with ours (the scaled RoPE's table, YaRN's
 * attention factor) to 1e-6.
 *
 * Usage:
 *   deno run -A bench/gpu/reference.ts --dir DIR [--device cuda|cpu] [--json FILE]
 *   deno run -A bench/gpu/reference.ts --make-fixture DIR [--yarn]   (a tiny reference made by
 *     our CPU model, to smoke-test the loading and comparison without torch; YaRN-scaled)
 *
 * @module
 */
import { Kernels } from "../../ffi/mod.ts";
import {
  expectedQwen2Weights,
  loadHfCheckpoint,
  saveHfCheckpoint,
} from "../../lib/model/checkpoint.ts";
import type { Qwen2Config } from "../../lib/model/config.ts";
import { parseQwen2Config } from "../../lib/model/hf_config.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import { ropeAttentionFactor, ropeInvFreq } from "../../lib/model/rope_scaling.ts";
import { SafetensorsFile, writeSafetensors } from "../../lib/model/safetensors.ts";

/** One comparison: relative L2 error and max abs error against the reference. */
export interface RefRow {
  what: string;
  relErr: number;
  maxAbs: number;
  tol: number;
  ok: boolean;
}

/** What {@linkcode compareWithReference} returns (and `--json` writes). */
export interface RefResult {
  device: string;
  ok: boolean;
  /** Summary rows: logp, the worst parameter of each group, the count within tolerance. */
  rows: RefRow[];
  /** One row per parameter. */
  params: RefRow[];
  error?: string;
}

/** Tolerance (relative L2 error) of the rotary table and attention scaling. */
export const ROPE_TOL = 1e-6;

/** Our rotary table (head_dim / 2): the scaled RoPE's, or theta^(-2j/d). */
function ourInvFreq(c: Qwen2Config): Float32Array {
  if (c.rope_scaling) return ropeInvFreq(c.rope_theta, c.head_dim, c.rope_scaling);
  return Float32Array.from(
    { length: c.head_dim / 2 },
    (_, j) => 1 / Math.pow(c.rope_theta, (2 * j) / c.head_dim),
  );
}

/** The rotary table and attention scaling against the reference's, where it has them. */
function ropeRows(ref: SafetensorsFile, c: Qwen2Config): RefRow[] {
  const rows: RefRow[] = [];
  if (ref.has("rope.inv_freq")) {
    rows.push(compare("rope inv_freq", ourInvFreq(c), ref.readF32("rope.inv_freq"), ROPE_TOL));
  }
  if (ref.has("rope.attention_scaling")) {
    const ours = Float32Array.of(ropeAttentionFactor(c.rope_scaling));
    rows.push(
      compare("rope attention scaling", ours, ref.readF32("rope.attention_scaling"), ROPE_TOL),
    );
  }
  return rows;
}

/** Tolerances (relative L2 error) for TF32 GEMMs. */
export const LOGP_TOL = 1e-3;
export const GRAD_TOL = 1e-2;
/** Tolerances with bf16 weights and GEMM inputs. */
export const LOGP_TOL_BF16 = 1e-2;
export const GRAD_TOL_BF16 = 5e-2;

function compare(what: string, ours: Float32Array, ref: Float32Array, tol: number): RefRow {
  if (ours.length !== ref.length) {
    return {
      what: `${what} (length ${ours.length} vs ${ref.length})`,
      relErr: NaN,
      maxAbs: NaN,
      tol,
      ok: false,
    };
  }
  let num = 0, den = 0, maxAbs = 0;
  for (let i = 0; i < ref.length; i++) {
    const d = ours[i]! - ref[i]!;
    num += d * d;
    den += ref[i]! * ref[i]!;
    if (!(Math.abs(d) <= maxAbs)) maxAbs = Math.abs(d); // NaN propagates
  }
  const relErr = Math.sqrt(num) / Math.max(Math.sqrt(den), 1e-30);
  return { what, relErr, maxAbs, tol, ok: Number.isFinite(relErr) && relErr <= tol };
}

function failRow(what: string): RefRow {
  return { what, relErr: NaN, maxAbs: NaN, tol: 0, ok: false };
}

/** An integer tensor stored as I32, I64 or a float type. */
function readInts(file: SafetensorsFile, name: string): Int32Array {
  const info = file.info(name);
  if (info.dtype === "I32") return new Int32Array(file.readBytes(name).slice().buffer);
  if (info.dtype === "I64") {
    return Int32Array.from(new BigInt64Array(file.readBytes(name).slice().buffer), Number);
  }
  return Int32Array.from(file.readF32(name), Math.round);
}

/** The packed batch of the reference: saved tensors where present, else derived from lengths. */
function readBatch(ref: SafetensorsFile) {
  const tokens = readInts(ref, "tokens");
  const t = tokens.length;
  let cuSeqlens: Int32Array;
  if (ref.has("cu_seqlens")) cuSeqlens = readInts(ref, "cu_seqlens");
  else {
    const lengths = readInts(ref, "lengths");
    cuSeqlens = new Int32Array(lengths.length + 1);
    lengths.forEach((n, s) => (cuSeqlens[s + 1] = cuSeqlens[s]! + n));
  }
  if (cuSeqlens[0] !== 0 || cuSeqlens.at(-1) !== t) {
    throw new Error(`cu_seqlens [${cuSeqlens.join(", ")}] do not cover ${t} tokens`);
  }
  const positions = new Int32Array(t);
  const targets = new Int32Array(t);
  for (let s = 0; s + 1 < cuSeqlens.length; s++) {
    const [a, b] = [cuSeqlens[s]!, cuSeqlens[s + 1]!];
    for (let i = a; i < b; i++) {
      positions[i] = i - a;
      targets[i] = i + 1 < b ? tokens[i + 1]! : 0;
    }
  }
  return {
    tokens,
    positions: ref.has("positions") ? readInts(ref, "positions") : positions,
    cuSeqlens,
    targets: ref.has("targets") ? readInts(ref, "targets") : targets,
  };
}

function groupOf(name: string): string {
  if (name.includes("embed") || name.startsWith("lm_head")) return "embeddings (+ tied LM head)";
  if (name.includes("self_attn")) return "attention";
  if (name.includes("mlp")) return "MLP";
  return "norms";
}

/** Runs the comparison on `device` against the folder `dir`. */
export function compareWithReference(
  dir: string,
  device: "cuda" | "cpu",
  log: (line: string) => void = () => {},
): RefResult {
  const rows: RefRow[] = [];
  const params: RefRow[] = [];
  using k = Kernels.open({ device });
  using ckpt = loadHfCheckpoint(dir);
  const c = ckpt.config;
  log(
    `${device} (${k.backend}): ${c.num_hidden_layers} layers, hidden ${c.hidden_size}, ` +
      `heads ${c.num_attention_heads}/${c.num_key_value_heads}, vocab ${c.vocab_size}, ` +
      `rope_theta ${c.rope_theta}, eps ${c.rms_norm_eps}, tied ${c.tie_word_embeddings}` +
      (c.rope_scaling ? `, rope_scaling ${JSON.stringify(c.rope_scaling)}` : ""),
  );
  using model = new Qwen2Model(k, c, { init: "none" });
  model.loadNamed((name) => ckpt.weights.readF32(name));
  const bf16 = model.precision === "bf16";
  const logpTol = bf16 ? LOGP_TOL_BF16 : LOGP_TOL;
  const gradTol = bf16 ? GRAD_TOL_BF16 : GRAD_TOL;
  log(`weights: ${model.precision}`);
  using ref = SafetensorsFile.open(`${dir}/reference.safetensors`);
  const batch = readBatch(ref);
  const t = batch.tokens.length;
  log(`batch: ${t} tokens in ${batch.cuSeqlens.length - 1} sequences`);
  rows.push(...ropeRows(ref, c));

  // forward
  try {
    model.zeroGrad();
    const { logp } = model.forward(batch, { entropy: false });
    rows.push(
      compare("logp (per token)", logp.read() as Float32Array, ref.readF32("logp"), logpTol),
    );
  } catch (e) {
    rows.push(failRow(`logp: error ${(e as Error).message}`));
    return { device, ok: false, rows, params, error: String((e as Error).stack ?? e) };
  }

  // backward and every gradient
  try {
    model.backward({ dlogp: new Float32Array(t).fill(-1 / t) });
  } catch (e) {
    rows.push(failRow(`backward: error ${(e as Error).message}`));
    return { device, ok: false, rows, params, error: String((e as Error).stack ?? e) };
  }
  const groups = new Map<string, RefRow>();
  for (const name of model.names) {
    let row: RefRow;
    try {
      let refGrad: Float32Array | null = ref.has(`grad.${name}`)
        ? ref.readF32(`grad.${name}`)
        : null;
      // an untied-style reference of a tied model: the embedding's gradient is the sum
      if (
        name === "model.embed_tokens.weight" && c.tie_word_embeddings &&
        ref.has("grad.lm_head.weight")
      ) {
        const head = ref.readF32("grad.lm_head.weight");
        refGrad = refGrad ? refGrad.map((x, i) => x + head[i]!) : head;
      }
      row = refGrad === null
        ? failRow(`grad ${name}: missing from the reference`)
        : compare(`grad ${name}`, model.grad(name).read() as Float32Array, refGrad, gradTol);
    } catch (e) {
      row = failRow(`grad ${name}: error ${(e as Error).message}`);
    }
    params.push(row);
    const group = groupOf(name);
    const worst = groups.get(group);
    const worse = !worst || (worst.ok && !row.ok) ||
      (worst.ok === row.ok && !(row.relErr <= worst.relErr));
    if (worse) groups.set(group, { ...row, what: `grad, ${group}: worst ${name}` });
  }
  const extra = ref.names().filter((n) =>
    n.startsWith("grad.") && !model.names.includes(n.slice(5)) &&
    !(n === "grad.lm_head.weight" && c.tie_word_embeddings)
  );
  if (extra.length > 0) rows.push(failRow(`reference grads we lack: ${extra.join(", ")}`));
  rows.push(...groups.values());
  const nOk = params.filter((r) => r.ok).length;
  rows.push({
    what: `grads within tol: ${nOk} of ${params.length} parameters`,
    relErr: Math.max(...params.map((r) => r.relErr)),
    maxAbs: Math.max(...params.map((r) => r.maxAbs)),
    tol: gradTol,
    ok: nOk === params.length,
  });
  return { device, ok: rows.every((r) => r.ok), rows, params };
}

/**
 * A tiny reference folder made by our own CPU model (random weights and
 * biases): the loading, batch and name plumbing of {@linkcode compareWithReference}
 * can be smoke-tested without torch (the errors are then ~0). With `yarn`, the
 * model has YaRN's scaling over an original context of 1000 (a ramp over dimensions 0-3 of
 * 8) and the reference its table and attention factor.
 */
export async function makeFixture(dir: string, options: { yarn?: boolean } = {}): Promise<void> {
  const config = parseQwen2Config({
    model_type: "qwen2",
    architectures: ["Qwen2ForCausalLM"],
    vocab_size: 384,
    hidden_size: 64,
    intermediate_size: 96,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    max_position_embeddings: 256,
    rope_theta: 1000000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
    ...(options.yarn
      ? { rope_scaling: { type: "yarn", factor: 4.0, original_max_position_embeddings: 1000 } }
      : {}),
  }, "fixture");
  using k = Kernels.open({ device: "cpu" });
  using model = new Qwen2Model(k, config, { seed: 1 });
  // random biases too
  const all = model.params.read() as Float32Array;
  let s = 7;
  for (const r of model.layout.regions) {
    if (!r.name.endsWith(".bias")) continue;
    for (let i = 0; i < r.size; i++) {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      all[r.offset + i] = ((s >>> 8) / (1 << 24) - 0.5) * 0.04;
    }
  }
  model.params.write(all);
  model.markParamsChanged();
  const named = model.exportNamed();
  const byName = new Map(named.map((p) => [p.name, p]));
  await saveHfCheckpoint(
    dir,
    config,
    expectedQwen2Weights(config).map(({ name, shape }) =>
      [name, shape, byName.get(name)!.data.slice()] as const
    ),
    { overwrite: true },
  );
  const lengths = [5, 8, 11];
  const t = lengths.reduce((a, b) => a + b, 0);
  const tokens = Int32Array.from({ length: t }, (_, i) => (i * 7919 + 13) % config.vocab_size);
  const cu = [0];
  for (const n of lengths) cu.push(cu.at(-1)! + n);
  const positions = new Int32Array(t);
  const targets = new Int32Array(t);
  for (let q = 0; q < lengths.length; q++) {
    for (let i = cu[q]!; i < cu[q + 1]!; i++) {
      positions[i] = i - cu[q]!;
      targets[i] = i + 1 < cu[q + 1]! ? tokens[i + 1]! : 0;
    }
  }
  model.zeroGrad();
  const logp = (model.forward({ tokens, positions, cuSeqlens: Int32Array.from(cu), targets }, {
    entropy: false,
  }).logp.read() as Float32Array).slice();
  model.backward({ dlogp: new Float32Array(t).fill(-1 / t) });
  const f32 = (a: ArrayLike<number>) => Float32Array.from(a);
  await writeSafetensors(`${dir}/reference.safetensors`, [
    { name: "logp", shape: [t], data: logp },
    { name: "tokens", shape: [t], data: f32(tokens) },
    { name: "positions", shape: [t], data: f32(positions) },
    { name: "targets", shape: [t], data: f32(targets) },
    { name: "cu_seqlens", shape: [cu.length], data: f32(cu) },
    { name: "lengths", shape: [lengths.length], data: f32(lengths) },
    ...(options.yarn
      ? [
        { name: "rope.inv_freq", shape: [config.head_dim / 2], data: ourInvFreq(config) },
        {
          name: "rope.attention_scaling",
          shape: [1],
          data: Float32Array.of(ropeAttentionFactor(config.rope_scaling)),
        },
      ]
      : []),
    ...model.names.map((name) => ({
      name: `grad.${name}`,
      shape: model.grad(name).shape,
      data: (model.grad(name).read() as Float32Array).slice(),
    })),
  ], { metadata: { format: "pt" } });
}

function fmtNum(x: number): string {
  return Number.isFinite(x) ? x.toExponential(2) : String(x);
}

function format(rows: RefRow[]): string {
  const w = Math.max(40, ...rows.map((r) => r.what.length)) + 1;
  const lines = rows.map((r) =>
    `${r.what.padEnd(w)} ${fmtNum(r.relErr).padStart(10)} ${fmtNum(r.maxAbs).padStart(10)} ${
      r.tol.toExponential(0).padStart(6)
    }  ${r.ok ? "ok" : "FAIL"}`
  );
  const head = `${"what".padEnd(w)} ${"rel err".padStart(10)} ${"max abs".padStart(10)} ${
    "tol".padStart(6)
  }  ok`;
  return [head, ...lines].join("\n");
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
  const yarn = args.includes("--yarn");
  if (yarn) args.splice(args.indexOf("--yarn"), 1);
  const fixture = flag("--make-fixture");
  if (fixture) {
    await makeFixture(fixture, { yarn });
    console.log(`fixture written to ${fixture}`);
    Deno.exit(0);
  }
  const device = (flag("--device") ?? "cuda") as "cuda" | "cpu";
  const json = flag("--json");
  const dir = flag("--dir") ?? args.find((a) => !a.startsWith("--"));
  if (!dir || (device !== "cuda" && device !== "cpu")) {
    console.error("usage: reference.ts --dir DIR [--device cuda|cpu] [--json FILE]");
    Deno.exit(2);
  }
  let result: RefResult;
  const t0 = performance.now();
  try {
    result = compareWithReference(dir, device, (l) => console.log(l));
  } catch (e) {
    console.error(e);
    result = {
      device,
      ok: false,
      rows: [failRow(`error: ${(e as Error).message ?? e}`.slice(0, 200))],
      params: [],
      error: String((e as Error).stack ?? e),
    };
  }
  console.log(
    `reference comparison on ${device} (ours vs Hugging Face transformers, fp32), ${
      ((performance.now() - t0) / 1000).toFixed(1)
    } s`,
  );
  console.log(format(result.rows));
  if (result.params.length > 0) {
    console.log("\nevery parameter:");
    console.log(format(result.params));
  }
  if (json) Deno.writeTextFileSync(json, JSON.stringify(result, null, 2));
  Deno.exit(result.ok ? 0 : 1);
}
