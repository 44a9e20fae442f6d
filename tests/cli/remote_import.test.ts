/**
 * Runs examples/compose_config.ts by URL, as a user would from a served copy of
 * the repository: the modules and the built-in configs all come over HTTP from
 * a read-only file server on 127.0.0.1, and the script runs from an empty
 * folder with no deno.json.
 */
import { doesNotMatch, equal, match, ok } from "node:assert/strict";

const REPO_ROOT = new URL("../../", import.meta.url);

const CONTENT_TYPES: Record<string, string> = {
  ".ts": "application/typescript; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".yaml": "application/yaml; charset=utf-8",
  ".yml": "application/yaml; charset=utf-8",
};

/** Serves the files under the repository root, read-only; 404 for anything else. */
async function serveFile(request: Request): Promise<Response> {
  if (request.method !== "GET" && request.method !== "HEAD") {
    return new Response("method not allowed", { status: 405 });
  }
  const { pathname } = new URL(request.url);
  const file = new URL(`.${pathname}`, REPO_ROOT);
  if (!file.href.startsWith(REPO_ROOT.href) || pathname.endsWith("/")) {
    return new Response("not found", { status: 404 });
  }
  let body: Uint8Array<ArrayBuffer>;
  try {
    if (!(await Deno.stat(file)).isFile) return new Response("not found", { status: 404 });
    body = await Deno.readFile(file);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return new Response("not found", { status: 404 });
    throw e;
  }
  const ext = pathname.slice(pathname.lastIndexOf("."));
  const type = CONTENT_TYPES[ext] ?? "application/octet-stream";
  return new Response(request.method === "HEAD" ? null : body, {
    headers: { "content-type": type },
  });
}

interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the example by URL from an empty temporary folder. */
async function runByUrl(host: string, args: string[]): Promise<RunResult> {
  const cwd = await Deno.makeTempDir({ prefix: "agentrl_remote_" });
  try {
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-config",
        "--no-lock",
        // Ports get reused: never run modules cached by an earlier test run. (No
        // trailing slash: Deno 2.9 reloads nothing for `--reload=http://host/`.)
        `--reload=http://${host}`,
        `--allow-net=${host}`,
        `--allow-import=${host}`,
        "--allow-read",
        "--allow-env",
        `http://${host}/examples/compose_config.ts`,
        ...args,
      ],
      cwd,
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(50_000),
    }).output();
    const decoder = new TextDecoder();
    return { code, stdout: decoder.decode(stdout), stderr: decoder.decode(stderr) };
  } finally {
    await Deno.remove(cwd, { recursive: true });
  }
}

function show(r: RunResult): string {
  return `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
}

Deno.test("the example composes the served configs when run by URL", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, serveFile);
  try {
    const host = `127.0.0.1:${server.addr.port}`;

    // The file server itself: types for modules and configs, 404 for the rest.
    const ts = await fetch(`http://${host}/mod.ts`);
    await ts.body?.cancel();
    equal(ts.status, 200);
    match(ts.headers.get("content-type") ?? "", /^application\/typescript/);
    const yaml = await fetch(`http://${host}/configs/envs/traj.yaml`);
    await yaml.body?.cancel();
    match(yaml.headers.get("content-type") ?? "", /^application\/yaml/);
    for (const missing of ["/nope.ts", "/configs/", "/configs/envs/nope.yaml"]) {
      const r = await fetch(`http://${host}${missing}`);
      await r.body?.cancel();
      equal(r.status, 404, missing);
    }

    const ok0 = await runByUrl(host, ["agent_val_frozen_lake", "seed=11"]);
    equal(ok0.code, 0, show(ok0));
    match(ok0.stdout, /^exp_name: agent_val_frozen_lake$/m);
    match(ok0.stdout, /^seed: 11$/m);
    match(ok0.stdout, /^adv_estimator: grpo$/m);
    match(ok0.stdout, /FrozenLake/);
    match(ok0.stdout, /^rollout_batch_size: 64$/m);

    const bad = await runByUrl(host, ["agent_val_frozen_lake", "not_a_key=1"]);
    equal(bad.code, 2, show(bad));
    match(bad.stderr, /^Config error: .*'not_a_key'/m);
    ok(bad.stderr.includes("not_a_key=1"), show(bad));
    doesNotMatch(bad.stderr, /^\s+at .*(file|ext|https?):\/\//m, "stack trace in stderr");
    doesNotMatch(bad.stderr, /Uncaught/);
    equal(bad.stdout, "");
  } finally {
    await server.shutdown();
  }
});
