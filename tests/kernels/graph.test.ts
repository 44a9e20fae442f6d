// Kernel graphs on the CPU library: it has none, says so with ARL_ERR_UNSUPPORTED,
// and the decode path that uses graphs on CUDA runs its calls directly instead.
// (Recording and replaying on a GPU: bench/gpu/ops_compare.ts, "graph replay".)
import assert from "node:assert/strict";
import { KernelError, KernelGraph, Kernels } from "../../ffi/mod.ts";
import { DecodeGraphs } from "../../lib/model/_decode_graphs.ts";

const UNSUPPORTED = 7;

Deno.test("the CPU library has no graphs: arl_graph_begin is ARL_ERR_UNSUPPORTED with a reason", () => {
  using k = Kernels.open({ threads: 1 });
  assert.equal(k.sym.arl_graph_begin(k.ctx), UNSUPPORTED);
  const msg = Deno.UnsafePointerView.getCString(k.sym.arl_last_error(k.ctx)!);
  assert.match(msg, /arl_graph_begin: graphs are a CUDA feature/);
  assert.equal(k.sym.arl_graph_end(k.ctx, null), UNSUPPORTED);
  assert.equal(k.sym.arl_graph_launch(k.ctx, null), 1, "a null graph is ARL_ERR_NULL");
  k.sym.arl_graph_destroy(null); // a no-op, not a crash
  assert.equal(KernelGraph.supported(k), false);
  assert.throws(() => KernelGraph.record(k, () => {}), (e: unknown) => {
    assert.ok(e instanceof KernelError);
    assert.equal(e.status, UNSUPPORTED);
    return true;
  });
});

Deno.test("DecodeGraphs runs the body directly when graphs are not available", () => {
  using k = Kernels.open({ threads: 1 });
  using graphs = new DecodeGraphs(k);
  let calls = 0;
  for (let i = 0; i < 5; i++) graphs.run("same shape", () => calls++);
  assert.equal(calls, 5);
  assert.equal(graphs.size, 0);
});
