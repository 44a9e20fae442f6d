// l2Persist on the CPU library: the regions are recorded per context and replaced by each call,
// the library keeps nothing (there is no cache to steer), and a refused call leaves the regions
// as they were. The CUDA side (the set-aside, the launches' windows, unchanged bits) is in
// emu.test.ts; the native argument checks are in errors.test.ts.
import assert from "node:assert/strict";
import { L2_MAX_REGIONS, l2Persist, l2Regions } from "../../ffi/mod.ts";
import { f32, openKernels } from "./_helpers.ts";

Deno.test("l2Persist: the CPU library keeps nothing; the regions are per context until replaced", () => {
  using k = openKernels();
  using other = openKernels();
  using w = f32(k, [1, 2, 3, 4]);
  using u = f32(k, [5, 6]);
  assert.deepEqual(l2Regions(k), []);
  assert.deepEqual(l2Persist(k, [w, u]), [0, 0]);
  assert.deepEqual(l2Regions(k), [w, u]);
  assert.deepEqual(l2Regions(other), [], "regions are a context's");
  using gone = f32(k, [7]);
  gone.free();
  assert.throws(() => l2Persist(k, [u, gone]), /freed/);
  assert.throws(
    () => l2Persist(k, [w, w]),
    /arl_l2_persist failed \(status 3\): arl_l2_persist: regions 0 and 1 overlap/,
  );
  assert.throws(
    () => l2Persist(k, new Array(L2_MAX_REGIONS + 1).fill(w)),
    /at most 64 regions, got 65/,
  );
  assert.deepEqual(l2Regions(k), [w, u], "a refused call leaves the regions as they were");
  assert.deepEqual(l2Persist(k, [u]), [0]);
  assert.deepEqual(l2Regions(k), [u], "each call replaces the last one's regions");
  assert.deepEqual(l2Persist(k, []), []);
  assert.deepEqual(l2Regions(k), []);
});
