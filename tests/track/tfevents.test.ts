/**
 * CRC-32C against published vectors and a bit-by-bit reference, the protobuf
 * writer against hand-encoded bytes, and event files: a record compared byte
 * for byte with one derived by hand, write → read round trips, corruption.
 */
import { deepStrictEqual, equal, ok, rejects, throws } from "node:assert/strict";
import { crc32c, maskCrc, maskedCrc32c, unmaskCrc } from "../../lib/track/crc32c.ts";
import { decodeProto, fixedToNumber, ProtoWriter } from "../../lib/track/protobuf.ts";
import {
  frameRecord,
  parseTfEvents,
  readTfEvents,
  TF_EVENTS_FILE_VERSION,
  TfEventsWriter,
} from "../../lib/track/tfevents.ts";

const ascii = (s: string) => new TextEncoder().encode(s);

/** Bit-at-a-time CRC-32C straight from the definition (no table). */
function crc32cBitwise(data: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of data) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_track_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("crc32c: published check values (RFC 3720 B.4 and the '123456789' check)", () => {
  equal(crc32c(ascii("123456789")), 0xe3069283);
  equal(crc32c(new Uint8Array(0)), 0);
  equal(crc32c(new Uint8Array(32)), 0x8a9136aa);
  equal(crc32c(new Uint8Array(32).fill(0xff)), 0x62a8ab43);
  equal(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i)), 0x46dd794e);
});

Deno.test("crc32c: table-driven equals bit-by-bit on random data, and chains", () => {
  let seed = 7;
  const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
  for (const n of [1, 3, 8, 255, 1000]) {
    const data = Uint8Array.from({ length: n }, rand);
    equal(crc32c(data), crc32cBitwise(data));
    const cut = n >> 1;
    equal(crc32c(data.subarray(cut), crc32c(data.subarray(0, cut))), crc32c(data));
  }
});

Deno.test("crc32c: mask formula and its inverse", () => {
  const crc = 0xe3069283;
  const rotated = ((crc >>> 15) | (crc << 17)) >>> 0;
  equal(maskCrc(crc), (rotated + 0xa282ead8) % 2 ** 32);
  equal(maskedCrc32c(ascii("123456789")), maskCrc(crc));
  for (const c of [0, 1, 0xffffffff, 0x80000000, 0x12345678]) equal(unmaskCrc(maskCrc(c)), c);
});

Deno.test("protobuf: hand-encoded varints, fixed-width numbers and strings", () => {
  deepStrictEqual([...new ProtoWriter().varint(1, 0).finish()], [0x08, 0x00]);
  deepStrictEqual([...new ProtoWriter().varint(1, 300).finish()], [0x08, 0xac, 0x02]);
  // 2^53 - 1 = 0x1f_ffff_ffff_ffff: 8 groups of 7 bits (7 bytes of 0xff and a final 0x0f).
  deepStrictEqual(
    [...new ProtoWriter().varint(2, Number.MAX_SAFE_INTEGER).finish()],
    [0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f],
  );
  // int64 -1 is ten bytes: nine 0xff and 0x01.
  deepStrictEqual([...new ProtoWriter().varint(1, -1).finish()], [8, ...Array(9).fill(0xff), 1]);
  deepStrictEqual([...new ProtoWriter().double(1, 1).finish()], [9, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f]);
  deepStrictEqual([...new ProtoWriter().float(2, -2).finish()], [0x15, 0, 0, 0, 0xc0]);
  deepStrictEqual([...new ProtoWriter().string(1, "hé").finish()], [0x0a, 3, 0x68, 0xc3, 0xa9]);
  // Field 16 needs a two-byte key: (16 << 3) | 2 = 130.
  deepStrictEqual([...new ProtoWriter().bytes(16, new Uint8Array([7])).finish()], [
    0x82,
    0x01,
    1,
    7,
  ]);
  throws(() => new ProtoWriter().varint(1, 1.5), /integer/);
  throws(() => new ProtoWriter().varint(0, 1), /field number/i);
});

Deno.test("protobuf: decode reverses encode and rejects truncation", () => {
  const long = "x".repeat(200); // length 200 needs a two-byte varint
  const bytes = new ProtoWriter().varint(1, 2n ** 63n).double(2, Math.PI).float(3, 0.25)
    .string(4, long).finish();
  const fields = decodeProto(bytes);
  deepStrictEqual(fields.map((f) => [f.field, f.wireType]), [[1, 0], [2, 1], [3, 5], [4, 2]]);
  equal(fields[0]!.value, 2n ** 63n);
  equal(fixedToNumber(fields[1]!.value as Uint8Array), Math.PI);
  equal(fixedToNumber(fields[2]!.value as Uint8Array), 0.25);
  equal(new TextDecoder().decode(fields[3]!.value as Uint8Array), long);
  throws(() => decodeProto(bytes.subarray(0, bytes.length - 1)), /past the end/);
  throws(() => decodeProto(new Uint8Array([0x08, 0x80])), /Truncated varint/);
  throws(() => decodeProto(new Uint8Array([0x0b])), /wire type 3/);
});

Deno.test("tfevents: one scalar record equals the bytes derived by hand", async () => {
  await withTempDir(async (dir) => {
    const w = await TfEventsWriter.create(dir, { now: () => 1700000000.75, hostname: "host" });
    w.scalars(5, { a: 0.5 }, 2);
    await w.close();
    equal(w.path, `${dir}/events.out.tfevents.1700000000.host`);
    const file = await Deno.readFile(w.path);

    // Summary.Value { tag(1) = "a", simple_value(2) = 0.5f (0x3f000000) }
    const value = [0x0a, 0x01, 0x61, 0x15, 0x00, 0x00, 0x00, 0x3f];
    const summary = [0x0a, value.length, ...value]; // Summary { value(1) }
    const event = [
      ...[0x09, 0, 0, 0, 0, 0, 0, 0, 0x40], // wall_time(1) = 2.0 (0x4000000000000000)
      ...[0x10, 0x05], // step(2) = 5
      ...[0x2a, summary.length, ...summary], // summary(5)
    ];
    equal(event.length, 23);
    // Masked CRCs from an independent bit-by-bit CRC-32C (Python) of the length bytes and data.
    const expected = [
      ...[23, 0, 0, 0, 0, 0, 0, 0],
      ...[0xe7, 0xce, 0xf8, 0x1e], // 0x1ef8cee7
      ...event,
      ...[0x3c, 0xd5, 0x23, 0xb1], // 0xb123d53c
    ];
    const first = 16 + 9 + 2 + TF_EVENTS_FILE_VERSION.length; // the file_version record
    deepStrictEqual([...file.subarray(first)], expected);
    // And the bit-by-bit reference in this file agrees with those constants.
    equal(maskCrc(crc32cBitwise(Uint8Array.from(event))), 0xb123d53c);
  });
});

Deno.test("tfevents: file version first, scalars and text round trip", async () => {
  await withTempDir(async (dir) => {
    let t = 1000;
    const w = await TfEventsWriter.create(`${dir}/tb`, { now: () => t++ });
    w.scalars(1, { "actor/pg_loss": 0.125, "critic/kl": -3, "val/env/Lake/success": 1 });
    w.scalars(2, { "actor/pg_loss": NaN, "system/tps": 12345.5 }, 99.5);
    w.scalars(3, {}); // nothing written
    w.text(2, "sample/response", "<answer>Up</answer> 🙂");
    await w.flush();
    await w.close();
    await w.close();
    throws(() => w.scalars(4, { x: 1 }), /closed/);

    const events = await readTfEvents(w.path);
    equal(events.length, 4);
    deepStrictEqual(events[0], {
      wallTime: 1000,
      step: 0,
      fileVersion: "brain.Event:2",
      values: {},
      texts: {},
    });
    deepStrictEqual(events[1], {
      wallTime: 1001,
      step: 1,
      values: { "actor/pg_loss": 0.125, "critic/kl": -3, "val/env/Lake/success": 1 },
      texts: {},
    });
    equal(events[2]!.wallTime, 99.5);
    equal(events[2]!.step, 2);
    ok(Number.isNaN(events[2]!.values["actor/pg_loss"]));
    equal(events[2]!.values["system/tps"], 12345.5); // exact in float32
    deepStrictEqual(events[3]!.texts, { "sample/response": "<answer>Up</answer> 🙂" });
  });
});

Deno.test("tfevents: values are stored as float32", async () => {
  await withTempDir(async (dir) => {
    const w = await TfEventsWriter.create(dir);
    w.scalars(7, { x: 0.1 });
    await w.close();
    const [, e] = await readTfEvents(w.path);
    equal(e!.values.x, Math.fround(0.1));
  });
});

Deno.test("tfevents: the text summary carries plugin 'text' and a scalar string tensor", async () => {
  await withTempDir(async (dir) => {
    const w = await TfEventsWriter.create(dir);
    w.text(1, "t", "hi");
    await w.close();
    const bytes = await Deno.readFile(w.path);
    const records = [];
    for (let p = 0; p < bytes.length;) {
      const len = Number(new DataView(bytes.buffer).getBigUint64(p, true));
      records.push(bytes.subarray(p + 12, p + 12 + len));
      p += 16 + len;
    }
    const summary = decodeProto(records[1]!).find((f) => f.field === 5)!.value as Uint8Array;
    const value = decodeProto(decodeProto(summary)[0]!.value as Uint8Array);
    const field = (n: number) => value.find((f) => f.field === n)!.value as Uint8Array;
    const metadata = decodeProto(field(9));
    const plugin = decodeProto(metadata[0]!.value as Uint8Array);
    equal(new TextDecoder().decode(plugin[0]!.value as Uint8Array), "text");
    deepStrictEqual(metadata[1], { field: 4, wireType: 0, value: 2n }); // DATA_CLASS_TENSOR
    const tensor = decodeProto(field(8));
    deepStrictEqual(tensor[0], { field: 1, wireType: 0, value: 7n }); // DT_STRING
    deepStrictEqual(tensor[1], { field: 2, wireType: 2, value: new Uint8Array(0) }); // shape []
    equal(new TextDecoder().decode(tensor[2]!.value as Uint8Array), "hi");
  });
});

Deno.test("tfevents: a corrupted byte anywhere in a record is detected", async () => {
  await withTempDir(async (dir) => {
    const w = await TfEventsWriter.create(dir);
    w.scalars(3, { "rollout/score/mean": 0.75 });
    await w.close();
    const good = await Deno.readFile(w.path);
    const start = 16 + 9 + 2 + TF_EVENTS_FILE_VERSION.length;
    for (let i = start; i < good.length; i++) {
      const bad = good.slice();
      bad[i]! ^= 0x10;
      const where = i < start + 12 ? /Length CRC/ : /Data CRC/;
      throws(() => parseTfEvents(bad), where, `byte ${i}`);
    }
    const bad = good.slice();
    bad[start + 14]! ^= 1;
    await Deno.writeFile(w.path, bad);
    await rejects(readTfEvents(w.path), (e: Error) => e.message.startsWith(`${w.path}: Data CRC`));
  });
});

Deno.test("tfevents: a truncated last record is ignored unless strict", () => {
  const a = frameRecord(new ProtoWriter().double(1, 1).varint(2, 1).finish());
  const b = frameRecord(new ProtoWriter().double(1, 2).varint(2, 2).finish());
  const both = new Uint8Array([...a, ...b]);
  for (const cut of [1, 5, 12, 15, b.length - 1]) {
    const part = both.subarray(0, a.length + cut);
    deepStrictEqual(parseTfEvents(part).map((e) => e.step), [1]);
    throws(() => parseTfEvents(part, { strict: true }), /Truncated/);
  }
  deepStrictEqual(parseTfEvents(both).map((e) => e.step), [1, 2]);
});

Deno.test("tfevents: restart marker, name collisions, and the hostname fallback", async () => {
  await withTempDir(async (dir) => {
    const opts = { now: () => 1234, hostname: "a/b" };
    const w1 = await TfEventsWriter.create(dir, opts);
    const w2 = await TfEventsWriter.create(dir, { ...opts, restartStep: 40 });
    await w1.close();
    await w2.close();
    equal(w1.path, `${dir}/events.out.tfevents.1234.a_b`);
    equal(w2.path, `${dir}/events.out.tfevents.1234.a_b.1`);
    const events = await readTfEvents(w2.path);
    deepStrictEqual(events[1], {
      wallTime: 1234,
      step: 40,
      sessionStart: true,
      values: {},
      texts: {},
    });
    // Without the sys permission the file name falls back to "agentrl" (and never prompts).
    const script = `${dir}/host.ts`;
    const module = new URL("../../lib/track/tfevents.ts", import.meta.url).href;
    await Deno.writeTextFile(
      script,
      `import { TfEventsWriter } from "${module}";
const w = await TfEventsWriter.create(${JSON.stringify(`${dir}/np`)});
console.log(w.path);
await w.close();`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-prompt", "--allow-read", `--allow-write=${dir}`, script],
      env: { NO_COLOR: "1" },
    }).output();
    equal(new TextDecoder().decode(out.stderr), "");
    ok(new TextDecoder().decode(out.stdout).trim().endsWith(".agentrl"));
  });
});

Deno.test("tfevents: TF2-style float tensors read as scalars", () => {
  const f32 = new Uint8Array(4);
  new DataView(f32.buffer).setFloat32(0, 0.5, true);
  const tensor = new ProtoWriter().varint(1, 1).bytes(2, new Uint8Array(0)).bytes(4, f32).finish();
  const value = new ProtoWriter().string(1, "loss").bytes(8, tensor).finish();
  const event = new ProtoWriter().double(1, 5).varint(2, 9).bytes(
    5,
    new ProtoWriter().bytes(1, value).finish(),
  ).finish();
  deepStrictEqual(parseTfEvents(frameRecord(event))[0]!.values, { loss: 0.5 });
});
