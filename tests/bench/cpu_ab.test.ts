/** bench/cpu_ab.ts: its cases run on a library, and its comparison tells same bits from different. */
import { equal, ok, throws } from "node:assert/strict";
import { type AbCase, cases, openCpuLibrary, runCase } from "../../bench/cpu_ab.ts";
import { libraryPath } from "../../ffi/library.ts";

Deno.test("cpu_ab: one library against itself gives the same bits; a differing or missing output is caught", () => {
  const lib = openCpuLibrary(libraryPath("cpu"));
  const other = openCpuLibrary(libraryPath("cpu"));
  try {
    const rope = cases(["rope"]).find((c) => c.name.includes("decode rows"))!;
    const same = runCase([lib, lib], { ...rope, reps: 2 });
    ok(same.sameBits, same.name);
    ok(same.oldMs > 0 && same.newMs > 0);
    // an output that depends on which library ran
    const out = new Float32Array(4);
    const which: AbCase = {
      ...rope,
      reps: 1,
      outputs: [out],
      run: (l) => (out.fill(l === lib ? 1 : 2), 0),
    };
    equal(runCase([lib, other], which).sameBits, false);
    // the second library writes nothing: what the first left behind must not count as its output
    const lazy: AbCase = { ...rope, reps: 1, run: (l) => l === lib ? rope.run(l) : 0 };
    equal(runCase([lib, other], lazy).sameBits, false);
    // a failed call is an error naming the case
    throws(
      () => runCase([lib, lib], { ...rope, reps: 1, run: () => 3 }),
      /decode rows.*library 1 returned 3/,
    );
  } finally {
    lib.sym.arl_ctx_destroy(lib.ctx);
    other.sym.arl_ctx_destroy(other.ctx);
  }
});
