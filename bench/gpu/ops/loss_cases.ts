/**
 * The losses: PPO's policy loss in every setting and aggregation mode, the value loss, full KL.
 *
 * @module
 */
import {
  klFull,
  LOSS_AGG_MODES,
  ppoLoss,
  type PpoLossParams,
  valueLoss,
} from "../../../ffi/mod.ts";
import { type Case, cuOf, type Output, Rand, sumTo, TOL_FP32 } from "./harness.ts";

// Settings crossed with every aggregation mode: dual clip, the four KL kinds
// (with and without clamps), entropy and SFT terms.
const PPO_SETTINGS: PpoLossParams[] = [
  { clipLow: 0.2, clipHigh: 0.2 },
  {
    clipLow: 0.2,
    clipHigh: 0.28,
    dualClip: 3,
    klCoef: 0.1,
    klKind: "k3",
    klClamp: 10,
    entropyCoef: 0.01,
    sftCoef: 0.1,
  },
  { clipLow: 0.1, clipHigh: 0.3, klCoef: 0.05, klKind: "abs" },
  { clipLow: 0.2, clipHigh: 0.2, klCoef: 0.2, klKind: "mse", klClamp: 0.5, entropyCoef: 0.003 },
  { clipLow: 0.3, clipHigh: 0.2, dualClip: 2, klCoef: 0.3, klKind: "kl", klClamp: 1 },
  { clipLow: 0.2, clipHigh: 0.28, dualClip: 3, klCoef: 0.1, klKind: "k3", ratioType: "segment" },
];

/** Whether a segment's ratio (exp of its mean log-ratio) is within 1e-3 of a token's kink. */
function segmentNearKink(
  x: { logp: Float32Array; old: Float32Array; a: Float32Array },
  mask: Float32Array,
  cu: Int32Array,
  p: PpoLossParams,
): boolean {
  const [lo, hi, dual] = [1 - p.clipLow, 1 + p.clipHigh, p.dualClip ?? 0];
  for (let s = 0; s + 1 < cu.length; s++) {
    for (let i = cu[s]!; i < cu[s + 1]!;) {
      let e = i, sum = 0;
      while (e < cu[s + 1]! && mask[e]! > 0) sum += Math.fround(x.logp[e]!) - x.old[e++]!;
      const ratio = Math.exp(sum / Math.max(1, e - i));
      for (let j = i; j < e; j++) {
        const a = x.a[j]!;
        const pg = Math.max(-a * ratio, -a * Math.min(hi, Math.max(lo, ratio)));
        const kinks = [ratio - lo, ratio - hi, dual > 1 && a < 0 ? pg + a * dual : 1];
        if (kinks.some((k) => Math.abs(k) < 1e-3)) return true;
      }
      i = Math.max(e, i + 1);
    }
  }
  return false;
}

/** PPO inputs with no token within 1e-3 of a kink of the loss (clip bounds, dual clip, |d| = 0,
 * the KL clamp), where exp/log rounding could flip a branch between devices. */
function ppoInputs(r: Rand, t: number, p: PpoLossParams) {
  const f = () => new Float32Array(t);
  const x = { logp: f(), old: f(), ref: f(), a: f() };
  const [lo, hi, dual, clamp] = [1 - p.clipLow, 1 + p.clipHigh, p.dualClip ?? 0, p.klClamp ?? 0];
  const klOf = (d: number) =>
    ({ kl: d, abs: Math.abs(d), mse: 0.5 * d * d, k3: Math.exp(-d) - 1 + d })[p.klKind ?? "kl"];
  for (let i = 0; i < t;) {
    const [logp, a] = [r.range(-4, -0.1), r.normal()];
    const [old, ref] = [logp - r.range(-1.5, 1.5), logp - r.range(-2.5, 2.5)];
    const ratio = Math.exp(logp - old), d = logp - ref;
    const pg = Math.max(-a * ratio, -a * Math.min(hi, Math.max(lo, ratio)));
    const kinks = [ratio - lo, ratio - hi, a, d, dual > 1 && a < 0 ? pg + a * dual : 1];
    if (clamp > 0) kinks.push(Math.abs(klOf(d)) - clamp);
    if (kinks.some((k) => Math.abs(k) < 1e-3)) continue;
    [x.logp[i], x.old[i], x.ref[i], x.a[i]] = [logp, old, ref, a];
    i++;
  }
  return x;
}

/** ppoLoss in every setting and aggregation mode, valueLoss and klFull. */
export function lossCases(seed: number): Case[] {
  const cases: Case[] = [];
  const lens = [5, 4, 0, 8, 1, 9, 7];
  const t = sumTo(lens, lens.length), cu = cuOf(lens);
  PPO_SETTINGS.forEach((base, si) => {
    for (const aggMode of LOSS_AGG_MODES) {
      const p: PpoLossParams = { ...base, aggMode, normLen: 16 };
      const r = new Rand(`ppo ${si} ${aggMode}`, seed);
      let x = ppoInputs(r, t, p);
      let mask = r.mask(t, 0.75);
      mask.fill(0, cu[1], cu[2]); // a fully masked sequence
      while (p.ratioType === "segment" && segmentNearKink(x, mask, cu, p)) {
        [x, mask] = [ppoInputs(r, t, p), r.mask(t, 0.75)];
        mask.fill(0, cu[1], cu[2]);
      }
      const [entropy, sftMask] = [r.uniforms(t, 0.1, 3), r.mask(t, 0.3)];
      const name = [
        base.dualClip ? "dual" : "",
        base.klCoef ? `kl=${base.klKind}${base.klClamp ? "/clamp" : ""}` : "",
        base.entropyCoef ? "entropy" : "",
        base.sftCoef ? "sft" : "",
        base.ratioType === "segment" ? "segment" : "",
      ].filter((s) => s).join(",");
      cases.push({
        op: `ppoLoss ${name || "plain"} ${aggMode}`,
        tol: TOL_FP32,
        run: (s) => {
          const [dlogp, dentropy] = [s.nan([t]), s.nan([t])];
          const withEnt = (p.entropyCoef ?? 0) !== 0;
          const metrics = ppoLoss(s.k, { dlogp, dentropy: withEnt ? dentropy : null }, {
            logp: s.f32(x.logp),
            oldLogp: s.f32(x.old),
            advantages: s.f32(x.a),
            mask: s.f32(mask),
            cuSeqlens: s.i32(cu),
            refLogp: p.klCoef ? s.f32(x.ref) : null,
            entropy: withEnt ? s.f32(entropy) : null,
            sftMask: p.sftCoef ? s.f32(sftMask) : null,
          }, p);
          const out: Record<string, Output> = { dlogp: dlogp.read(), metrics: { ...metrics } };
          if (withEnt) out.dentropy = dentropy.read();
          return out;
        },
      });
    }
  });
  for (const clip of [0, 0.2]) {
    for (const aggMode of LOSS_AGG_MODES) {
      const r = new Rand(`value loss ${clip} ${aggMode}`, seed);
      const [values, returns, mask] = [r.randn(t), r.randn(t), r.mask(t, 0.75)];
      const old = Float32Array.from(values, (v) => {
        // keep |v - v_old| away from the clip bound (a branch of the loss)
        for (;;) {
          const o = v + r.range(-0.5, 0.5);
          if (Math.abs(Math.abs(v - o) - clip) > 1e-3) return o;
        }
      });
      mask.fill(0, cu[1], cu[2]);
      cases.push({
        op: `valueLoss clip=${clip} ${aggMode}`,
        tol: TOL_FP32,
        run: (s) => {
          const dvalues = s.nan([t]);
          const m = valueLoss(s.k, dvalues, {
            values: s.f32(values),
            oldValues: s.f32(old),
            returns: s.f32(returns),
            mask: s.f32(mask),
            cuSeqlens: s.i32(cu),
          }, { valueClip: clip, aggMode, normLen: 16 });
          return { dvalues: dvalues.read(), metrics: { ...m } };
        },
      });
    }
  }
  {
    const [tk, v] = [9, 3000];
    const r = new Rand("kl full", seed);
    const [logits, ref, dkl] = [r.randn(tk * v, 2), r.randn(tk * v, 2), r.randn(tk)];
    cases.push({
      op: "klFull",
      tol: TOL_FP32,
      run: (s) => {
        const [kl, dlogits] = [s.nan([tk]), s.nan([tk, v])];
        klFull(s.k, kl, s.f32(logits, [tk, v]), s.f32(ref, [tk, v]), { dlogits, dkl: s.f32(dkl) });
        return { kl: kl.read(), dlogits: dlogits.read() };
      },
    });
  }
  return cases;
}
