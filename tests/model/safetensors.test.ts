// The safetensors reader and writer: round trips (f32 exact, bf16 against an
// independent nearest-even reference), files assembled byte by byte from the
// format's description (so the reader is checked against the spec, not only
// against our writer), every validation error, and F16 decoding.
import assert from "node:assert/strict";
import {
  CheckpointError,
  decodeF16,
  encodeBf16,
  f16ToF32,
  MAX_HEADER_BYTES,
  SafetensorsFile,
  writeSafetensors,
} from "../../lib/model/safetensors.ts";

/** A seeded uniform stream in [0, 1) (mulberry32). */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function tempDir(): Promise<string> {
  return await Deno.makeTempDir({ prefix: "agentrl_st_" });
}

/** A safetensors file from a header (object or raw text) and data bytes, by hand. */
function assemble(header: unknown, data: Uint8Array, opts: { pad?: boolean } = {}): Uint8Array {
  let json = typeof header === "string" ? header : JSON.stringify(header);
  if (opts.pad ?? true) { while (json.length % 8 !== 0) json += " "; }
  const h = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + h.length + data.length);
  const n = h.length;
  // u64 little-endian, written byte by byte.
  for (let i = 0; i < 8; i++) out[i] = Math.floor(n / 2 ** (8 * i)) & 0xff;
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

/** Writes `bytes` to `dir/name` and returns the path. */
function put(dir: string, name: string, bytes: Uint8Array): string {
  const path = `${dir}/${name}`;
  Deno.writeFileSync(path, bytes);
  return path;
}

/** Opens `path`, expects a CheckpointError naming the file and matching `pattern`. */
function expectError(path: string, pattern: RegExp): CheckpointError {
  let caught: unknown;
  try {
    SafetensorsFile.open(path).close();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof CheckpointError, `expected a CheckpointError, got ${caught}`);
  assert.ok(caught.message.includes(path), `message should name the file: ${caught.message}`);
  assert.match(caught.message, pattern);
  assert.equal(caught.details.file, path);
  return caught;
}

/** Float32 bytes, little-endian, through DataView (independent of the host order). */
function f32Bytes(values: number[]): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  const view = new DataView(out.buffer);
  values.forEach((v, i) => view.setFloat32(i * 4, v, true));
  return out;
}

function u16Bytes(values: number[]): Uint8Array {
  const out = new Uint8Array(values.length * 2);
  values.forEach((v, i) => {
    out[2 * i] = v & 0xff;
    out[2 * i + 1] = v >> 8;
  });
  return out;
}

function f32FromBits(bits: number): number {
  const view = new DataView(new ArrayBuffer(4));
  view.setUint32(0, bits >>> 0);
  return view.getFloat32(0);
}

function f32Bits(x: number): number {
  const view = new DataView(new ArrayBuffer(4));
  view.setFloat32(0, x);
  return view.getUint32(0);
}

/**
 * bf16 rounding by definition: of the two bf16 neighbours of x, the nearer
 * (by exact float64 distance), ties to the one with an even last bit; beyond the
 * largest bf16 the upper neighbour counts as 2^128 (IEEE overflow to infinity).
 */
function bf16Reference(x: number): number {
  if (Number.isNaN(x)) return NaN;
  const lo = f32Bits(x) & 0xffff0000;
  const hi = (lo + 0x10000) >>> 0;
  const vLo = f32FromBits(lo);
  const vHiBits = f32FromBits(hi);
  if (!Number.isFinite(x)) return x;
  const vHi = Number.isFinite(vHiBits) ? vHiBits : Math.sign(x) * 2 ** 128;
  const dLo = Math.abs(x - vLo), dHi = Math.abs(vHi - x);
  if (dLo < dHi) return vLo;
  if (dHi < dLo) return vHiBits;
  return ((lo >>> 16) & 1) === 0 ? vLo : vHiBits;
}

Deno.test("f32 round trip is exact, header is padded to 8 with spaces", async () => {
  const dir = await tempDir();
  try {
    const r = rng(1);
    const a = Float32Array.from({ length: 3 * 5 }, () => (r() - 0.5) * 1e3);
    const b = Float32Array.from({ length: 7 }, () => r() * 1e-30);
    const tensors = [
      { name: "a", shape: [3, 5], data: a },
      { name: "scalar", shape: [], data: new Float32Array([-0]) },
      { name: "empty", shape: [0, 4], data: new Float32Array(0) },
      { name: "b.bias", shape: [7], data: b },
    ];
    for (let extra = 0; extra < 8; extra++) {
      // Names of every length mod 8, so every amount of padding is exercised.
      const path = `${dir}/rt${extra}.safetensors`;
      const named = [...tensors, { name: "x".repeat(extra + 1), shape: [1], data: a.slice(0, 1) }];
      await writeSafetensors(path, named, { metadata: { format: "pt", note: "é ✓" } });
      const bytes = Deno.readFileSync(path);
      const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
      assert.equal(n % 8, 0, `header size ${n} is not a multiple of 8`);
      // Minimal padding, with spaces (0x20), after the closing brace.
      const header = bytes.subarray(8, 8 + n);
      let body = n;
      while (body > 0 && header[body - 1] === 0x20) body--;
      assert.equal(header[body - 1], "}".charCodeAt(0));
      assert.equal(n, Math.ceil(body / 8) * 8, `header of ${body} bytes padded to ${n}`);
      JSON.parse(new TextDecoder().decode(header));
      using f = SafetensorsFile.open(path);
      assert.deepEqual(f.metadata, { format: "pt", note: "é ✓" });
      assert.equal(f.dataStart, 8 + n);
      for (const t of named) {
        assert.equal(f.info(t.name).dtype, "F32");
        assert.deepEqual(f.info(t.name).shape, t.shape);
        assert.deepEqual(f.readF32(t.name), t.data);
      }
      assert.ok(Object.is(f.readF32("scalar")[0], -0));
      assert.deepEqual(f.names(), named.map((t) => t.name)); // data order = write order
    }
    // No temporary file is left behind.
    assert.deepEqual([...Deno.readDirSync(dir)].filter((e) => e.name.includes(".tmp-")), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bf16 round trip equals nearest-even rounding computed by definition", async () => {
  const dir = await tempDir();
  try {
    const r = rng(2);
    const hand = [
      1,
      1 + 2 ** -8, // tie between 1 and 1 + 2^-7: goes to 1 (even)
      1 + 3 * 2 ** -8, // tie between 1 + 2^-7 and 1 + 2^-6: goes to 1 + 2^-6 (even)
      1 + 2 ** -8 + 2 ** -20, // just above the tie: rounds up
      -(1 + 2 ** -8 - 2 ** -20), // just below the tie: rounds down in magnitude
      0.1,
      -0,
      3.4028234663852886e38, // the largest f32 rounds to infinity in bf16
      -Infinity,
      1e-40, // f32 subnormal
      2 ** -133,
    ];
    const random = Array.from({ length: 4000 }, () => {
      const v = f32FromBits(Math.floor(r() * 2 ** 32));
      return Number.isNaN(v) ? 1.5 : v;
    });
    const values = Float32Array.from([...hand, ...random]);
    const path = `${dir}/half.safetensors`;
    await writeSafetensors(path, [{ name: "w", shape: [values.length], data: values }], {
      dtype: "bf16",
    });
    using f = SafetensorsFile.open(path);
    assert.equal(f.info("w").dtype, "BF16");
    assert.equal(f.info("w").end - f.info("w").begin, values.length * 2);
    const back = f.readF32("w");
    for (let i = 0; i < values.length; i++) {
      const want = bf16Reference(values[i]!);
      assert.ok(
        Object.is(back[i], want),
        `value ${i}: ${values[i]} → ${back[i]}, expected ${want}`,
      );
    }
    assert.equal(back[1], 1);
    assert.equal(back[2], 1 + 2 ** -6);
    assert.equal(back[7], Infinity);
    // bf16 values survive a second trip unchanged.
    const again = `${dir}/again.safetensors`;
    await writeSafetensors(again, [{ name: "w", shape: [back.length], data: back }], {
      dtype: "bf16",
    });
    using g = SafetensorsFile.open(again);
    assert.deepEqual(g.readF32("w"), back);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("encodeBf16 keeps NaN a NaN of the same sign", () => {
  // NaN bit patterns set directly (a JS number could canonicalize them).
  const nans = new Float32Array(new Uint32Array([0x7fc00000, 0xffc00000, 0x7f800001]).buffer);
  const bits = encodeBf16(nans);
  for (const b of bits) {
    assert.equal(b & 0x7f80, 0x7f80); // all-ones exponent
    assert.notEqual(b & 0x7f, 0); // non-zero mantissa: NaN, not infinity
  }
  assert.deepEqual([...bits].map((b) => b >> 15), [0, 1, 0]); // signs kept
});

Deno.test("reads a file assembled byte by byte from the format description", async () => {
  const dir = await tempDir();
  try {
    // F16 bit patterns: 1, -2.5, 65504, 2^-24, +inf, -inf, NaN, -0, largest subnormal,
    // smallest normal.
    const f16 = [0x3c00, 0xc100, 0x7bff, 0x0001, 0x7c00, 0xfc00, 0x7e00, 0x8000, 0x03ff, 0x0400];
    const data = new Uint8Array([
      ...f32Bytes([1, -2, 0.5, 3]), // "w" F32 [2, 2] at [0, 16)
      ...u16Bytes([0x3f80, 0xc020]), // "b" BF16 [2] = [1, -2.5] at [16, 20)
      ...u16Bytes(f16), // "h" F16 [10] at [20, 40)
      7,
      0,
      0,
      0,
      0xff,
      0xff,
      0xff,
      0xff, // "ids" I32 [2] = [7, -1] at [40, 48)
      ...new Uint8Array(new Float64Array([0.25, -1e300]).buffer), // "d" F64 [2] at [48, 64)
    ]);
    // Keys out of data order, and no padding: the reader must sort by offset and
    // not require the writer's padding.
    const header = {
      h: { dtype: "F16", shape: [10], data_offsets: [20, 40] },
      "__metadata__": { format: "pt" },
      w: { dtype: "F32", shape: [2, 2], data_offsets: [0, 16] },
      ids: { dtype: "I32", shape: [2], data_offsets: [40, 48] },
      b: { dtype: "BF16", shape: [2], data_offsets: [16, 20] },
      d: { dtype: "F64", shape: [2], data_offsets: [48, 64] },
    };
    for (const pad of [true, false]) {
      const path = put(dir, `hand_${pad}.safetensors`, assemble(header, data, { pad }));
      using f = SafetensorsFile.open(path);
      assert.deepEqual(f.names(), ["w", "b", "h", "ids", "d"]);
      assert.deepEqual(f.metadata, { format: "pt" });
      assert.deepEqual(f.readF32("w"), new Float32Array([1, -2, 0.5, 3]));
      assert.deepEqual(f.readF32("b"), new Float32Array([1, -2.5]));
      const h = f.readF32("h");
      assert.deepEqual(
        [...h].slice(0, 6),
        [1, -2.5, 65504, 2 ** -24, Infinity, -Infinity],
      );
      assert.ok(Number.isNaN(h[6]));
      assert.ok(Object.is(h[7], -0));
      assert.equal(h[8], 1023 * 2 ** -24);
      assert.equal(h[9], 2 ** -14);
      assert.deepEqual(f.readF32("d"), new Float32Array([0.25, -Infinity]));
      assert.deepEqual(f.readBytes("ids"), new Uint8Array([7, 0, 0, 0, 255, 255, 255, 255]));
      assert.throws(() => f.readF32("ids"), (e: Error) => {
        assert.ok(e instanceof CheckpointError);
        assert.match(e.message, /'ids'.*is I32; readF32 converts only F32, BF16, F16, F64/);
        return true;
      });
      assert.throws(() => f.info("W"), /Tensor 'W' not found in .*close names: w/);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("F16 decoding: normals, subnormals, infinities, NaN", () => {
  const cases: [number, number][] = [
    [0x3c00, 1],
    [0xc100, -2.5],
    [0x7bff, 65504],
    [0x0001, 2 ** -24],
    [0x8001, -(2 ** -24)],
    [0x0200, 2 ** -15],
    [0x0400, 2 ** -14],
    [0x3555, 0.333251953125],
    [0x7c00, Infinity],
    [0xfc00, -Infinity],
    [0x0000, 0],
  ];
  for (const [bits, want] of cases) {
    assert.equal(f16ToF32(bits), want, `0x${bits.toString(16)}`);
  }
  assert.ok(Object.is(f16ToF32(0x8000), -0));
  assert.ok(Number.isNaN(f16ToF32(0x7e00)));
  assert.ok(Number.isNaN(f16ToF32(0xfc01)));
  // The table agrees with the scalar decoder on all 65536 patterns.
  const all = decodeF16(Uint16Array.from({ length: 65536 }, (_, i) => i));
  for (let i = 0; i < 65536; i++) {
    assert.ok(Object.is(all[i], Math.fround(f16ToF32(i))) || Number.isNaN(all[i]!), `${i}`);
  }
});

Deno.test("every malformed file is refused with the file named", async () => {
  const dir = await tempDir();
  try {
    const t = (begin: number, end: number, shape = [(end - begin) / 4], dtype = "F32") => ({
      dtype,
      shape,
      data_offsets: [begin, end],
    });
    const d8 = f32Bytes([1, 2]);
    const d12 = f32Bytes([1, 2, 3]);

    expectError(
      put(dir, "truncated.st", assemble({ a: t(0, 8) }, d8.subarray(0, 5))),
      /truncated: the header describes 8 data bytes but only 5 follow it \(3 bytes missing\)/,
    );
    expectError(
      put(dir, "trailing.st", assemble({ a: t(0, 4) }, d8)),
      /describes 4 data bytes but 8 follow it \(4 unexpected trailing bytes\)/,
    );
    expectError(
      put(dir, "gap.st", assemble({ a: t(0, 4), b: t(8, 12) }, d12)),
      /gap in the data: tensor 'b' starts at byte 8 but 'a' ends at 4/,
    );
    expectError(
      put(dir, "gap_at_start.st", assemble({ a: t(4, 12) }, d12)),
      /tensor 'a' starts at byte 4 but the data starts at 0/,
    );
    expectError(
      put(dir, "overlap.st", assemble({ a: t(0, 8), b: t(4, 12) }, d12)),
      /tensor 'b' \[4, 12\) overlaps 'a' \[0, 8\)/,
    );
    expectError(
      put(dir, "dtype.st", assemble({ a: t(0, 8, [2], "F17") }, d8)),
      /tensor 'a' has unknown dtype "F17"; expected one of F64, F32, F16, BF16/,
    );
    expectError(
      put(dir, "shape.st", assemble({ a: t(0, 8, [3]) }, d8)),
      /tensor 'a' \(F32, shape \[3\]\) needs 3 × 4 = 12 bytes, but its data_offsets \[0, 8\] span 8/,
    );
    expectError(
      put(dir, "negdim.st", assemble({ a: t(0, 8, [-2]) }, d8)),
      /shape \[-2\]; expected an array of non-negative integers/,
    );
    expectError(
      put(
        dir,
        "offsets.st",
        assemble({ a: { dtype: "F32", shape: [2], data_offsets: [8, 0] } }, d8),
      ),
      /data_offsets \[8,0\]; expected \[begin, end\] with 0 <= begin <= end/,
    );
    expectError(
      put(dir, "notjson.st", assemble("{not json", d8)),
      /header is not valid UTF-8 JSON/,
    );
    expectError(
      put(dir, "array.st", assemble([1, 2], new Uint8Array(0))),
      /the header must be a JSON object, found an array/,
    );
    expectError(
      put(dir, "meta.st", assemble({ __metadata__: { epoch: 3 }, a: t(0, 8) }, d8)),
      /'__metadata__.epoch' must be a string, found 3/,
    );
    expectError(
      put(dir, "entry.st", assemble({ a: [1] }, new Uint8Array(0))),
      /tensor 'a' must be an object \{dtype, shape, data_offsets\}/,
    );

    // A header size over the limit, and one larger than the file.
    const big = new Uint8Array(16);
    new DataView(big.buffer).setBigUint64(0, BigInt(MAX_HEADER_BYTES + 1), true);
    expectError(put(dir, "huge.st", big), /declares a header of 100000001 bytes, over the/);
    new DataView(big.buffer).setBigUint64(0, 2n ** 64n - 1n, true);
    expectError(put(dir, "huge64.st", big), /declares a header of 18446744073709551615 bytes/);
    new DataView(big.buffer).setBigUint64(0, 100n, true);
    expectError(
      put(dir, "short_header.st", big),
      /truncated: its header is 100 bytes but only 8 bytes follow/,
    );
    expectError(put(dir, "tiny.st", new Uint8Array(3)), /is 3 bytes long; expected at least/);
    expectError(`${dir}/absent.st`, /does not exist/);
    Deno.mkdirSync(`${dir}/folder.st`);
    expectError(`${dir}/folder.st`, /Safetensors file .*folder\.st (is a folder|cannot be read)/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a failed write leaves the previous file intact and no temporary file", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir}/m.safetensors`;
    await writeSafetensors(path, [{ name: "a", shape: [2], data: new Float32Array([1, 2]) }]);
    await assert.rejects(
      writeSafetensors(path, [{ name: "a", shape: [3], data: new Float32Array([1, 2]) }]),
      /tensor 'a' has shape \[3\] \(3 elements\) but 2 values/,
    );
    await assert.rejects(
      writeSafetensors(path, [
        { name: "a", shape: [1], data: new Float32Array([1]) },
        { name: "a", shape: [1], data: new Float32Array([1]) },
      ]),
      /tensor 'a' appears twice/,
    );
    using f = SafetensorsFile.open(path);
    assert.deepEqual(f.readF32("a"), new Float32Array([1, 2]));
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["m.safetensors"]);
    f.close();
    assert.throws(() => f.readF32("a"), /is closed/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("large bf16 tensors are converted in chunks correctly", async () => {
  const dir = await tempDir();
  try {
    // Over one conversion chunk (2^20 elements), with an odd tail.
    const n = (1 << 20) + 12345;
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = (i % 1000) - 500 + 0.25;
    const path = `${dir}/big.safetensors`;
    await writeSafetensors(path, [{ name: "w", shape: [n], data }], { dtype: "bf16" });
    assert.equal(Deno.statSync(path).size > 2 * n, true);
    using f = SafetensorsFile.open(path);
    const back = f.readF32("w");
    for (const i of [0, 1, (1 << 20) - 1, 1 << 20, n - 1]) {
      assert.equal(back[i], bf16Reference(data[i]!), `element ${i}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
