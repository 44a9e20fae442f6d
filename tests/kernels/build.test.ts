// The kernel build's scheduler: costliest objects first on a fixed number of processes, and
// a failed compile stops new ones without abandoning those running.
import assert from "node:assert/strict";
import { buildPlans, type CompileJob, includedBytes } from "../../kernels/build.ts";

const job = (name: string, weight: number, log: string[], fail = false): CompileJob => ({
  weight,
  run: async () => {
    log.push(`start ${name}`);
    await new Promise((r) => setTimeout(r, 5));
    log.push(`end ${name}`);
    if (fail) throw new Error(`${name} failed`);
  },
});

Deno.test("build: objects of every library compile costliest first, then each library links", async () => {
  const log: string[] = [];
  const plans = [
    { jobs: [job("a", 1, log), job("b", 30, log)], link: () => Promise.resolve(true) },
    { jobs: [job("c", 20, log)], link: () => Promise.resolve(false) },
  ];
  assert.deepEqual(await buildPlans(plans, 1), [true, false]);
  assert.deepEqual(log, ["start b", "end b", "start c", "end c", "start a", "end a"]);
});

Deno.test("build: after a failed compile that library starts no new one and does not link; the others build and link", async () => {
  const log: string[] = [];
  const linked: string[] = [];
  const plans = [
    {
      jobs: [job("x", 5, log, true), job("y", 2, log)],
      link: () => Promise.resolve(!!linked.push("first")),
    },
    {
      jobs: [job("z", 4, log), job("w", 1, log)],
      link: () => Promise.resolve(!!linked.push("second")),
    },
  ];
  await assert.rejects(buildPlans(plans, 2), /x failed/);
  // x and z run at once; x fails, so y is skipped; z and w finish
  assert.deepEqual(log.slice(0, 2), ["start x", "start z"]);
  assert.deepEqual(log.toSorted(), ["end w", "end x", "end z", "start w", "start x", "start z"]);
  assert.deepEqual(linked, ["second"]);
});

Deno.test("build: a source's cost counts each local header it includes once", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/h.cuh`, '#include "h.cuh"\n// header\n');
    await Deno.writeTextFile(
      `${dir}/a.cu`,
      '#include "h.cuh"\n#include "h.cuh"\n#include <cstdio>\n',
    );
    const header = '#include "h.cuh"\n// header\n'.length;
    const source = '#include "h.cuh"\n#include "h.cuh"\n#include <cstdio>\n'.length;
    assert.equal(await includedBytes(new URL(`file://${dir}/a.cu`), new Set()), source + header);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
