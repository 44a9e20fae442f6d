// bench/gpu/primitives.cu (the GPU check's building-block ceilings) is real CUDA: nvcc compiles
// it for Hopper, where its bulk-copy ring runs, with no GPU needed.
import assert from "node:assert/strict";
import { findNvcc } from "../../kernels/build.ts";

const nvcc = await findNvcc();
const source = decodeURIComponent(
  new URL("../../bench/gpu/primitives.cu", import.meta.url).pathname,
);

Deno.test({
  name: `bench/gpu/primitives.cu compiles for sm_90${nvcc === null ? " (skipped: no nvcc)" : ""}`,
  ignore: nvcc === null,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "agentrl_primitives_" });
    try {
      const out = await new Deno.Command(nvcc!, {
        args: ["-std=c++17", "-arch=sm_90", "-c", source, "-o", `${dir}/primitives.o`],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const dec = new TextDecoder();
      assert.equal(
        out.code,
        0,
        `nvcc rejected primitives.cu:\n${dec.decode(out.stdout)}${dec.decode(out.stderr)}`,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
