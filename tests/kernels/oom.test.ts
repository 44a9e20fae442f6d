// Out of memory must be ARL_ERR_ALLOC, never an abort (agentrl.h: "Native code
// ... never aborts the process"). A small C++ harness (oom_harness.cpp) links
// the built library, caps its own address space so that a kernel's scratch
// allocation fails, and prints the status; run as a subprocess so an abort
// cannot take the test runner down.
import assert from "node:assert/strict";
import { libraryPath } from "../../ffi/mod.ts";

const linux = Deno.build.os === "linux";
const canRun = Deno.permissions.querySync({ name: "run" }).state === "granted" &&
  Deno.permissions.querySync({ name: "write" }).state === "granted";

let harness: Promise<string> | null = null;

/** Compiles the harness once (g++ or $CXX) into a temporary folder. */
function buildHarness(): Promise<string> {
  harness ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "agentrl_oom_" });
    const lib = libraryPath("cpu");
    const libDir = lib.slice(0, lib.lastIndexOf("/"));
    const libFile = lib.slice(lib.lastIndexOf("/") + 1);
    const exe = `${dir}/oom_harness`;
    const src = decodeURIComponent(new URL("./oom_harness.cpp", import.meta.url).pathname);
    const include = decodeURIComponent(new URL("../../kernels/include", import.meta.url).pathname);
    const out = await new Deno.Command(Deno.env.get("CXX") ?? "g++", {
      args: [
        "-std=c++17",
        "-O1",
        `-I${include}`,
        src,
        "-o",
        exe,
        `-L${libDir}`,
        `-l:${libFile}`,
        `-Wl,-rpath,${libDir}`,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(
      out.success,
      `compiling the harness failed:\n${new TextDecoder().decode(out.stderr)}`,
    );
    return exe;
  })();
  return harness;
}

async function runCase(name: string): Promise<{ code: number; text: string }> {
  const exe = await buildHarness();
  const out = await new Deno.Command(exe, { args: [name], stdout: "piped", stderr: "piped" })
    .output();
  const td = new TextDecoder();
  return { code: out.code, text: td.decode(out.stdout) + td.decode(out.stderr) };
}

Deno.test({
  name: "out of memory outside a parallel region: logprob forward returns ARL_ERR_ALLOC",
  ignore: !linux || !canRun,
  async fn() {
    const r = await runCase("logprob");
    assert.equal(r.code, 0, r.text);
    assert.match(r.text, /^logprob: status 4 \(arl_logprob_forward: out of memory\)/);
  },
});

// Scratch buffers are allocated before OpenMP parallel regions: an exception can
// not leave a region, so allocating inside one turned out-of-memory into
// std::terminate (exit 134) instead of ARL_ERR_ALLOC. These cases guard that.
Deno.test({
  name: "out of memory inside a parallel region returns ARL_ERR_ALLOC instead of aborting",
  ignore: !linux || !canRun,
  async fn() {
    for (const name of ["decode", "sample", "attention", "rope"]) {
      const r = await runCase(name);
      assert.equal(r.code, 0, `${name}: the process died (exit ${r.code}): ${r.text}`);
      assert.match(r.text, new RegExp(`^${name}: status 4 \\(arl_\\w+: out of memory\\)`));
    }
  },
});
