// Per-step wall time of forwardCached (the ids upload syncs; launches) and sample (waits for the
// GPU, reads tokens back), batch-1 greedy decode of the bench model.
import { Kernels, sample } from "../../../../ffi/mod.ts";
import { Qwen2Model } from "../../../../lib/model/qwen2.ts";
import { benchShape } from "../../../gpu/bench.ts";
using k = Kernels.open({ device: "cuda" });
const shape = benchShape(false);
using model = new Qwen2Model(k, shape.config, { init: "none" });
k.check(
  "arl_fill_f32",
  k.sym.arl_fill_f32(k.ctx, model.params.ptr, 0.01, BigInt(model.params.size)),
);
model.markParamsChanged();
const prompt = 128, steps = 64;
for (let rep = 0; rep < 3; rep++) {
  using cache = model.createKvCache(1, prompt + steps + 1);
  const tokens = Int32Array.from({ length: prompt }, (_, i) => (i * 7919) % 1000);
  const positions = Int32Array.from({ length: prompt }, (_, i) => i);
  const slots = new Int32Array(prompt);
  const greedy = [{ temperature: 0, seed: 0, counter: 0 }];
  let next = sample(
    k,
    model.forwardCached(cache, tokens, positions, slots, Int32Array.of(prompt - 1))!,
    greedy,
  ).tokens;
  let fwd = 0, smp = 0;
  const t0 = performance.now();
  for (let step = 0; step < steps; step++) {
    const a = performance.now();
    const logits = model.forwardCached(
      cache,
      next,
      Int32Array.of(prompt + step),
      Int32Array.of(0),
      Int32Array.of(0),
    )!;
    const b = performance.now();
    next = sample(k, logits, greedy).tokens;
    const c = performance.now();
    fwd += b - a;
    smp += c - b;
  }
  const total = performance.now() - t0;
  console.log(
    `rep ${rep}: ${(1000 * total / steps).toFixed(1)} us a token: forwardCached ${
      (1000 * fwd / steps).toFixed(1)
    }, sample ${(1000 * smp / steps).toFixed(1)}, other ${
      (1000 * (total - fwd - smp) / steps).toFixed(1)
    }`,
  );
}
