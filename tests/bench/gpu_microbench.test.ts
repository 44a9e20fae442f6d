// The GPU check's standalone microbenchmarks are real CUDA: nvcc compiles primitives.cu and
// decode_structure.cu for Hopper (where primitives.cu's bulk-copy ring runs) with no GPU needed,
// and decode_structure.cu runs in the CUDA emulator with its regions shrunk, where every
// structure's checksum must come out right (a kernel that skipped or re-read a word would not).
import assert from "node:assert/strict";
import { findNvcc } from "../../kernels/build.ts";
import { translateCuda } from "../../kernels/emu/translate.ts";

const nvcc = await findNvcc();
const path = (rel: string) => decodeURIComponent(new URL(rel, import.meta.url).pathname);
const linuxX64 = Deno.build.os === "linux" && Deno.build.arch === "x86_64";

async function run(cmd: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped" })
    .output();
  const dec = new TextDecoder();
  return { code: out.code, text: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

async function inTempDir(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_microbench_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

for (const file of ["primitives.cu", "decode_structure.cu"]) {
  Deno.test({
    name: `bench/gpu/${file} compiles for sm_90${nvcc === null ? " (skipped: no nvcc)" : ""}`,
    ignore: nvcc === null,
    fn: () =>
      inTempDir(async (dir) => {
        const source = path(`../../bench/gpu/${file}`);
        const { code, text } = await run(nvcc!, [
          "-std=c++17",
          "-arch=sm_90",
          "-c",
          source,
          "-o",
          `${dir}/out.o`,
        ]);
        assert.equal(code, 0, `nvcc rejected ${file}:\n${text}`);
      }),
  });
}

Deno.test({
  name: "bench/gpu/decode_structure.cu: every structure's sum is right in the CUDA emulator" +
    (linuxX64 ? "" : " (skipped: the emulator's fibers need x86-64 Linux)"),
  ignore: !linuxX64,
  fn: () =>
    inTempDir(async (dir) => {
      const src = await Deno.readTextFile(path("../../bench/gpu/decode_structure.cu"));
      await Deno.writeTextFile(
        `${dir}/ds.cpp`,
        translateCuda(src, "bench/gpu/decode_structure.cu"),
      );
      const emu = path("../../kernels/emu/");
      const built = await run(Deno.env.get("CXX") ?? "g++", [
        "-std=c++17",
        "-O1",
        `-I${emu}`,
        `-I${path("../../bench/gpu/")}`,
        `${dir}/ds.cpp`,
        `${emu}emu.cpp`,
        "-o",
        `${dir}/ds`,
      ]);
      assert.equal(built.code, 0, `compiling decode_structure.cu for the emulator:\n${built.text}`);
      // 7 "SMs": the one-block-per-SM shares are uneven; 64 times smaller: each block still
      // loops past its first batch
      const { code, text } = await run(`${dir}/ds`, ["--shrink", "64", "--json", `${dir}/r.json`], {
        AGENTRL_CUDA_EMU_SMS: "7",
      });
      assert.equal(code, 0, `decode_structure failed:\n${text}`);
      const result = JSON.parse(await Deno.readTextFile(`${dir}/r.json`));
      assert.deepEqual(result.wrong, []);
      const structures = Object.keys(result).filter((k) =>
        k.endsWith(", us a token") && !k.startsWith("bound")
      );
      assert.equal(structures.length, 16, `expected 16 structures timed:\n${text}`);
      for (const name of structures) assert.ok(result[name] > 0, `${name}: ${result[name]}`);
    }),
});
