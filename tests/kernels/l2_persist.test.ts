// l2Persist on the CPU library: the window is recorded per context and cleared with null, the
// library keeps nothing (there is no cache to steer), and a freed tensor is refused without
// changing the window. The CUDA
// side (the set-aside, the GEMV's launch attribute, unchanged bits) is in emu.test.ts.
import assert from "node:assert/strict";
import { l2Persist, l2Window } from "../../ffi/mod.ts";
import { f32, openKernels } from "./_helpers.ts";

Deno.test("l2Persist: the CPU library keeps nothing; the window is per context until cleared", () => {
  using k = openKernels();
  using other = openKernels();
  using w = f32(k, [1, 2, 3, 4]);
  assert.equal(l2Window(k), null);
  assert.equal(l2Persist(k, w), 0);
  assert.equal(l2Window(k), w);
  assert.equal(l2Window(other), null, "one window a context");
  using v = f32(k, [5, 6]);
  v.free();
  assert.throws(() => l2Persist(k, v), /freed/);
  assert.equal(l2Window(k), w, "a refused call leaves the window as it was");
  assert.equal(l2Persist(k, null), 0);
  assert.equal(l2Window(k), null);
});
