// When a generation ends: stop tokens (the request's and the engine's EOS),
// stop strings over the decoded text (with the tiny model's real byte-level
// BPE tokenizer), max_new_tokens and maxModelLen. The expected outputs come
// from a run without the stop condition: sampling is a function of (seed,
// position), so the stopped run is a prefix of it.
import assert from "node:assert/strict";
import { Kernels } from "../../ffi/mod.ts";
import { GenerationEngine, type GenerationRequest } from "../../lib/infer/mod.ts";
import { buildTinyModelFiles } from "../../lib/model/make_tiny_tokenizer.ts";
import { Tokenizer } from "../../lib/model/tokenizer.ts";
import { randomModel, smallConfig } from "./_helpers.ts";

/** A fake decode: each id as `<id>`. */
const angle = (ids: number[]) => ids.map((i) => `<${i}>`).join("");

Deno.test("engine: stop tokens end the generation with the token kept; engine EOS and ignore_eos", async () => {
  using k = Kernels.open({ threads: 2 });
  using model = randomModel(k, smallConfig(), "stoptok");
  const base: GenerationRequest = {
    prompt_token_ids: [7, 8, 9],
    max_new_tokens: 30,
    temperature: 1,
    seed: 11,
  };
  let full: number[];
  {
    await using engine = new GenerationEngine(model, { maxRunningRequests: 2, maxModelLen: 64 });
    full = (await engine.generate(base)).token_ids;
  }
  // the first token whose value has not appeared before, at index >= 3
  const at = full.findIndex((t, i) => i >= 3 && !full.slice(0, i).includes(t));
  assert.ok(at >= 3, `no fresh token in ${full}`);
  const stop = full[at]!;

  await using engine = new GenerationEngine(model, {
    maxRunningRequests: 2,
    maxModelLen: 64,
    decode: angle,
    eosTokenIds: [stop],
  });
  const expectTokens = full.slice(0, at + 1);
  const viaEos = await engine.generate(base);
  assert.deepEqual(viaEos.token_ids, expectTokens);
  assert.equal(viaEos.finish_reason, "stop");
  assert.equal(viaEos.stop_reason, stop);
  assert.equal(viaEos.completion_tokens, at + 1);
  assert.equal(viaEos.logprobs.length, at + 1);
  assert.equal(viaEos.text, angle(full.slice(0, at)), "the stop token's text is left out");

  const viaRequest = await engine.generate({ ...base, ignore_eos: true, stop_token_ids: [stop] });
  assert.deepEqual(viaRequest.token_ids, expectTokens);
  assert.equal(viaRequest.stop_reason, stop);

  const kept = await engine.generate({ ...base, include_stop_str_in_output: true });
  assert.equal(kept.text, angle(expectTokens));

  const ignored = await engine.generate({ ...base, ignore_eos: true });
  assert.deepEqual(ignored.token_ids, full);
  assert.equal(ignored.finish_reason, "length");
  assert.equal(ignored.stop_reason, null);
});

Deno.test("engine: stop strings on the decoded text (tiny BPE tokenizer): text cut before the match, tokens end at the token that completed it", async () => {
  const files = await buildTinyModelFiles();
  const tok = Tokenizer.fromJSON({ tokenizerJson: JSON.parse(files["tokenizer.json"]) });
  using k = Kernels.open({ threads: 2 });
  using model = randomModel(k, smallConfig({ vocab_size: tok.vocabSize }), "stopstr");
  const decode = (ids: number[]) => tok.decode(ids);
  await using engine = new GenerationEngine(model, {
    maxRunningRequests: 4,
    maxModelLen: 128,
    decode,
  });
  const base: GenerationRequest = {
    prompt_token_ids: tok.encode("You are playing FrozenLake. Answer:"),
    max_new_tokens: 40,
    temperature: 1,
    seed: 3,
  };
  const full = await engine.generate(base);
  assert.equal(full.text, tok.decode(full.token_ids));
  const text = full.text;

  // stop strings taken from the text: whole tokens, and spans across token boundaries
  const candidates: string[] = [];
  for (const [a, len] of [[12, 5], [20, 7], [33, 4], [45, 9]] as const) {
    const s = text.slice(a, a + len);
    if (s.length === len && !s.includes("\uFFFD")) candidates.push(s);
  }
  assert.ok(candidates.length >= 3, `too few stop strings from ${JSON.stringify(text)}`);
  for (const stop of candidates) {
    const index = text.indexOf(stop);
    // the reference: the fewest tokens whose text holds the stop string
    let through = 1;
    while (!decode(full.token_ids.slice(0, through)).includes(stop)) through++;
    const requests = [
      { ...base, stop_strings: [stop] },
      { ...base, stop_strings: [stop], include_stop_str_in_output: true },
      { ...base, stop_strings: ["never in this text \u2603", stop] },
    ];
    const [cut, kept, two] = await Promise.all(requests.map((r) => engine.generate(r)));
    for (const r of [cut!, kept!, two!]) {
      assert.equal(r.finish_reason, "stop", JSON.stringify(stop));
      assert.equal(r.stop_reason, stop);
      assert.deepEqual(r.token_ids, full.token_ids.slice(0, through), JSON.stringify(stop));
      // equal up to float rounding: a prompt prefilled alone and three prefilled
      // together go through different matmul paths (dot products vs packed GEMM)
      const ref = full.logprobs.slice(0, through);
      assert.equal(r.logprobs.length, ref.length);
      r.logprobs.forEach((lp, i) => assert.ok(Math.abs(lp - ref[i]!) < 1e-4, `logprob ${i}`));
      assert.equal(r.completion_tokens, through);
    }
    assert.equal(cut!.text, text.slice(0, index));
    assert.equal(two!.text, text.slice(0, index));
    assert.equal(kept!.text, text.slice(0, index + stop.length));
  }
  // the earliest of several matches wins
  const [early, late] = [candidates[0]!, candidates[candidates.length - 1]!];
  const r = await engine.generate({ ...base, stop_strings: [late, early] });
  assert.equal(r.stop_reason, early);
  assert.equal(r.text, text.slice(0, text.indexOf(early)));
});

Deno.test("engine: max_new_tokens and maxModelLen: exact lengths, the default fills the context, requests that cannot fit are rejected", async () => {
  using k = Kernels.open({ threads: 2 });
  using model = randomModel(k, smallConfig(), "limits");
  await using engine = new GenerationEngine(model, { maxRunningRequests: 2, maxModelLen: 16 });
  const prompt = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  for (const n of [1, 2, 6]) {
    const r = await engine.generate({ prompt_token_ids: prompt, max_new_tokens: n });
    assert.equal(r.completion_tokens, n);
    assert.equal(r.token_ids.length, n);
    assert.equal(r.finish_reason, "length");
  }
  const filled = await engine.generate({ prompt_token_ids: prompt });
  assert.equal(filled.completion_tokens, 16 - prompt.length);
  assert.equal(filled.finish_reason, "length");
  const one = await engine.generate({ prompt_token_ids: prompt.concat([1, 2, 3, 4, 5]) });
  assert.equal(one.completion_tokens, 1);

  await assert.rejects(
    engine.generate({ prompt_token_ids: prompt, max_new_tokens: 7 }),
    (e: Error) =>
      e instanceof RangeError && /maxModelLen 16/.test(e.message) &&
      /max_new_tokens <= 6/.test(e.message),
  );
  await assert.rejects(
    engine.generate({ prompt_token_ids: new Array(16).fill(1) }),
    /the prompt has 16 tokens, which leaves no room to generate within maxModelLen 16/,
  );
  // the engine is still serving
  assert.equal(
    (await engine.generate({ prompt_token_ids: [3], max_new_tokens: 2 })).completion_tokens,
    2,
  );
});
