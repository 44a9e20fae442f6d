/** bench/cpu_ab.ts: its cases run on a library, and its comparison tells same bits from different. */
import { equal, ok, throws } from "node:assert/strict";
import { cases, openCpuLibrary, runCase } from "../../bench/cpu_ab.ts";
import { libraryPath } from "../../ffi/library.ts";

Deno.test("cpu_ab: one library against itself gives the same bits; a case whose output differs is caught", () => {
  const lib = openCpuLibrary(libraryPath("cpu"));
  const rope = cases(["rope"]).find((c) => c.name.includes("decode rows"))!;
  const same = runCase([lib, lib], { ...rope, reps: 2 });
  ok(same.sameBits, same.name);
  ok(same.oldMs > 0 && same.newMs > 0);
  // an output that depends on which library ran last
  const out = new Float32Array(4);
  const which = {
    ...rope,
    reps: 1,
    output: () => out,
    run: (l: typeof lib) => (out[0] = l === lib ? 1 : 2, 0),
  };
  equal(runCase([lib, openCpuLibrary(libraryPath("cpu"))], which).sameBits, false);
  // a failed call is an error naming the case
  throws(
    () => runCase([lib, lib], { ...rope, reps: 1, run: () => 3 }),
    /decode rows.*library 1 returned 3/,
  );
  lib.sym.arl_ctx_destroy(lib.ctx);
});
