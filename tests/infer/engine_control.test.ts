// Controlling the engine: abort (by id and by signal, waiting or running),
// close, bad requests and options rejected with errors that name the value,
// and updateWeights (model_update) from a model or named weights.
import assert from "node:assert/strict";
import { setImmediate } from "node:timers";
import { KernelError, Kernels } from "../../ffi/mod.ts";
import {
  formatBytes,
  GenerationEngine,
  type GenerationRequest,
  kvCacheBytes,
  KvCacheSizeError,
  type StepInfo,
} from "../../lib/infer/mod.ts";
import { RolloutConfigError, withKvCacheHint } from "../../lib/rollout/errors.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import { randomModel, referenceGreedy, smallConfig } from "./_helpers.ts";

async function untilSteps(engine: GenerationEngine, n: number): Promise<void> {
  while (engine.stats.steps < n) await new Promise((r) => setImmediate(r));
}

Deno.test("engine: abort a running and a waiting request (by id and by signal); the freed slot serves the next request", async () => {
  using k = Kernels.open({ threads: 2 });
  using model = randomModel(k, smallConfig(), "abort");
  const steps: StepInfo[] = [];
  await using engine = new GenerationEngine(model, {
    maxRunningRequests: 1,
    maxModelLen: 256,
    onStep: (s) => steps.push(s),
  });
  const long = (id: string): GenerationRequest => ({
    request_id: id,
    prompt_token_ids: [1, 2, 3],
    max_new_tokens: 200,
  });
  const a = engine.generate(long("a"));
  const b = engine.generate(long("b"));
  await untilSteps(engine, 5);
  assert.equal(engine.numRunning, 1);
  assert.equal(engine.numWaiting, 1);
  assert.equal(engine.abort("b"), true);
  const rb = await b;
  assert.equal(rb.finish_reason, "abort");
  assert.deepEqual(rb.token_ids, []);
  assert.equal(rb.prompt_tokens, 3);
  assert.equal(engine.abort("a"), true);
  const ra = await a;
  assert.equal(ra.finish_reason, "abort");
  assert.ok(ra.completion_tokens >= 5 && ra.completion_tokens < 200, `${ra.completion_tokens}`);
  assert.equal(ra.logprobs.length, ra.completion_tokens);
  assert.equal(engine.abort("a"), false);
  assert.equal(engine.abort("nobody"), false);

  // by signal, while running
  const controller = new AbortController();
  const c = engine.generate(long("c"), { signal: controller.signal });
  const at = engine.stats.steps;
  await untilSteps(engine, at + 3);
  controller.abort();
  const rc = await c;
  assert.equal(rc.finish_reason, "abort");
  assert.ok(rc.completion_tokens >= 3);
  // an already aborted signal
  const rd = await engine.generate(long("d"), { signal: AbortSignal.abort() });
  assert.equal(rd.finish_reason, "abort");
  assert.equal(rd.completion_tokens, 0);
  // the single slot still serves
  const re = await engine.generate({ ...long("e"), max_new_tokens: 4 });
  assert.equal(re.completion_tokens, 4);
  assert.equal(engine.stats.finished.abort, 4);
  // every admission took slot 0 and abort freed it
  assert.ok(steps.flatMap((s) => s.admitted).every((x) => x.slot === 0));
  // the running ones aborted between steps are reported by a later step's `finished`
  const finished = steps.flatMap((s) => s.finished);
  for (const id of ["a", "c"]) {
    assert.deepEqual(
      finished.filter((f) => f.request_id === id).map((f) => f.finish_reason),
      ["abort"],
      id,
    );
  }
  assert.deepEqual(
    finished.filter((f) => f.request_id === "e").map((f) => f.finish_reason),
    ["length"],
  );
});

Deno.test("engine: close aborts what is in flight, frees the cache and refuses new requests", async () => {
  using k = Kernels.open({ threads: 2 });
  using model = randomModel(k, smallConfig(), "close");
  const engine = new GenerationEngine(model, { maxRunningRequests: 1, maxModelLen: 256 });
  assert.ok(engine.cacheBytes > 0);
  const running = engine.generate({ prompt_token_ids: [5], max_new_tokens: 200 });
  const waiting = engine.generate({ prompt_token_ids: [6], max_new_tokens: 200 });
  await untilSteps(engine, 2);
  await engine.close();
  assert.equal((await running).finish_reason, "abort");
  assert.equal((await waiting).finish_reason, "abort");
  assert.equal(engine.closed, true);
  assert.equal(engine.cacheBytes, 0);
  await assert.rejects(engine.generate({ prompt_token_ids: [1] }), /engine is closed/);
  await assert.rejects(engine.updateWeights(model), /engine is closed/);
  await engine.close(); // idempotent
});

Deno.test("engine: bad requests and options are rejected with errors naming the value", async () => {
  using k = Kernels.open({ threads: 2 });
  using model = randomModel(k, smallConfig(), "bad");
  await using engine = new GenerationEngine(model, { maxRunningRequests: 2, maxModelLen: 32 });
  const ok: GenerationRequest = { prompt_token_ids: [1, 2], max_new_tokens: 3 };
  const cases: [Partial<GenerationRequest> | null, RegExp][] = [
    [{ prompt_token_ids: [] }, /prompt_token_ids must hold at least one token, got none/],
    [{ prompt_token_ids: [1, 64] }, /prompt_token_ids\[1\] must be a token id.*0\.\.63.*got 64/],
    [{ prompt_token_ids: [-1] }, /prompt_token_ids\[0\].*got -1/],
    [{ prompt_token_ids: [1.5] }, /prompt_token_ids\[0\].*got 1\.5/],
    [{ prompt_token_ids: "12" as unknown as number[] }, /prompt_token_ids must be an array/],
    [{ max_new_tokens: -1 }, /max_new_tokens must be a positive integer, got -1/],
    [{ max_new_tokens: 0 }, /max_new_tokens must be a positive integer, got 0/],
    [{ max_new_tokens: 2.5 }, /max_new_tokens must be a positive integer, got 2\.5/],
    [
      { temperature: -0.5 },
      /temperature must be a number in \[0, 3\.4e38\] \(0 is greedy.*got -0\.5/,
    ],
    [{ temperature: NaN }, /temperature must be .*, got NaN/],
    [{ temperature: 1e300 }, /temperature must be .*float32.*, got 1e\+300/],
    [{ top_p: 0 }, /top_p must be a number in \(0, 1\]/],
    [{ top_p: 1.5 }, /top_p must be a number in \(0, 1\].*got 1\.5/],
    [{ top_k: 2.5 }, /top_k must be an integer >= -1/],
    [{ seed: 0.5 }, /seed must be an integer/],
    [{ stop_token_ids: [3, 99] }, /stop_token_ids\[1\] must be a token id.*got 99/],
    [{ stop_strings: ["x"] }, /stop_strings need a decode function/],
    [{ do_sample: "yes" as unknown as boolean }, /do_sample must be a boolean, got "yes"/],
    [{ request_id: "" }, /request_id must be a non-empty string/],
    [null, /A generation request must be an object, got null/],
  ];
  for (const [patch, message] of cases) {
    const request = (patch === null ? null : { ...ok, ...patch }) as GenerationRequest;
    await assert.rejects(engine.generate(request), message, JSON.stringify(patch));
  }
  // a duplicate id while the first is in flight
  const first = engine.generate({ ...ok, request_id: "dup", max_new_tokens: 20 });
  await assert.rejects(
    engine.generate({ ...ok, request_id: "dup" }),
    /request_id "dup" is already in flight/,
  );
  assert.equal((await first).completion_tokens, 20);
  assert.equal((await engine.generate({ ...ok, request_id: "dup" })).completion_tokens, 3);
  // do_sample false is greedy
  const greedy = await engine.generate({ ...ok, max_new_tokens: 6, do_sample: false, seed: 1 });
  assert.deepEqual(greedy.token_ids, referenceGreedy(model, [1, 2], 6));

  // options
  const opts = { maxRunningRequests: 2, maxModelLen: 32 };
  assert.throws(
    () => new GenerationEngine(model, { ...opts, maxRunningRequests: 0 }),
    /maxRunningRequests must be a positive integer, got 0/,
  );
  assert.throws(
    () => new GenerationEngine(model, { ...opts, maxModelLen: 1000 }),
    /maxModelLen 1000 exceeds the model's max_position_embeddings 256/,
  );
  // YaRN's context is factor x original_max_position_embeddings where that is longer
  {
    const yarn = { rope_type: "yarn", factor: 4, original_max_position_embeddings: 128 } as const;
    using scaled = new Qwen2Model(k, smallConfig({ rope_scaling: yarn }));
    assert.equal(new GenerationEngine(scaled, { ...opts, maxModelLen: 512 }).maxModelLen, 512);
    assert.throws(
      () => new GenerationEngine(scaled, { ...opts, maxModelLen: 513 }),
      /maxModelLen 513 exceeds the model's context \(YaRN's factor x original_max_position_embeddings\) 512: expected at most 512/,
    );
  }
  assert.throws(
    () => new GenerationEngine(model, { ...opts, eosTokenIds: [64] }),
    /eosTokenIds\[0\] must be a token id in 0\.\.63, got 64/,
  );
  assert.throws(
    () => new GenerationEngine(model, { ...opts, batching: "dynamic" as "static" }),
    /batching must be "continuous" or "static", got dynamic/,
  );
  assert.throws(
    () => new GenerationEngine(model, { maxRunningRequests: 2 ** 31 - 1, maxModelLen: 64 }),
    /The KV cache of maxRunningRequests 2147483647 x maxModelLen 64 \([\d.]+ GiB of f32 keys and values\) cannot be allocated on the cpu: /,
  );
  // the device out of memory (ARL_ERR_ALLOC) reads the same, with the size it asked for
  const createKvCache = model.createKvCache;
  model.createKvCache = () => {
    throw new KernelError("arl_alloc", 4, "arl_alloc: out of memory allocating 3 bytes");
  };
  try {
    assert.throws(
      () => new GenerationEngine(model, { maxRunningRequests: 3, maxModelLen: 32 }),
      (e: Error) => {
        assert.ok(e instanceof KvCacheSizeError);
        const bytes = kvCacheBytes(model.config, 3, 32);
        assert.equal(e.bytes, bytes);
        assert.match(
          e.message,
          new RegExp(
            `^The KV cache of maxRunningRequests 3 x maxModelLen 32 \\(${
              formatBytes(bytes).replace(".", "\\.")
            } of f32 keys and values\\) cannot be allocated on the cpu: arl_alloc failed \\(status 4\\)`,
          ),
        );
        return true;
      },
    );
    // other kernel errors pass through as they are
    model.createKvCache = () => {
      throw new KernelError("arl_alloc", 6, "a bug");
    };
    assert.throws(
      () => new GenerationEngine(model, opts),
      /^KernelError: arl_alloc failed \(status 6\)/,
    );
  } finally {
    model.createKvCache = createKvCache;
  }
});

Deno.test("withKvCacheHint: a KV cache too large becomes a config error with the keys to lower; other errors pass", () => {
  const tooLarge = new KvCacheSizeError(128, 8192, 2 ** 35, "cuda", new Error("no memory"));
  assert.throws(
    () =>
      withKvCacheHint(() => {
        throw tooLarge;
      }, "Lower sequence_length"),
    (e: Error) =>
      e instanceof RolloutConfigError && e.cause === tooLarge &&
      e.message === "The KV cache of maxRunningRequests 128 x maxModelLen 8192 (32.0 GiB of f32 " +
          "keys and values) cannot be allocated on the cuda: no memory. Lower sequence_length",
  );
  const other = new TypeError("other");
  assert.throws(() =>
    withKvCacheHint(() => {
      throw other;
    }, "x"), (e) => e === other);
  assert.equal(withKvCacheHint(() => 7, "x"), 7);
});

Deno.test("engine: updateWeights swaps in new weights: greedy output then equals a fresh engine on the new weights", async () => {
  using k = Kernels.open({ threads: 2 });
  const cfg = smallConfig();
  using served = randomModel(k, cfg, "served");
  using trained = randomModel(k, cfg, "trained");
  using other = randomModel(k, cfg, "other");
  const request: GenerationRequest = {
    prompt_token_ids: [4, 9, 16, 25],
    max_new_tokens: 16,
    temperature: 0,
  };
  const opts = { maxRunningRequests: 2, maxModelLen: 64 };
  await using engine = new GenerationEngine(served, opts);
  const before = await engine.generate(request);
  assert.equal(before.weight_versions[0], 0);

  // from a model: a flat copy
  assert.equal(await engine.updateWeights(trained), 1);
  assert.equal(engine.weightVersion, 1);
  const after = await engine.generate(request);
  let fresh;
  {
    await using engine2 = new GenerationEngine(trained, opts);
    fresh = await engine2.generate(request);
  }
  assert.deepEqual(after.token_ids, fresh.token_ids);
  assert.deepEqual(after.logprobs, fresh.logprobs);
  assert.notDeepEqual(after.token_ids, before.token_ids);
  assert.deepEqual(after.weight_versions, [1, 1]);

  // from named weights (records, then a map)
  await engine.updateWeights(other.exportNamed());
  assert.deepEqual(
    (await engine.generate(request)).token_ids,
    referenceGreedy(other, [4, 9, 16, 25], 16),
  );
  await engine.updateWeights(new Map(trained.exportNamed().map((p) => [p.name, p.data])));
  assert.deepEqual((await engine.generate(request)).token_ids, fresh.token_ids);

  // a running request continues with the new weights
  const long = engine.generate({ ...request, max_new_tokens: 40 });
  await untilSteps(engine, engine.stats.steps + 5);
  const v = await engine.updateWeights(other);
  const r = await long;
  assert.deepEqual(r.weight_versions, [v - 1, v]);
  assert.equal(r.completion_tokens, 40);

  // bad sources
  const named = trained.exportNamed();
  await assert.rejects(
    engine.updateWeights([...named, { name: "lm_head.weight", data: new Float32Array(1) }]),
    /Unknown weight 'lm_head.weight'/,
  );
  await assert.rejects(
    engine.updateWeights(named.slice(1)),
    /No data for parameters: model.embed_tokens.weight/,
  );
  await assert.rejects(
    engine.updateWeights([{ name: named[0]!.name, data: new Float32Array(3) }], { strict: false }),
    /needs 2048 float32 values, got 3/,
  );
  await assert.rejects(
    engine.updateWeights([{ name: named[0]!.name, data: named[0]!.data, shape: [32, 64] }], {
      strict: false,
    }),
    /has shape \[32, 64\]: expected \[64, 32\]/,
  );
  using wider = new Qwen2Model(k, smallConfig({ hidden_size: 48 }));
  await assert.rejects(engine.updateWeights(wider), /needs \d+ float32 values/);
  await assert.rejects(engine.updateWeights(42 as unknown as Qwen2Model), /needs a Qwen2Model/);
  // a request aborted while waiting reports the version at its abort, as documented
  {
    // (two slots: two run, the third waits)
    const running = ["busy1", "busy2"].map((id) =>
      engine.generate({ ...request, request_id: id, max_new_tokens: 30 })
    );
    const queued = engine.generate({ ...request, request_id: "queued" });
    await untilSteps(engine, engine.stats.steps + 2);
    const v = await engine.updateWeights(trained);
    assert.equal(engine.numWaiting, 1);
    engine.abort("queued");
    const q = await queued;
    assert.deepEqual([q.finish_reason, q.completion_tokens, q.weight_versions], ["abort", 0, [
      v,
      v,
    ]]);
    await Promise.all(running);
  }
  // a rejected update writes nothing, even when the bad weight comes after good ones
  const kept = engine.model.params.toArray();
  const versionBefore = engine.weightVersion;
  const others = other.exportNamed();
  await assert.rejects(engine.updateWeights(others.slice(0, -1)), /No data for parameters/);
  const shortLast = others.map((p, i) =>
    i === others.length - 1 ? { name: p.name, data: new Float32Array(1) } : p
  );
  await assert.rejects(engine.updateWeights(shortLast), /needs \d+ float32 values, got 1/);
  assert.deepEqual(engine.model.params.toArray(), kept);
  assert.equal(engine.weightVersion, versionBefore);
  // a partial update keeps the rest
  const v2 = await engine.updateWeights([named[0]!], { strict: false });
  assert.equal(v2, engine.weightVersion);
});

Deno.test("engine: a failing step rejects its requests and the engine goes on; a throwing onStep stops the engine", async () => {
  using k = Kernels.open({ threads: 2 });
  {
    const model = randomModel(k, smallConfig(), "fail");
    await using engine = new GenerationEngine(model, { maxRunningRequests: 2, maxModelLen: 32 });
    assert.equal(
      (await engine.generate({ prompt_token_ids: [1], max_new_tokens: 2 })).completion_tokens,
      2,
    );
    model.dispose();
    await assert.rejects(
      engine.generate({ prompt_token_ids: [1], max_new_tokens: 2 }),
      /This Qwen2Model was disposed/,
    );
    await assert.rejects(
      engine.generate({ prompt_token_ids: [2], max_new_tokens: 2 }),
      /This Qwen2Model was disposed/,
    );
  }
  using model = randomModel(k, smallConfig(), "fail2");
  let inside: Promise<unknown> | null = null;
  let fromHook: Promise<number> | null = null;
  const engine = new GenerationEngine(model, {
    maxRunningRequests: 2,
    maxModelLen: 32,
    decode: (ids) => {
      inside ??= engine.updateWeights(model).catch((e) => e);
      return ids.join(" ");
    },
    onStep: (s) => {
      fromHook ??= engine.updateWeights(model); // after the step's work: allowed
      if (s.step === 2) throw new Error("hook failed");
    },
  });
  const pending = [5, 6].map((t) =>
    engine.generate({ prompt_token_ids: [t], max_new_tokens: 9, stop_strings: ["x"] })
  );
  for (const p of pending) {
    await assert.rejects(p, /The generation engine stopped after an error in a step: hook failed/);
  }
  assert.match(String(await inside), /updateWeights was called inside a step \(from the decode/);
  assert.equal(await fromHook!, 1);
  assert.equal(engine.closed, true);
  await assert.rejects(engine.generate({ prompt_token_ids: [1] }), /engine is closed/);
  await engine.close();
});

Deno.test("formatBytes: one decimal in the largest unit the rounded value reaches", () => {
  assert.equal(formatBytes(25165824), "24.0 MiB");
  assert.equal(formatBytes(12 * 2 ** 30), "12.0 GiB");
  assert.equal(formatBytes(2 ** 30 - 1), "1.0 GiB"); // not "1024.0 MiB"
  assert.equal(formatBytes(3000), "2.9 KiB"); // not "0.0 MiB"
  assert.equal(formatBytes(512), "512 bytes");
});
