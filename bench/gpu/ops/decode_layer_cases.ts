/**
 * A whole decoder layer for one token (the CUDA library's decode chain), and several.
 *
 * @module
 */
import { decodeLayer, decodeLayers } from "../../../ffi/mod.ts";
import { bf16Bits, type Case, decodeStep, once, Rand, TOL_FP32 } from "./harness.ts";

/** decodeLayer (one layer, one token) and decodeLayers (several layers in one call). */
export function decodeLayerCases(seed: number): Case[] {
  const cases: Case[] = [];
  // A whole decoder layer for one token: the chained kernels of decode_chain.cu for head dims 64
  // and 128 (the cache's last position, a split boundary and the first token); head dim 32 takes
  // the separate calls.
  for (
    const [c, f, hq, hkv, hd, pos, bias] of [
      [96, 160, 4, 2, 64, 37, true],
      [96, 160, 4, 2, 64, 79, true],
      [96, 160, 4, 2, 64, 0, false],
      [64, 96, 2, 1, 128, 50, false],
      [64, 96, 4, 2, 32, 20, true],
      // Qwen2.5-0.5B's attention (its MLP half as wide, which keeps the emulated run short) at a
      // long context: a full grid of 132 blocks, GEMV rows split across warps
      [896, 2432, 14, 2, 64, 1000, true],
      // Qwen2.5-1.5B's attention (a narrow MLP): kernel 1 the fused GEMV (C > 1024), 12 key
      // splits of head dim 128, 12 rows a block of kernel 4 (two groups of its rows)
      [1536, 1024, 12, 2, 128, 90, true],
      // the same with an MLP wide enough that a block an SM cannot hold kernel 3's gate and up
      // rows: 264 blocks of 20 columns (two waves on an H100; the separate calls with
      // AGENTRL_CUDA_DECODE_MLP_PER_SM=1)
      [1536, 4864, 12, 2, 128, 90, true],
      // twice as wide (Llama-3.2-1B's MLP at this width): three blocks an SM for kernel 3's rows
      // and two for kernel 4's, so the separate calls by default and the chain in waves with
      // AGENTRL_CUDA_DECODE_MLP_PER_SM=3 or 4
      [1536, 9728, 12, 2, 128, 90, true],
    ] as const
  ) {
    const [S, L, slot] = pos >= 80 ? [2, 1100, 1] : [3, 80, 1];
    const nq = (hq + 2 * hkv) * hd;
    const inputs = once(() => {
      const q = new Rand(`decode layer ${c} ${hd} ${pos}`, seed);
      const x0 = q.randn(c, 1);
      const [ln1, ln2] = [q.uniforms(c, 0.5, 1.5), q.uniforms(c, 0.5, 1.5)];
      const [wqkv, bqkv] = [bf16Bits(q.randn(nq * c, 0.1)), q.randn(nq, 0.1)];
      const wo = bf16Bits(q.randn(c * hq * hd, 0.1));
      const [wgu, wd] = [bf16Bits(q.randn(2 * f * c, 0.1)), bf16Bits(q.randn(c * f, 0.1))];
      const [kc0, vc0] = [q.randn(S * hkv * L * hd), q.randn(S * hkv * L * hd)];
      return { x0, ln1, ln2, wqkv, bqkv, wo, wgu, wd, kc0, vc0 };
    });
    cases.push({
      op: `decodeLayer c=${c} f=${f} ${hq}:${hkv} heads d=${hd} position ${pos}${
        bias ? "" : " no bias"
      }`,
      tol: TOL_FP32,
      run: (s) => {
        const { x0, ln1, ln2, wqkv, bqkv, wo, wgu, wd, kc0, vc0 } = inputs();
        const x = s.f32(x0);
        const rows = { qkv: s.nan([nq]), attn: s.nan([hq * hd]), act: s.nan([f]) };
        const cache = [S, hkv, L, hd];
        const [kCache, vCache] = [s.f32(kc0, cache), s.f32(vc0, cache)];
        const w = {
          ln1: s.f32(ln1),
          qkv: s.bf16(wqkv, [nq, c]),
          bqkv: bias ? s.f32(bqkv) : null,
          o: s.bf16(wo, [c, hq * hd]),
          ln2: s.f32(ln2),
          gateUp: s.bf16(wgu, [2 * f, c]),
          down: s.bf16(wd, [c, f]),
        };
        decodeLayer(s.k, x, w, { kCache, vCache, ...decodeStep(s, slot, pos, hq, hd) }, rows);
        return {
          x: x.read(),
          qkv: rows.qkv.read(),
          attn: rows.attn.read(),
          act: rows.act.read(),
          kCache: kCache.read(),
          vCache: vCache.read(),
        };
      },
    });
  }
  // The same with Qwen3's q/k norms and a scaled RoPE's table (arl_decode_layer_norms_bf16: on
  // the GPU the chain with a plain q|k|v GEMV and the norm-and-RoPE kernel), head dims 64 and 128
  for (
    const [c, f, hq, hkv, hd, pos, norms, table] of [
      [96, 160, 4, 2, 64, 37, true, false],
      [64, 96, 2, 1, 128, 50, true, true],
      [96, 160, 4, 2, 64, 79, false, true],
      // Qwen3-0.6B's attention (a narrow MLP) at a long context
      [1024, 1024, 16, 8, 128, 1000, true, false],
    ] as const
  ) {
    const [S, L, slot] = pos >= 80 ? [2, 1100, 1] : [3, 80, 2];
    const nq = (hq + 2 * hkv) * hd;
    const inputs = once(() => {
      const q = new Rand(`decode layer norms ${c} ${hd} ${pos}`, seed);
      const x0 = q.randn(c, 1);
      const [ln1, ln2] = [q.uniforms(c, 0.5, 1.5), q.uniforms(c, 0.5, 1.5)];
      const [qn, kn] = [q.uniforms(hd, 0.5, 1.5), q.uniforms(hd, 0.5, 1.5)];
      const freqs = Float32Array.from({ length: hd / 2 }, (_, j) => {
        const fr = Math.pow(5e5, -2 * j / hd);
        return 2 * Math.PI / fr > 256 ? fr / 8 : fr;
      });
      const wqkv = bf16Bits(q.randn(nq * c, 0.1));
      const wo = bf16Bits(q.randn(c * hq * hd, 0.1));
      const [wgu, wd] = [bf16Bits(q.randn(2 * f * c, 0.1)), bf16Bits(q.randn(c * f, 0.1))];
      const [kc0, vc0] = [q.randn(S * hkv * L * hd), q.randn(S * hkv * L * hd)];
      return { x0, ln1, ln2, qn, kn, freqs, wqkv, wo, wgu, wd, kc0, vc0 };
    });
    cases.push({
      op: `decodeLayer c=${c} f=${f} ${hq}:${hkv} heads d=${hd} position ${pos}, ${
        [norms && "q/k norms", table && "a RoPE table"].filter(Boolean).join(" and ")
      }`,
      tol: TOL_FP32,
      needs: "arl_decode_layer_norms_bf16",
      run: (s) => {
        const { x0, ln1, ln2, qn, kn, freqs, wqkv, wo, wgu, wd, kc0, vc0 } = inputs();
        const x = s.f32(x0);
        const rows = { qkv: s.nan([nq]), attn: s.nan([hq * hd]), act: s.nan([f]) };
        const cache = [S, hkv, L, hd];
        const [kCache, vCache] = [s.f32(kc0, cache), s.f32(vc0, cache)];
        const w = {
          ln1: s.f32(ln1),
          qkv: s.bf16(wqkv, [nq, c]),
          bqkv: null,
          o: s.bf16(wo, [c, hq * hd]),
          ln2: s.f32(ln2),
          gateUp: s.bf16(wgu, [2 * f, c]),
          down: s.bf16(wd, [c, f]),
          qNorm: norms ? s.f32(qn) : null,
          kNorm: norms ? s.f32(kn) : null,
        };
        // (eps 0.3 for the last case: the norms' eps must count)
        const step = {
          kCache,
          vCache,
          ...decodeStep(s, slot, pos, hq, hd),
          ...(c === 1024 ? { eps: 0.3 } : {}),
          invFreq: table ? s.f32(freqs) : null,
        };
        decodeLayer(s.k, x, w, step, rows);
        return {
          x: x.read(),
          qkv: rows.qkv.read(),
          attn: rows.attn.read(),
          act: rows.act.read(),
          kCache: kCache.read(),
          vCache: vCache.read(),
        };
      },
    });
  }
  // Several layers for one token in one call: with AGENTRL_CUDA_DECODE_TOKEN=1 one persistent
  // kernel on the GPU (its ring of weight slots runs across the layers; small shapes leave most
  // blocks without units), else the decode layer once a layer.
  for (
    const [c, f, hq, hkv, hd, pos, layers] of [
      [96, 160, 4, 2, 64, 37, 3],
      [64, 96, 2, 1, 128, 0, 2],
      // Qwen2.5-0.5B's attention and a narrow MLP at a long context: every block has units
      [896, 608, 14, 2, 64, 1000, 1],
      // rows of 1088 columns (down: two column parts a row), head dim 128; on few SMs
      // (AGENTRL_CUDA_EMU_SMS=8 in emu.test.ts) several waves a step, rotations and x rows that
      // do not fit the block's tables
      [1152, 1088, 9, 3, 128, 90, 2],
      // more layers than one launch takes (48)
      [64, 96, 2, 1, 64, 5, 50],
    ] as const
  ) {
    const [S, L, slot] = pos >= 80 ? [2, 1100, 1] : [3, 80, 2];
    const nq = (hq + 2 * hkv) * hd;
    const inputs = once(() => {
      const q = new Rand(`decode layers ${c} ${hd} ${pos}`, seed);
      const x0 = q.randn(c, 1);
      const per = Array.from({ length: layers }, () => ({
        ln1: q.uniforms(c, 0.5, 1.5),
        ln2: q.uniforms(c, 0.5, 1.5),
        wqkv: bf16Bits(q.randn(nq * c, 0.1)),
        bqkv: q.randn(nq, 0.1),
        wo: bf16Bits(q.randn(c * hq * hd, 0.1)),
        wgu: bf16Bits(q.randn(2 * f * c, 0.1)),
        wd: bf16Bits(q.randn(c * f, 0.1)),
        kc0: q.randn(S * hkv * L * hd),
        vc0: q.randn(S * hkv * L * hd),
      }));
      return { x0, per };
    });
    // (the wide and the 50-layer cases are slow in the emulator at 132 SMs: emu.test.ts runs them
    // with 8, their names marked "many units")
    const heavy = c > 1000 || layers > 48 ? " (many units)" : "";
    cases.push({
      op:
        `decodeLayers ${layers} layers c=${c} f=${f} ${hq}:${hkv} heads d=${hd} position ${pos}${heavy}`,
      tol: TOL_FP32,
      run: (s) => {
        const { x0, per } = inputs();
        const x = s.f32(x0);
        const rows = { qkv: s.nan([nq]), attn: s.nan([hq * hd]), act: s.nan([f]) };
        const cache = [S, hkv, L, hd];
        const entries = per.map((p, i) => ({
          ln1: s.f32(p.ln1),
          qkv: s.bf16(p.wqkv, [nq, c]),
          bqkv: i === 1 ? null : s.f32(p.bqkv),
          o: s.bf16(p.wo, [c, hq * hd]),
          ln2: s.f32(p.ln2),
          gateUp: s.bf16(p.wgu, [2 * f, c]),
          down: s.bf16(p.wd, [c, f]),
          kCache: s.f32(p.kc0, cache),
          vCache: s.f32(p.vc0, cache),
        }));
        decodeLayers(s.k, x, entries, decodeStep(s, slot, pos, hq, hd), rows);
        const out: Record<string, Float32Array> = {
          x: x.read(),
          qkv: rows.qkv.read(),
          attn: rows.attn.read(),
          act: rows.act.read(),
        };
        entries.forEach((e, i) => {
          out[`kCache ${i}`] = e.kCache.read();
          out[`vCache ${i}`] = e.vCache.read();
        });
        return out;
      },
    });
  }
  return cases;
}
