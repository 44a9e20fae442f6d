// The CUDA library against the CPU one: the same exported ABI (nm), a clear
// "no CUDA device" KernelError on machines without a GPU (the CPU backend
// unaffected), and, where a GPU answers, every op within tolerance of the CPU
// result (bench/gpu/ops_compare.ts). Skips are visible in the test names.
import assert from "node:assert/strict";
import { add, KernelError, Kernels, libraryPath, Tensor } from "../../ffi/mod.ts";
import { SYMBOLS } from "../../ffi/symbols.ts";
import { findNvcc } from "../../kernels/build.ts";
import { compareOps, formatTable } from "../../bench/gpu/ops_compare.ts";

const CPU_LIB = libraryPath("cpu");
const CUDA_LIB = libraryPath("cuda");
const cudaBuilt = (() => {
  try {
    return Deno.statSync(CUDA_LIB).isFile;
  } catch {
    return false;
  }
})();
const nvcc = await findNvcc();
const cudaAvailable = cudaBuilt && Kernels.available("cuda");

if (!cudaBuilt && nvcc === null) {
  console.log(
    `cuda_backend.test.ts: ${CUDA_LIB} is not built and there is no nvcc: CUDA checks skipped`,
  );
}

/** The `arl_` functions a shared library defines (`nm -D --defined-only`). */
async function exportedArl(path: string): Promise<string[]> {
  const out = await new Deno.Command("nm", { args: ["-D", "--defined-only", path] }).output();
  assert.ok(out.success, `nm -D ${path} failed: ${new TextDecoder().decode(out.stderr)}`);
  const names = new TextDecoder().decode(out.stdout).split("\n")
    .map((line) => line.trim().split(/\s+/).at(-1) ?? "")
    .filter((name) => name.startsWith("arl_"));
  return [...new Set(names)].sort();
}

function assertSameSet(actual: string[], expected: string[], what: string): void {
  const missing = expected.filter((s) => !actual.includes(s));
  const extra = actual.filter((s) => !expected.includes(s));
  assert.deepEqual({ missing, extra }, { missing: [], extra: [] }, what);
}

Deno.test({
  name: cudaBuilt || nvcc !== null
    ? "the CUDA library exports exactly the CPU library's arl_ symbols (and ffi/symbols.ts's)"
    : "the CUDA library exports the CPU library's symbols (skipped: not built, no nvcc)",
  ignore: !cudaBuilt && nvcc === null,
  async fn() {
    assert.ok(
      cudaBuilt,
      `${CUDA_LIB} is missing although nvcc (${nvcc}) is available: \`deno task build\` should build it`,
    );
    const [cpu, cuda] = await Promise.all([exportedArl(CPU_LIB), exportedArl(CUDA_LIB)]);
    assert.ok(cpu.length > 30, `only ${cpu.length} arl_ symbols in ${CPU_LIB}`);
    assertSameSet(cuda, cpu, `arl_ symbols of ${CUDA_LIB} vs ${CPU_LIB}`);
    assertSameSet(cpu, Object.keys(SYMBOLS).sort(), `arl_ symbols of ${CPU_LIB} vs ffi/symbols.ts`);
  },
});

Deno.test({
  name: !cudaBuilt
    ? "without a CUDA device, opening a cuda context is a KernelError (skipped: library not built)"
    : cudaAvailable
    ? "without a CUDA device, opening a cuda context is a KernelError (skipped: a device is present)"
    : "without a CUDA device, opening a cuda context is a KernelError and the CPU path still works",
  ignore: !cudaBuilt || cudaAvailable,
  fn() {
    for (let i = 0; i < 2; i++) {
      assert.throws(() => Kernels.open({ device: "cuda" }), (e: unknown) => {
        assert.ok(e instanceof KernelError, `expected a KernelError, got ${e}`);
        assert.match(e.message, /no CUDA device/);
        return true;
      });
    }
    using k = Kernels.open({ threads: 2 });
    using a = Tensor.from(k, Float32Array.of(1, 2, 3));
    using b = Tensor.from(k, Float32Array.of(4, 5, 6.5));
    using out = Tensor.from(k, Float32Array.of(NaN, NaN, NaN));
    add(k, out, a, b);
    assert.deepEqual(Array.from(out.read()), [5, 7, 9.5]);
  },
});

Deno.test({
  name: `the CUDA backend matches the CPU backend on every op${
    cudaAvailable ? "" : " (skipped: no CUDA device)"
  }`,
  ignore: !cudaAvailable,
  fn() {
    using cpu = Kernels.open();
    using cuda = Kernels.open({ device: "cuda" });
    const rows = compareOps(cpu, cuda);
    const failed = rows.filter((r) => !r.ok);
    assert.equal(
      failed.length,
      0,
      `${failed.length} of ${rows.length} outputs out of tolerance:\n${formatTable(failed)}`,
    );
    assert.ok(rows.length > 100, `only ${rows.length} outputs compared`);
  },
});
