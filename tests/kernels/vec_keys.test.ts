// The decode attention's key loops (vdot_keys, vaxpy_keys) give the same bits as one vdot or
// vaxpy a key: a C++ harness compiled with kernels/cpu/vec_math.cpp under the library's own
// flags, run with AVX2 and with the portable path (AGENTRL_PORTABLE=1).
import assert from "node:assert/strict";
import { CXXFLAGS } from "../../kernels/build.ts";

const canRun = Deno.permissions.querySync({ name: "run" }).state === "granted" &&
  Deno.permissions.querySync({ name: "write" }).state === "granted";
const path = (rel: string) => decodeURIComponent(new URL(rel, import.meta.url).pathname);

Deno.test({
  name: "vdot_keys and vaxpy_keys equal vdot and vaxpy once a key, bit for bit",
  ignore: Deno.build.os !== "linux" || !canRun,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "agentrl_vec_keys_" });
    try {
      const exe = `${dir}/vec_keys`;
      const cpu = path("../../kernels/cpu");
      const built = await new Deno.Command(Deno.env.get("CXX") ?? "g++", {
        args: [
          ...CXXFLAGS.filter((f) => f !== "-fvisibility=hidden" && f !== "-fPIC"),
          `-I${cpu}`,
          `-I${path("../../kernels/include")}`,
          `-I${path("../../kernels/common")}`,
          path("./vec_keys_harness.cpp"),
          `${cpu}/vec_math.cpp`,
          "-o",
          exe,
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.ok(built.success, new TextDecoder().decode(built.stderr));
      for (const portable of ["0", "1"]) {
        const out = await new Deno.Command(exe, {
          env: { AGENTRL_PORTABLE: portable },
          stdout: "piped",
          stderr: "piped",
        }).output();
        const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
        assert.equal(out.code, 0, `AGENTRL_PORTABLE=${portable}: ${text}`);
        assert.match(text, /^compared 1\d{3}, differ 0$/m);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
