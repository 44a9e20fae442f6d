// Failures a user causes or meets, each one clean line: a refused write, a broken kernel library.
import { equal, match } from "node:assert/strict";
import { writeRefusal } from "../../lib/util/write_refusal.ts";

Deno.test("a failed write says who refused it, in the user's terms", () => {
  equal(
    writeRefusal(new Deno.errors.PermissionDenied("EACCES"), "/root/x"),
    "the operating system denies it (EACCES)",
  );
  // this test runs with write permission: a NotCapable error is then a path Deno guards
  match(
    writeRefusal(new Deno.errors.NotCapable("Requires all access"), "/proc/x"),
    /^Deno guards this path even where writing is allowed/,
  );
  equal(
    writeRefusal(new Deno.errors.AlreadyExists("exists"), "/tmp"),
    "it is a file, not a folder",
  );
  equal(writeRefusal(new Error("disk full"), "/tmp/x"), "disk full");
  equal(writeRefusal("odd", "/tmp/x"), "odd");
});

Deno.test("a kernel library that is not one is one clean line (status 1, no source location)", async () => {
  const main = new URL("../../lib/cli/main.ts", import.meta.url).pathname;
  const dir = await Deno.makeTempDir();
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", main, "train", `output_dir=${dir}/run`, "max_steps=1"],
    env: { AGENTRL_KERNELS_CPU: "/etc/hostname", NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  equal(out.code, 1, stderr);
  match(stderr, /^Could not open the cpu kernel library \/etc\/hostname: (?!\/etc\/hostname)\S/m);
  equal(/Could not open library: Could not open library/.test(stderr), false, stderr);
  equal(/\(at |file:\/\//.test(stderr), false, stderr);
  await Deno.remove(dir, { recursive: true });
});
