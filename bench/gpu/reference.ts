/**
 * Compares our Qwen2 model with Hugging Face transformers on a random
 * checkpoint written by bench/gpu/hf_reference.py: per-token log-probs and the
 * gradient of -mean(logp) for every parameter. Prints one row per check and
 * exits 1 when one fails.
 *
 * Usage: `deno run -A bench/gpu/reference.ts DIR [--device cuda|cpu] [--json FILE]`
 *
 * @module
 */
import { Kernels } from "../../ffi/mod.ts";
import { loadHfCheckpoint } from "../../lib/model/checkpoint.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import { SafetensorsFile } from "../../lib/model/safetensors.ts";

/** One comparison: relative L2 error and max abs error against the reference. */
export interface RefRow {
  what: string;
  relErr: number;
  maxAbs: number;
  tol: number;
  ok: boolean;
}

function compare(what: string, ours: Float32Array, ref: Float32Array, tol: number): RefRow {
  let num = 0, den = 0, maxAbs = 0;
  for (let i = 0; i < ref.length; i++) {
    const d = ours[i]! - ref[i]!;
    num += d * d;
    den += ref[i]! * ref[i]!;
    maxAbs = Math.max(maxAbs, Math.abs(d));
  }
  const relErr = Math.sqrt(num) / Math.max(Math.sqrt(den), 1e-30);
  const ok = ours.length === ref.length && Number.isFinite(relErr) && relErr <= tol;
  return { what, relErr, maxAbs, tol, ok };
}

function readF32(file: SafetensorsFile, name: string): Float32Array {
  const bytes = file.readBytes(name);
  return new Float32Array(bytes.slice().buffer);
}

/** Runs the comparison on `device`. */
export function compareWithReference(dir: string, device: "cuda" | "cpu"): RefRow[] {
  using k = Kernels.open({ device });
  using ckpt = loadHfCheckpoint(dir);
  using model = new Qwen2Model(k, ckpt.config, { init: "none" });
  model.loadNamed((name) => ckpt.weights.readF32(name));
  const ref = SafetensorsFile.open(`${dir}/reference.safetensors`);
  try {
    const tokens = Int32Array.from(readF32(ref, "tokens"));
    const lengths = Array.from(readF32(ref, "lengths"));
    const t = tokens.length;
    const cuSeqlens = new Int32Array(lengths.length + 1);
    const positions = new Int32Array(t);
    const targets = new Int32Array(t);
    lengths.forEach((n, s) => {
      const base = cuSeqlens[s]!;
      cuSeqlens[s + 1] = base + n;
      for (let i = 0; i < n; i++) {
        positions[base + i] = i;
        targets[base + i] = i + 1 < n ? tokens[base + i + 1]! : 0;
      }
    });
    model.zeroGrad();
    const { logp } = model.forward({ tokens, positions, cuSeqlens, targets }, { entropy: false });
    const rows = [
      compare("logp (per token)", logp.read() as Float32Array, readF32(ref, "logp"), 1e-3),
    ];
    model.backward({ dlogp: new Float32Array(t).fill(-1 / t) });
    const groups = new Map<string, RefRow>();
    const missing = model.names.filter((name) => !ref.has(`grad.${name}`));
    if (missing.length > 0) {
      rows.push({
        what: `grads missing from the reference: ${missing.join(", ")}`,
        relErr: NaN,
        maxAbs: NaN,
        tol: 0,
        ok: false,
      });
    }
    for (const name of model.names) {
      const refName = `grad.${name}`;
      if (!ref.has(refName)) continue;
      const row = compare(
        `grad ${name}`,
        model.grad(name).read() as Float32Array,
        readF32(ref, refName),
        1e-2,
      );
      const group = name.includes("embed")
        ? "embeddings (+ tied LM head)"
        : name.includes("self_attn")
        ? "attention"
        : name.includes("mlp")
        ? "MLP"
        : "norms";
      const worst = groups.get(group);
      if (!worst || row.relErr > worst.relErr || !row.ok) {
        groups.set(group, { ...row, what: `grad, ${group}: worst ${name}` });
      }
    }
    return [...rows, ...groups.values()];
  } finally {
    ref.close();
  }
}

function format(rows: RefRow[]): string {
  const lines = rows.map((r) =>
    `${r.what.padEnd(70)} ${r.relErr.toExponential(2).padStart(10)} ${
      r.maxAbs.toExponential(2).padStart(10)
    } ${r.tol.toExponential(0).padStart(6)}  ${r.ok ? "ok" : "FAIL"}`
  );
  return [
    `${"check".padEnd(70)} ${"rel err".padStart(10)} ${"max abs".padStart(10)} ${
      "tol".padStart(6)
    }`,
    ...lines,
  ]
    .join("\n");
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
  const device = (flag("--device") ?? "cuda") as "cuda" | "cpu";
  const json = flag("--json");
  const dir = args[0];
  if (!dir) {
    console.error("usage: reference.ts DIR [--device cuda|cpu] [--json FILE]");
    Deno.exit(2);
  }
  const rows = compareWithReference(dir, device);
  console.log(`reference comparison on ${device} (ours vs Hugging Face transformers, fp32)`);
  console.log(format(rows));
  if (json) Deno.writeTextFileSync(json, JSON.stringify(rows, null, 2));
  Deno.exit(rows.every((r) => r.ok) ? 0 : 1);
}
