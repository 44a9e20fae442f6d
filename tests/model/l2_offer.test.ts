// AGENTRL_L2_OFFER: which weights a model offers the L2 cache, in order, and its errors.
import assert from "node:assert/strict";
import { Kernels } from "../../ffi/mod.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import { l2OfferRegions, parseL2Offer } from "../../lib/model/_l2_offer.ts";
import { Bf16Weights } from "../../lib/model/_mixed_precision.ts";
import { tinyConfig } from "./_qwen2_reference.ts";

Deno.test("parseL2Offer: the head by default; parts in order; unknown, repeated and overlapping parts refused", () => {
  assert.deepEqual(parseL2Offer(undefined), ["head"]);
  assert.deepEqual(parseL2Offer(" "), ["head"]);
  assert.deepEqual(parseL2Offer("qkv, head"), ["qkv", "head"]);
  assert.deepEqual(parseL2Offer("attn"), ["attn"]);
  assert.throws(
    () => parseL2Offer("head,mlp"),
    /AGENTRL_L2_OFFER=head,mlp: 'mlp' is not a part; expected a comma-separated list of head, qkv, attn/,
  );
  assert.throws(() => parseL2Offer("head,head"), /a part is named twice/);
  assert.throws(() => parseL2Offer("qkv,attn"), /qkv and attn overlap/);
});

Deno.test("l2OfferRegions: the head, each layer's q|k|v or q|k|v and o spans, in the offer's order", () => {
  using k = Kernels.open({ threads: 1 });
  const cfg = tinyConfig(); // q|k|v 64 x 32, o 32 x 32, head 48 x 32
  using model = new Qwen2Model(k, cfg, { seed: 1 });
  using low = new Bf16Weights(k, cfg, (n) => model.param(n), true);
  const head = low.head;
  const bytes = (parts: Parameters<typeof parseL2Offer>[0]) =>
    l2OfferRegions(parseL2Offer(parts), head, low.layers).map((t) => t.byteSize);
  assert.deepEqual(bytes("head"), [48 * 32 * 2]);
  assert.deepEqual(bytes("qkv,head"), [4096, 4096, 3072]);
  assert.deepEqual(bytes("attn"), [4096 + 2048, 4096 + 2048]);
  // the span starts at q|k|v and ends with o
  const [span, layer] = [low.layers[0]!.attn, low.layers[0]!];
  const at = (t: { ptr: Deno.PointerObject }) => Number(Deno.UnsafePointer.value(t.ptr));
  assert.equal(at(span), at(layer.qkv));
  assert.equal(at(span) + span.byteSize, at(layer.wo) + layer.wo.byteSize);
  // without bf16 weights the layers' parts add nothing
  assert.deepEqual(l2OfferRegions(["qkv", "head"], head, null), [head]);
});
