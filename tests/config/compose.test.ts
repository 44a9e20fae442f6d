import { deepStrictEqual, equal, match, ok } from "node:assert/strict";
import { composeConfig, type GroupOverride } from "../../lib/config/compose.ts";
import { configError, writeTree } from "../_helpers.ts";

async function compose(
  files: Record<string, string>,
  name = "main",
  groupOverrides: GroupOverride[] = [],
) {
  const dir = await writeTree(files);
  return await composeConfig({ configDir: dir, configName: name, groupOverrides });
}

Deno.test("_self_ is implicitly last: the primary config overrides its defaults", async () => {
  const c = await compose({
    "main.yaml": "defaults:\n  - db: mysql\nport: 1\ndb:\n  user: me\n",
    "db/mysql.yaml": "host: localhost\nuser: root\n",
  });
  deepStrictEqual(c.value, { db: { host: "localhost", user: "me" }, port: 1 });
  deepStrictEqual(c.choices, { db: "mysql" });
});

Deno.test("an explicit _self_ first lets the defaults override the primary config", async () => {
  const c = await compose({
    "main.yaml": "defaults:\n  - _self_\n  - db: mysql\ndb:\n  user: me\n",
    "db/mysql.yaml": "user: root\n",
  });
  deepStrictEqual(c.value, { db: { user: "root" } });
});

Deno.test("merge: mappings merge deeply, lists replace, scalars last-wins, ??? keeps a value", async () => {
  const c = await compose({
    "main.yaml": "defaults:\n  - base\na:\n  b: 2\n  list: [9]\n  keep: ???\n",
    "base.yaml": "a:\n  b: 1\n  c: 3\n  list: [1, 2, 3]\n  keep: kept\n",
  });
  deepStrictEqual(c.value, { a: { b: 2, c: 3, list: [9], keep: "kept" } });
  ok(!("defaults" in c.value));
});

Deno.test("merge: a mapping merged onto a ${a.b} reference merges into a copy of its target", async () => {
  const c = await compose({
    "main.yaml": "defaults:\n  - base\n  - _self_\ncustom_envs:\n  Lake:\n    max_steps: 5\n",
    "base.yaml": "custom_env:\n  Lake:\n    env_type: frozen_lake\n    max_steps: 20\n" +
      "custom_envs:\n  Lake: ${custom_env.Lake}\n  Other: ${custom_env.Lake}\n",
  });
  deepStrictEqual(c.value.custom_envs, {
    Lake: { env_type: "frozen_lake", max_steps: 5 },
    Other: "${custom_env.Lake}",
  });
  deepStrictEqual(c.value.custom_env, { Lake: { env_type: "frozen_lake", max_steps: 20 } });
  match(c.origins.get(["custom_envs", "Lake", "env_type"])?.source ?? "", /base\.yaml$/);
  match(c.origins.get(["custom_envs", "Lake", "max_steps"])?.source ?? "", /main\.yaml$/);
});

Deno.test("packages: group default, @pkg relative, @_global_, @_here_, # @package header", async () => {
  const c = await compose({
    "main.yaml": [
      "defaults:",
      "  - db@src: mysql",
      "  - db@_global_.dst: mysql",
      "  - lib/shared@_here_",
      "  - server/apache",
      "  - env: prod",
      "",
    ].join("\n"),
    "db/mysql.yaml": "port: 3306\n",
    "lib/shared.yaml": "shared: true\n",
    "server/apache.yaml": "defaults:\n  - db: sqlite\nname: apache\n",
    "server/db/sqlite.yaml": "file: x.db\n",
    "env/prod.yaml": "# @package _global_\nmode: prod\n",
  });
  deepStrictEqual(c.value, {
    src: { port: 3306 },
    dst: { port: 3306 },
    shared: true,
    server: { db: { file: "x.db" }, name: "apache" },
    mode: "prod",
  });
});

Deno.test("a package given in the defaults list wins over the # @package header", async () => {
  const c = await compose({
    "main.yaml": "defaults:\n  - env@here_pkg: prod\n",
    "env/prod.yaml": "# @package _global_\nmode: prod\n",
  });
  deepStrictEqual(c.value, { here_pkg: { mode: "prod" } });
});

Deno.test("the header's _group_ and _name_ expand", async () => {
  const c = await compose({
    "main.yaml": "defaults:\n  - db: mysql\n",
    "db/mysql.yaml": "# @package _group_._name_\nport: 1\n",
  });
  deepStrictEqual(c.value, { db: { mysql: { port: 1 } } });
});

Deno.test("ROLL's relative form ../config/traj_envs@_here_ resolves against the including file", async () => {
  const c = await compose(
    {
      "examples/run/agent.yaml":
        "defaults:\n  - ../config/traj_envs@_here_\nmax_tokens_per_step: 64\n",
      "examples/config/traj_envs.yaml":
        "max_tokens_per_step: 128\ncustom_env:\n  A: {env_type: x}\n",
    },
    "examples/run/agent",
  );
  deepStrictEqual(c.value, { max_tokens_per_step: 64, custom_env: { A: { env_type: "x" } } });
  ok(c.files[0]!.endsWith("examples/config/traj_envs.yaml"));
});

Deno.test("override in a defaults list replaces a group chosen deeper in the tree", async () => {
  const c = await compose({
    "main.yaml": "defaults:\n  - base\n  - override db: sqlite\n",
    "base.yaml": "defaults:\n  - db: mysql\n",
    "db/mysql.yaml": "kind: mysql\n",
    "db/sqlite.yaml": "kind: sqlite\n",
  });
  deepStrictEqual(c.value, { db: { kind: "sqlite" } });
  equal(c.choices.db, "sqlite");
});

Deno.test("an override in a later entry's subtree changes a group chosen earlier (Hydra's experiment pattern)", async () => {
  const files = {
    "main.yaml": "defaults:\n  - db: mysql\n  - _self_\nport: 1\n",
    "db/mysql.yaml": "kind: mysql\n",
    "db/sqlite.yaml": "kind: sqlite\n",
    "experiment/fast.yaml": "# @package _global_\ndefaults:\n  - override /db: sqlite\nport: 2\n",
    "srv/s.yaml": "defaults:\n  - override /db: sqlite\nthreads: 4\n",
  };
  // +experiment=fast on the command line, appended after main's own content
  const c = await compose(files, "main", [
    { kind: "append", group: "experiment", option: "fast", text: "+experiment=fast" },
  ]);
  deepStrictEqual(c.value, { db: { kind: "sqlite" }, port: 2 });
  equal(c.choices.db, "sqlite");
  // a later sibling in the same list
  const sibling = await compose({
    ...files,
    "main.yaml": "defaults:\n  - db: mysql\n  - srv: s\n",
  });
  deepStrictEqual(sibling.value, { db: { kind: "sqlite" }, srv: { threads: 4 } });
  // the command line still wins over both
  const cli = await compose(files, "main", [
    { kind: "append", group: "experiment", option: "fast", text: "+experiment=fast" },
    { kind: "set", group: "db", option: "mysql", text: "db=mysql" },
  ]);
  deepStrictEqual(cli.value, { db: { kind: "mysql" }, port: 2 });
});

Deno.test("optional skips a missing option; null skips the group; lists load several options", async () => {
  const c = await compose({
    "main.yaml": "defaults:\n  - optional extra: missing\n  - db: null\n  - plugins: [a, b]\n",
    "extra/other.yaml": "x: 1\n",
    "db/mysql.yaml": "kind: mysql\n",
    "plugins/a.yaml": "a: 1\nshared: a\n",
    "plugins/b.yaml": "b: 2\nshared: b\n",
  });
  deepStrictEqual(c.value, { plugins: { a: 1, b: 2, shared: "b" } });
});

Deno.test("a missing option names the group, lists the options and suggests one", async () => {
  const e = await configError(() =>
    compose({
      "main.yaml": "defaults:\n  - db: mysq\n",
      "db/mysql.yaml": "kind: mysql\n",
      "db/sqlite.yaml": "kind: sqlite\n",
    })
  );
  match(e.message, /Could not find 'mysq' in config group 'db'/);
  equal(e.details.expected, "one of: mysql, sqlite");
  equal(e.details.hint, "did you mean 'mysql'?");
  match(e.details.origin?.source ?? "", /main\.yaml$/);
  equal(e.details.origin?.line, 2);
});

Deno.test("a missing primary config and a missing plain config are clear errors", async () => {
  const missing = await configError(() => compose({ "other.yaml": "a: 1\n" }));
  match(missing.message, /Config file not found: .*main\.yaml/);
  equal(missing.details.expected, "one of: other");
  const typo = await configError(() => compose({ "mains.yaml": "a: 1\n", "b.yaml": "" }));
  equal(typo.details.expected, "one of: b, mains");
  match(typo.details.hint ?? "", /mains/);
  const plain = await configError(() => compose({ "main.yaml": "defaults:\n  - nowhere/x\n" }));
  match(plain.message, /Could not find config 'nowhere\/x'/);
  equal(plain.details.key, "defaults[0]");
});

Deno.test("command-line group overrides: set, append, delete, and unknown groups", async () => {
  const files = {
    "main.yaml": "defaults:\n  - db: mysql\n  - cache: redis\n",
    "db/mysql.yaml": "kind: mysql\n",
    "db/sqlite.yaml": "kind: sqlite\n",
    "cache/redis.yaml": "ttl: 5\n",
    "extra/on.yaml": "extra: true\n",
  };
  const c = await compose(files, "main", [
    { kind: "set", group: "db", option: "sqlite", text: "db=sqlite" },
    { kind: "append", group: "extra", option: "on", text: "+extra=on" },
    { kind: "delete", group: "cache", text: "~cache" },
  ]);
  deepStrictEqual(c.value, { db: { kind: "sqlite" }, extra: { extra: true } });
  const e = await configError(() =>
    compose(files, "main", [{ kind: "set", group: "extra", option: "on", text: "extra=on" }])
  );
  match(e.message, /Could not override 'extra'/);
  equal(e.details.hint, "to add it to the defaults list, use +extra=...");
  deepStrictEqual(e.details.origin, { source: "command line", override: "extra=on" });
  // ~group=option deletes only that option, as in Hydra: another one is an error
  const kept = await compose(files, "main", [
    { kind: "delete", group: "db", option: "mysql", text: "~db=mysql" },
  ]);
  deepStrictEqual(kept.value, { cache: { ttl: 5 } });
  const wrong = await configError(() =>
    compose(files, "main", [{ kind: "delete", group: "db", option: "sqlite", text: "~db=sqlite" }])
  );
  match(wrong.message, /Could not delete 'db=sqlite': the defaults list chooses 'mysql'/);
  equal(wrong.details.hint, "to delete it whatever its option, use ~db");
});

Deno.test("a group chosen twice is an error naming both entries; two packages are two groups", async () => {
  const twice = await configError(() =>
    compose({
      "main.yaml": "defaults:\n  - db: mysql\n  - base\n",
      "base.yaml": "defaults:\n  - /db: sqlite\n",
      "db/mysql.yaml": "kind: mysql\n",
      "db/sqlite.yaml": "kind: sqlite\n",
    })
  );
  match(twice.message, /Config group 'db' is chosen twice/);
  match(twice.details.origin?.source ?? "", /base\.yaml$/);
  equal(twice.details.origin?.line, 2);
  match(twice.details.found ?? "", /main\.yaml:2/);
  match(twice.details.hint ?? "", /later entry 'override db: \.\.\.'/);
  const files = {
    "main.yaml": "defaults:\n  - db@src: mysql\n  - db@dst: sqlite\n",
    "db/mysql.yaml": "kind: mysql\n",
    "db/sqlite.yaml": "kind: sqlite\n",
  };
  const two = await compose(files);
  deepStrictEqual(two.value, { src: { kind: "mysql" }, dst: { kind: "sqlite" } });
  const appended = await configError(() =>
    compose(files, "main", [{
      kind: "append",
      group: "db",
      package: "src",
      option: "sqlite",
      text: "+db@src=sqlite",
    }])
  );
  match(appended.message, /'db@src' is chosen twice/);
  deepStrictEqual(appended.details.origin, { source: "command line", override: "+db@src=sqlite" });
  match(appended.details.hint ?? "", /use db@src=\.\.\. \(without \+\)/);
});

Deno.test("a defaults cycle is an error, not a hang", async () => {
  const e = await configError(() =>
    compose({ "main.yaml": "defaults:\n  - a\n", "a.yaml": "defaults:\n  - main\n" })
  );
  match(e.message, /nests more than/);
});

Deno.test("invalid defaults entries are errors naming the entry", async () => {
  const two = await configError(() => compose({ "main.yaml": "defaults:\n  - {a: x, b: y}\n" }));
  match(two.message, /exactly one key/);
  equal(two.details.key, "defaults[0]");
  const word = await configError(() => compose({ "main.yaml": "defaults:\n  - maybe db: x\n" }));
  match(word.message, /Unknown keyword 'maybe'/);
  const notList = await configError(() => compose({ "main.yaml": "defaults: db\n" }));
  match(notList.message, /must be a list/);
  // Hydra's list rules: one _self_, and override entries after every other entry
  const twice = await configError(() =>
    compose({ "main.yaml": "defaults:\n  - _self_\n  - db: a\n  - _self_\n", "db/a.yaml": "" })
  );
  match(twice.message, /Duplicate _self_/);
  equal(twice.details.key, "defaults[2]");
  const early = await configError(() =>
    compose({
      "main.yaml": "defaults:\n  - db: a\n  - override db: b\n  - cache: c\n",
      "db/a.yaml": "",
      "db/b.yaml": "",
      "cache/c.yaml": "",
    })
  );
  match(early.message, /Override 'db' is defined before 'cache': overrides must be at the end/);
  equal(early.details.key, "defaults[1]");
  // (an override followed only by _self_ is fine)
  await compose({
    "main.yaml": "defaults:\n  - db: a\n  - override db: b\n  - _self_\n",
    "db/a.yaml": "",
    "db/b.yaml": "x: 1\n",
  });
});

Deno.test("a group left ??? must be chosen; ~group and ++group say what they do", async () => {
  const files = { "main.yaml": "defaults:\n  - db: ???\n", "db/mysql.yaml": "kind: mysql\n" };
  const e = await configError(() => compose(files));
  match(e.message, /You must choose an option for config group 'db'/);
  equal(e.details.expected, "one of: mysql");
  equal(e.details.hint, "e.g. db=mysql on the command line");
  const chosen = await compose(files, "main", [
    { kind: "set", group: "db", option: "mysql", text: "db=mysql" },
  ]);
  deepStrictEqual(chosen.value, { db: { kind: "mysql" } });
  const del = await configError(() =>
    compose(files, "main", [
      { kind: "set", group: "db", option: "mysql", text: "db=mysql" },
      { kind: "delete", group: "cache", text: "~cache" },
    ])
  );
  match(del.message, /^Could not delete 'cache': no such config group/);
});
