// Tensor.viewOf: a tensor over part of another's memory (named parameters in a
// flat buffer, reshapes) that kernels read and write in place, that keeps its
// parent alive and stops working once the parent is freed.
import assert from "node:assert/strict";
import { fill, Kernels, linearForward, Tensor } from "../../ffi/mod.ts";
import { f32, openKernels } from "./_helpers.ts";

Deno.test("Tensor.viewOf shares memory at an offset; kernels write through views", () => {
  using k = openKernels();
  using flat = f32(k, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const w = Tensor.viewOf(flat, 2 * 4, [2, 3]); // elements 2..7
  assert.ok(w.isView && !flat.isView);
  assert.deepEqual(w.shape, [2, 3]);
  assert.equal(w.byteSize, 24);
  assert.deepEqual(Array.from(w.view()), [2, 3, 4, 5, 6, 7]);
  // a kernel writes into the parent's memory through the view, and nowhere else
  using x = f32(k, [1, 1, 1], [1, 3]);
  const y = Tensor.viewOf(flat, 8 * 4, [1, 2]); // elements 8..9
  linearForward(k, y, x, w);
  assert.deepEqual(Array.from(flat.view()), [0, 1, 2, 3, 4, 5, 6, 7, 9, 18]);
  fill(k, Tensor.viewOf(flat, 0, [2]), -1);
  assert.deepEqual(Array.from(flat.view().slice(0, 3)), [-1, -1, 2]);
  // a view of a view, and a view with another dtype of the same width
  const inner = Tensor.viewOf(w, 4 * 4, [2]); // w's elements 4..5 = flat's 6..7
  assert.deepEqual(Array.from(inner.view()), [6, 7]);
  const bits = Tensor.viewOf(flat, 2 * 4, [1], "i32");
  assert.equal(bits.dtype, "i32");
  assert.equal(bits.view()[0], 0x40000000); // 2.0f
});

Deno.test("Tensor.viewOf checks bounds and alignment; views die with their parent and never free it", () => {
  using k = openKernels();
  const flat = new Tensor(k, [8], "f32");
  assert.throws(() => Tensor.viewOf(flat, 4, [8]), /does not fit in its parent of 32 bytes/);
  assert.throws(() => Tensor.viewOf(flat, 2, [1]), /non-negative multiple of 4/);
  assert.throws(() => Tensor.viewOf(flat, -4, [1]), /non-negative multiple of 4/);
  assert.throws(() => Tensor.viewOf(flat, 0, [0]), /positive integers/);
  // a failed view leaves the next allocation an ordinary owning tensor
  using owner = new Tensor(k, [2], "f32");
  assert.ok(!owner.isView);

  const v = Tensor.viewOf(flat, 0, [2, 4]);
  v.free(); // drops the view only
  assert.ok(!v.alive && flat.alive);
  flat.view()[0] = 3;
  assert.equal(flat.view()[0], 3);
  const v2 = Tensor.viewOf(flat, 16, [4]);
  const v3 = Tensor.viewOf(v2, 0, [2]);
  flat.free();
  assert.ok(!v2.alive && !v3.alive);
  assert.throws(() => v2.ptr, /parent of this f32 view \[4\] was freed/);
  assert.throws(() => v3.view(), /was freed/);
  assert.throws(() => Tensor.viewOf(flat, 0, [1]), /was freed/);
});

Deno.test("Tensor.writeAsync writes like write (at once on the CPU) and checks its data the same way", () => {
  using k = openKernels();
  using t = new Tensor(k, [3], "i32");
  const data = Int32Array.of(4, 5, 6);
  t.writeAsync(data);
  data.fill(0);
  assert.deepEqual(Array.from(t.read()), [4, 5, 6]);
  assert.throws(
    () => t.writeAsync(new Float32Array(3) as never),
    /writeAsync\(\) needs a Int32Array of 3 elements for this i32 tensor, got 3 Float32Array/,
  );
  // the native entry checks its arguments like arl_copy
  assert.throws(
    () => k.check("arl_upload_async", k.sym.arl_upload_async(k.ctx, t.ptr, null, 12n)),
    /arl_upload_async: src must not be null/,
  );
});

Deno.test("Tensor.writeAlternating writes like write on the CPU; the native entry checks its parity, fresh and size", () => {
  using k = openKernels();
  using t = new Tensor(k, [3], "i32");
  t.writeAlternating(Int32Array.of(7, 8, 9), 1, false);
  assert.deepEqual(Array.from(t.read()), [7, 8, 9]);
  const call = (bytes: bigint, parity: number, fresh: number, src: Uint8Array | null) => () =>
    k.check(
      "arl_upload_alternating",
      k.sym.arl_upload_alternating!(
        k.ctx,
        t.ptr,
        src === null ? null : Deno.UnsafePointer.of(src as BufferSource),
        bytes,
        parity,
        fresh,
      ),
    );
  const src = new Uint8Array(70000);
  assert.throws(call(12n, 2, 0, src), /arl_upload_alternating: parity must be 0 or 1, got 2/);
  assert.throws(call(12n, 0, -1, src), /arl_upload_alternating: fresh must be 0 or 1, got -1/);
  assert.throws(call(12n, 0, 0, null), /arl_upload_alternating: src must not be null/);
  assert.throws(call(70000n, 0, 0, src), /bytes must be at most 65536, got 70000/);
  call(12n, 0, 1, Uint8Array.of(1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0))();
  assert.deepEqual(Array.from(t.read()), [1, 2, 3]);
});

Deno.test("CPU tensors: read, write and writeAsync copy (a view of a view too), also after their context closes", () => {
  const k = Kernels.open({ threads: 1 });
  const t = Tensor.from(k, Int32Array.from({ length: 8 }, (_, i) => i), [8]);
  const v = Tensor.viewOf(t, 8, [4]) as Tensor<"i32">; // elements 2..5
  assert.deepEqual(v.read(), Int32Array.of(2, 3, 4, 5));
  v.writeAsync(Int32Array.of(-2, -3, -4, -5));
  assert.deepEqual(t.read(), Int32Array.of(0, 1, -2, -3, -4, -5, 6, 7));
  const out = new Int32Array(4);
  assert.equal(v.read(out), out);
  k.close(); // tensors own their memory
  v.write(Int32Array.of(9, 9, 9, 9));
  assert.deepEqual(t.read(), Int32Array.of(0, 1, 9, 9, 9, 9, 6, 7));
  t.free();
  assert.throws(() => v.read(), /parent of this i32 view \[4\] was freed/);
});
