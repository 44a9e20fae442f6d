// Validation of generation requests: every field checked against the engine's
// model (vocabulary) and limits (maxModelLen), defaults filled in, and errors
// that name the field, the value and what was expected.
import type { GenerationRequest } from "./types.ts";

const F32_MAX = 3.4028234663852886e38; // the sampler takes temperature as float32

/** A request with every field checked and defaulted. */
export interface NormalizedRequest {
  id: string;
  prompt: Int32Array;
  maxNewTokens: number;
  temperature: number;
  topP: number;
  topK: number;
  seed: bigint;
  /** Token ids that end the generation (engine EOS unless ignore_eos, plus stop_token_ids). */
  stopTokenIds: ReadonlySet<number>;
  stopStrings: readonly string[];
  includeStopStr: boolean;
}

/** What validation needs to know about the engine. */
export interface RequestLimits {
  vocabSize: number;
  maxModelLen: number;
  eosTokenIds: readonly number[];
  /** Whether the engine has a decode function (stop strings need one). */
  canDecode: boolean;
  /** The id used when the request names none. */
  defaultId: string;
  /** The seed used when the request names none. */
  defaultSeed: bigint;
}

const show = (v: unknown): string =>
  typeof v === "string"
    ? JSON.stringify(v)
    : typeof v === "bigint"
    ? `${v}n`
    : Array.isArray(v)
    ? "an array"
    : v === null
    ? "null"
    : typeof v === "object"
    ? "an object"
    : String(v);

function tokenId(v: unknown, name: string, vocabSize: number): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v >= vocabSize) {
    throw new RangeError(
      `${name} must be a token id, an integer in 0..${vocabSize - 1} (the model's vocabulary), ` +
        `got ${show(v)}`,
    );
  }
  return v;
}

function optionalNumber(
  v: unknown,
  name: string,
  fallback: number,
  ok: (x: number) => boolean,
  expected: string,
): number {
  if (v === undefined || v === null) return fallback;
  if (typeof v !== "number" || !ok(v)) {
    throw new RangeError(`${name} must be ${expected}, got ${show(v)}`);
  }
  return v;
}

function optionalBoolean(v: unknown, name: string): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v !== "boolean") throw new TypeError(`${name} must be a boolean, got ${show(v)}`);
  return v;
}

/** Checks `request` against `limits` and fills in the defaults; throws on the first bad field. */
export function normalizeRequest(
  request: GenerationRequest,
  limits: RequestLimits,
): NormalizedRequest {
  if (typeof request !== "object" || request === null) {
    throw new TypeError(`A generation request must be an object, got ${show(request)}`);
  }
  const r = request as unknown as Record<string, unknown>;

  const rawId = r.request_id;
  let id = limits.defaultId;
  if (rawId !== undefined && rawId !== null) {
    if (typeof rawId !== "string" || rawId === "") {
      throw new TypeError(`request_id must be a non-empty string, got ${show(rawId)}`);
    }
    id = rawId;
  }
  const where = `request ${JSON.stringify(id)}`;

  const p = r.prompt_token_ids as ArrayLike<unknown> | undefined;
  if (
    typeof p !== "object" || p === null || typeof (p as { length?: unknown }).length !== "number"
  ) {
    throw new TypeError(
      `${where}: prompt_token_ids must be an array of token ids, got ${show(p)}`,
    );
  }
  if (p.length < 1) {
    throw new RangeError(`${where}: prompt_token_ids must hold at least one token, got none`);
  }
  const prompt = new Int32Array(p.length);
  for (let i = 0; i < p.length; i++) {
    prompt[i] = tokenId(p[i], `${where}: prompt_token_ids[${i}]`, limits.vocabSize);
  }

  const room = limits.maxModelLen - prompt.length;
  if (room < 1) {
    throw new RangeError(
      `${where}: the prompt has ${prompt.length} tokens, which leaves no room to generate ` +
        `within maxModelLen ${limits.maxModelLen}: expected at most ${limits.maxModelLen - 1}`,
    );
  }
  const maxNewTokens = optionalNumber(
    r.max_new_tokens,
    `${where}: max_new_tokens`,
    room,
    (x) => Number.isInteger(x) && x >= 1,
    "a positive integer",
  );
  if (maxNewTokens > room) {
    throw new RangeError(
      `${where}: ${prompt.length} prompt tokens + max_new_tokens ${maxNewTokens} = ` +
        `${prompt.length + maxNewTokens} positions exceed maxModelLen ${limits.maxModelLen}: ` +
        `expected max_new_tokens <= ${room} (or a shorter prompt)`,
    );
  }

  let temperature = optionalNumber(
    r.temperature,
    `${where}: temperature`,
    1,
    (x) => Number.isFinite(x) && x >= 0 && x <= F32_MAX,
    "a number in [0, 3.4e38] (0 is greedy; sampling runs in float32)",
  );
  optionalBoolean(r.do_sample, `${where}: do_sample`);
  if (r.do_sample === false) temperature = 0;
  const topP = optionalNumber(
    r.top_p,
    `${where}: top_p`,
    1,
    (x) => x > 0 && x <= 1,
    "a number in (0, 1] (1 is off)",
  );
  let topK = optionalNumber(
    r.top_k,
    `${where}: top_k`,
    0,
    (x) => Number.isInteger(x) && x >= -1 && x <= 2 ** 31 - 1,
    "an integer >= -1 (0 and -1 are off)",
  );
  if (topK < 0) topK = 0;

  let seed = limits.defaultSeed;
  const s = r.seed;
  if (s !== undefined && s !== null) {
    if (typeof s === "bigint") seed = BigInt.asUintN(64, s);
    else if (typeof s === "number" && Number.isSafeInteger(s)) seed = BigInt.asUintN(64, BigInt(s));
    else {
      throw new RangeError(`${where}: seed must be an integer (number or bigint), got ${show(s)}`);
    }
  }

  const stopTokenIds = new Set<number>();
  if (!optionalBoolean(r.ignore_eos, `${where}: ignore_eos`)) {
    for (const t of limits.eosTokenIds) stopTokenIds.add(t);
  }
  const st = r.stop_token_ids;
  if (st !== undefined && st !== null) {
    if (!Array.isArray(st)) {
      throw new TypeError(
        `${where}: stop_token_ids must be an array of token ids, got ${show(st)}`,
      );
    }
    st.forEach((t, i) =>
      stopTokenIds.add(tokenId(t, `${where}: stop_token_ids[${i}]`, limits.vocabSize))
    );
  }

  const ss = r.stop_strings;
  let stopStrings: string[] = [];
  if (ss !== undefined && ss !== null) {
    if (!Array.isArray(ss)) {
      throw new TypeError(`${where}: stop_strings must be an array of strings, got ${show(ss)}`);
    }
    ss.forEach((x, i) => {
      if (typeof x !== "string" || x === "") {
        throw new TypeError(
          `${where}: stop_strings[${i}] must be a non-empty string, got ${show(x)}`,
        );
      }
    });
    stopStrings = [...new Set(ss as string[])];
    if (stopStrings.length > 0 && !limits.canDecode) {
      throw new TypeError(
        `${where}: stop_strings need a decode function: pass { decode } to the GenerationEngine`,
      );
    }
  }

  return {
    id,
    prompt,
    maxNewTokens,
    temperature,
    topP,
    topK,
    seed,
    stopTokenIds,
    stopStrings,
    includeStopStr: optionalBoolean(
      r.include_stop_str_in_output,
      `${where}: include_stop_str_in_output`,
    ),
  };
}
