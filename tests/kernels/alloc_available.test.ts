/**
 * The CPU library's arl_alloc refuses a block larger than the memory the system can give
 * (MemAvailable and SwapFree): its zero-fill would otherwise commit it page by page until the out-of-memory
 * killer ended the process. Run in a child process whose AGENTRL_MEMINFO file gives 60 + 40 MiB, so
 * that other tests' allocations are not affected.
 */
import assert from "node:assert/strict";

const FFI = new URL("../../ffi/mod.ts", import.meta.url).href;

Deno.test("arl_alloc refuses more than the memory available with ARL_ERR_ALLOC; below it allocates", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_meminfo_" });
  try {
    const meminfo = `${dir}/meminfo`;
    await Deno.writeTextFile(
      meminfo,
      "MemTotal:       24684136 kB\nMemFree:        1000 kB\nMemAvailable:     61440 kB\nSwapFree:        40960 kB\n",
    );
    const script = `
      import { Kernels, Tensor, KernelError } from "${FFI}";
      const k = Kernels.open({ threads: 1 });
      const small = new Tensor(k, [20 * 2 ** 20], "f32"); // 80 MiB: fits
      console.log("small", small.view()[small.size - 1]);
      small.free();
      try {
        new Tensor(k, [32 * 2 ** 20], "f32"); // 128 MiB
        console.log("large allocated");
      } catch (e) {
        console.log("large", e instanceof KernelError ? e.status : "other", String(e));
      }`;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", script],
      env: { AGENTRL_MEMINFO: meminfo, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, text);
    assert.match(text, /^small 0$/m);
    assert.match(
      text,
      /^large 4 .*arl_alloc: out of memory allocating 134217728 bytes: the system has 104857600 bytes available \(MemAvailable and SwapFree, within the memory cgroup's limit\)/m,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
