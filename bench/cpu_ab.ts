/**
 * Two builds of the CPU library compared op by op in one process: each case runs on both,
 * alternating which goes first, 8 rounds; the table gives the median times, the speed-up of the
 * second library over the first and whether their outputs are the same bits. For changes that
 * must keep every result (a faster loop with the same sums) and for their speed.
 *
 * Usage: `deno run -A bench/cpu_ab.ts OLD.so NEW.so [decode,sample,rope,gemm]` (default: all
 * four groups). Keep the old build first, e.g. `git stash; deno task build; cp
 * build/libagentrl_cpu.so /tmp/old.so; git stash pop; deno task build`, then
 * `deno run -A bench/cpu_ab.ts /tmp/old.so build/libagentrl_cpu.so`.
 *
 * @module
 */

const SYMBOLS = {
  arl_ctx_create: { parameters: ["i32"], result: "pointer" },
  arl_ctx_destroy: { parameters: ["pointer"], result: "void" },
  arl_sgemm: {
    parameters: [
      "pointer",
      "buffer",
      "buffer",
      "buffer",
      "i32",
      "i32",
      "i32",
      "i32",
      "i32",
      "f32",
      "f32",
      "i32",
      "i32",
      "i32",
    ],
    result: "i32",
  },
  arl_attention_decode: {
    parameters: [
      "pointer",
      "buffer",
      "buffer",
      "buffer",
      "buffer",
      "buffer",
      "buffer",
      "i32",
      "i32",
      "i32",
      "i32",
      "i32",
      "i32",
      "f32",
    ],
    result: "i32",
  },
  arl_sample: {
    parameters: [
      "pointer",
      "buffer",
      "buffer",
      "buffer",
      "buffer",
      "buffer",
      "buffer",
      "buffer",
      "buffer",
      "i32",
      "i32",
    ],
    result: "i32",
  },
  arl_rope: {
    parameters: ["pointer", "buffer", "buffer", "buffer", "i32", "i32", "i32", "f32", "i32"],
    result: "i32",
  },
} as const;

/** One CPU library's symbols that the cases call, and a context of 2 threads. */
export interface Opened {
  sym: Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];
  ctx: Deno.PointerValue;
}

/** Opens the CPU library at `path` with a context of 2 threads. */
export function openCpuLibrary(path: string): Opened {
  const sym = Deno.dlopen(path, SYMBOLS).symbols;
  return { sym, ctx: sym.arl_ctx_create(2) };
}

/**
 * One case: a call on either library (returning its status) and the arrays it writes, which are
 * compared (and filled with 0xFF bytes before each library's first call, so that an output one
 * library leaves unwritten cannot pass for the other's).
 */
export interface AbCase {
  name: string;
  reps: number;
  run(lib: Opened): number;
  outputs: ArrayBufferView[];
}

/** One row of the table: median milliseconds of `reps` calls on each library. */
export interface AbResult {
  name: string;
  oldMs: number;
  newMs: number;
  sameBits: boolean;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

/** Runs `c` on both libraries, 8 rounds alternating the order; throws on a failed call. */
export function runCase(libs: readonly [Opened, Opened], c: AbCase): AbResult {
  const times: [number[], number[]] = [[], []];
  const outputs: Uint8Array[] = [];
  const bytes = (o: ArrayBufferView) => new Uint8Array(o.buffer, o.byteOffset, o.byteLength);
  for (let round = 0; round < 8; round++) {
    for (const which of round % 2 ? [1, 0] : [0, 1]) {
      if (round === 0) { for (const o of c.outputs) bytes(o).fill(0xff); }
      const start = performance.now();
      for (let i = 0; i < c.reps; i++) {
        const status = c.run(libs[which]!);
        if (status !== 0) throw new Error(`${c.name}: library ${which + 1} returned ${status}`);
      }
      times[which]!.push(performance.now() - start);
      if (round === 0) {
        const all = c.outputs.map((o) => bytes(o).slice());
        const joined = new Uint8Array(all.reduce((n, a) => n + a.length, 0));
        all.reduce((at, a) => (joined.set(a, at), at + a.length), 0);
        outputs[which] = joined;
      }
    }
  }
  const [a, b] = outputs as [Uint8Array, Uint8Array];
  return {
    name: c.name,
    oldMs: median(times[0]),
    newMs: median(times[1]),
    sameBits: a.length === b.length && a.every((x, i) => x === b[i]),
  };
}

/** The cases of each group, with seeded random inputs. */
export function cases(groups: readonly string[]): AbCase[] {
  let state = 1;
  const rand = () => ((state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1;
  const randf = (n: number, scale = 1) => Float32Array.from({ length: n }, () => rand() * scale);
  const out: AbCase[] = [];
  if (groups.includes("decode")) {
    const shapes: [number, number, number, number, number, number, number, number][] = [
      [128, 4, 2, 32, 512, 86, 200, 20], // the default config's tiny model, a rollout's batch
      [8, 14, 2, 64, 2048, 400, 1500, 20], // Qwen2.5-0.5B's heads
      [32, 14, 2, 64, 4096, 2000, 4000, 3], // the same, a batch at long contexts (WebShop's)
      [1, 14, 2, 64, 4096, 3000, 3001, 200], // the same, batch 1
      [2, 14, 2, 64, 32768, 30, 34, 200], // short contexts in a long cache
      [8, 16, 8, 128, 1024, 100, 900, 20], // 128-wide heads (Qwen3, Llama 3 8B)
      [5, 4, 2, 20, 64, 1, 60, 2000], // a head dim with a tail
    ];
    for (const [n, hq, hkv, d, l, lo, hi, reps] of shapes) {
      const k = randf(n * hkv * l * d), v = randf(n * hkv * l * d), q = randf(n * hq * d);
      const o = new Float32Array(n * hq * d);
      const slots = Int32Array.from({ length: n }, (_, i) => i);
      const lens = Int32Array.from(
        { length: n },
        () => lo + Math.floor(((rand() + 1) / 2) * (hi - lo)),
      );
      out.push({
        name: `attention_decode n${n} hq${hq} hkv${hkv} d${d} len ${lo}-${hi}`,
        reps: reps,
        outputs: [o],
        run: (L) =>
          L.sym.arl_attention_decode(
            L.ctx,
            o,
            q,
            k,
            v,
            slots,
            lens,
            n,
            n,
            hq,
            hkv,
            l,
            d,
            1 / Math.sqrt(d),
          ),
      });
    }
  }
  if (groups.includes("sample")) {
    const rows: [number, number, number, number, number][] = [
      [128, 768, 100, 0.99, 50],
      [128, 768, 0, 0.99, 20],
      [8, 151936, 100, 0.95, 5],
    ];
    for (const [n, v, topK, topP, reps] of rows) {
      const logits = randf(n * v, 8);
      const tokens = new Int32Array(n), logprobs = new Float32Array(n);
      const temperature = new Float32Array(n).fill(0.2);
      const k = new Int32Array(n).fill(topK), p = new Float32Array(n).fill(topP);
      const seeds = BigUint64Array.from({ length: n }, (_, i) => BigInt(i + 7));
      const counters = new BigUint64Array(n);
      out.push({
        name: `sample n${n} v${v} top_k ${topK} top_p ${topP}`,
        reps: reps,
        outputs: [tokens, logprobs],
        run: (L) =>
          L.sym.arl_sample(
            L.ctx,
            tokens,
            logprobs,
            logits,
            temperature,
            k,
            p,
            seeds,
            counters,
            n,
            v,
          ),
      });
    }
  }
  if (groups.includes("rope")) {
    const ropes: [number, number, number, (i: number) => number, string, number][] = [
      [8192, 4, 32, (i) => i % 126, "packed rows (positions 0-125)", 20],
      [128, 4, 32, (i) => 86 + (i % 40), "decode rows (positions 86-125)", 500],
      [64, 14, 64, (i) => 3 * i + 5, "all-distinct positions", 500],
    ];
    for (const [t, h, d, pos, label, reps] of ropes) {
      const x = randf(t * h * d), o = new Float32Array(t * h * d);
      const positions = Int32Array.from({ length: t }, (_, i) => pos(i));
      out.push({
        name: `rope t${t} h${h} d${d} ${label}`,
        reps,
        outputs: [o],
        run: (L) => L.sym.arl_rope(L.ctx, o, x, positions, t, h, d, 10000, 0),
      });
    }
  }
  if (groups.includes("gemm")) {
    const gemms: [number, number, number, number, number, number][] = [
      [8192, 128, 128, 0, 1, 10],
      [8192, 768, 128, 0, 1, 5],
      [8192, 256, 128, 0, 1, 10],
      [128, 128, 8192, 1, 0, 10],
      // a decode step of Qwen2.5-0.5B's shapes: 17-128 rows against the weights (o, gate|up,
      // down, the LM head)
      [64, 896, 896, 0, 1, 20],
      [64, 9728, 896, 0, 1, 3],
      [17, 896, 4864, 0, 1, 5],
      [128, 896, 4864, 0, 1, 3],
      [32, 151936, 896, 0, 1, 1],
    ];
    for (const [m, n, k, ta, tb, reps] of gemms) {
      const a = randf(m * k), b = randf(k * n), c = new Float32Array(m * n);
      out.push({
        name: `sgemm m${m} n${n} k${k} trans_a ${ta} trans_b ${tb}`,
        reps: reps,
        outputs: [c],
        run: (L) =>
          L.sym.arl_sgemm(
            L.ctx,
            c,
            a,
            b,
            ta,
            tb,
            m,
            n,
            k,
            1,
            0,
            ta ? m : k,
            tb ? k : n,
            n,
          ),
      });
    }
  }
  return out;
}

if (import.meta.main) {
  const [oldPath, newPath, groupArg] = Deno.args;
  if (!oldPath || !newPath) {
    console.error("usage: deno run -A bench/cpu_ab.ts OLD.so NEW.so [decode,sample,rope,gemm]");
    Deno.exit(2);
  }
  const groups = (groupArg ?? "decode,sample,rope,gemm").split(",");
  const libs = [openCpuLibrary(oldPath), openCpuLibrary(newPath)] as const;
  console.log(`1: ${oldPath}\n2: ${newPath}`);
  for (const c of cases(groups)) {
    const r = runCase(libs, c);
    console.log(
      `${r.name.padEnd(52)} ${r.oldMs.toFixed(1).padStart(7)} ms ${
        r.newMs.toFixed(1).padStart(7)
      } ms  ` +
        `${(r.oldMs / r.newMs).toFixed(3)}x  ${r.sameBits ? "same bits" : "BITS DIFFER"}`,
    );
  }
  for (const l of libs) l.sym.arl_ctx_destroy(l.ctx);
}
