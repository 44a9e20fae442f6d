// The folders a run writes to are made before the model loads; one that cannot be made is a
// RolloutConfigError naming its config key and path.
import assert from "node:assert/strict";
import { makeOutputFolders } from "../../lib/pipeline/output_folders.ts";
import { RolloutConfigError } from "../../lib/rollout/errors.ts";

Deno.test("makeOutputFolders makes nested folders, skips unset ones, names a path it cannot use", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_folders_" });
  try {
    makeOutputFolders([["output_dir", `${dir}/a/b`], ["render_save_dir", null], ["x", ""]]);
    assert.ok(Deno.statSync(`${dir}/a/b`).isDirectory);
    makeOutputFolders([["output_dir", `${dir}/a/b`]]); // an existing folder is fine
    await Deno.writeTextFile(`${dir}/file`, "not a folder");
    for (const path of [`${dir}/file`, `${dir}/file/sub`]) {
      assert.throws(
        () => makeOutputFolders([["output_dir", `${dir}/ok`], ["tracker_kwargs.log_dir", path]]),
        (e: Error) => {
          assert.ok(e instanceof RolloutConfigError, String(e));
          assert.match(e.message, /^tracker_kwargs\.log_dir .*file.* cannot be used as a folder/);
          return true;
        },
      );
    }
    assert.equal(await Deno.readTextFile(`${dir}/file`), "not a folder");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the folders a run made go again where still empty, unless kept; a folder that was there stays", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_folders_made_" });
  try {
    Deno.mkdirSync(`${dir}/there`);
    {
      using made = makeOutputFolders([
        ["output_dir", `${dir}/a/b`],
        ["render_save_dir", `${dir}/a/b/render`],
        ["tracker_kwargs.log_dir", `${dir}/there`],
        ["x", `${dir}/c/`],
      ]);
      assert.deepEqual(made.made, [`${dir}/a`, `${dir}/a/b`, `${dir}/a/b/render`, `${dir}/c`]);
      await Deno.writeTextFile(`${dir}/c/kept.txt`, "written");
    }
    // empty ones went (deepest first), the one holding a file and the one made before stay
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name).sort(), ["c", "there"]);
    {
      using made = makeOutputFolders([["output_dir", `${dir}/d`]]);
      made.keep();
    }
    assert.ok(Deno.statSync(`${dir}/d`).isDirectory);
    // a folder that cannot be made: those made before it in the same call go too
    await Deno.writeTextFile(`${dir}/file`, "x");
    assert.throws(() =>
      makeOutputFolders([["output_dir", `${dir}/e/f`], ["render_save_dir", `${dir}/file/g`]])
    );
    assert.throws(() => Deno.statSync(`${dir}/e`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
