/**
 * Builds the native kernel libraries with the system C++ compiler:
 * `build/libagentrl_cpu.so` from `kernels/cpu/*.cpp`. Incremental: an object
 * is recompiled only when its source, a header or the flags changed, and the
 * library is relinked only when an object changed.
 *
 * Usage: `deno task build [--force] [--verbose]`
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url);
const BUILD = new URL("build/", ROOT);
const OBJ = new URL("obj/cpu/", BUILD);
const CPU_SRC = new URL("kernels/cpu/", ROOT);
const INCLUDE = new URL("kernels/include/", ROOT);

const CXX = Deno.env.get("CXX") ?? "g++";
const CXXFLAGS = [
  "-std=c++17",
  "-O3",
  "-fPIC",
  "-fopenmp",
  "-fvisibility=hidden",
  "-fno-math-errno",
  "-ffp-contract=fast",
  "-Wall",
  "-Wextra",
  "-Wno-unused-parameter",
];
const LDFLAGS = ["-shared", "-fopenmp", "-Wl,-z,nodelete", "-Wl,--no-undefined"];

/** The path of the CPU library that `deno task build` produces. */
export const CPU_LIBRARY = new URL("libagentrl_cpu.so", BUILD);

async function mtime(url: URL): Promise<number> {
  try {
    return (await Deno.stat(url)).mtime?.getTime() ?? 0;
  } catch {
    return 0;
  }
}

async function listFiles(dir: URL, ext: string): Promise<URL[]> {
  const out: URL[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile && e.name.endsWith(ext)) out.push(new URL(e.name, dir));
  }
  return out.sort((a, b) => a.href.localeCompare(b.href));
}

async function run(cmd: string, args: string[], verbose: boolean): Promise<void> {
  if (verbose) console.log([cmd, ...args].join(" "));
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new Error(
        `The C++ compiler '${cmd}' was not found. Install g++ (Debian: apt-get install g++) or set CXX.`,
      );
    }
    throw e;
  }
  const text = new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout);
  if (!out.success) throw new Error(`${cmd} failed:\n${text}`);
  if (verbose && text.trim()) console.log(text);
}

/** Builds what is out of date; returns true when the library was (re)linked. */
export async function buildKernels(options: { force?: boolean; verbose?: boolean } = {}) {
  const verbose = options.verbose ?? false;
  await Deno.mkdir(OBJ, { recursive: true });
  const flagsStamp = new URL("flags.txt", OBJ);
  const flags = JSON.stringify([CXX, CXXFLAGS, LDFLAGS]);
  let previousFlags = "";
  try {
    previousFlags = await Deno.readTextFile(flagsStamp);
  } catch { /* first build */ }
  const force = options.force || previousFlags !== flags;

  const headers = [...await listFiles(CPU_SRC, ".h"), ...await listFiles(INCLUDE, ".h")];
  const newestHeader = Math.max(0, ...await Promise.all(headers.map(mtime)));
  const sources = await listFiles(CPU_SRC, ".cpp");
  const objects: URL[] = [];
  const jobs: (() => Promise<void>)[] = [];
  for (const src of sources) {
    const name = src.pathname.split("/").pop()!.replace(/\.cpp$/, ".o");
    const obj = new URL(name, OBJ);
    objects.push(obj);
    const objTime = await mtime(obj);
    if (force || objTime === 0 || objTime < await mtime(src) || objTime < newestHeader) {
      jobs.push(() => run(CXX, [...CXXFLAGS, "-c", src.pathname, "-o", obj.pathname], verbose));
    }
  }
  const libTime = await mtime(CPU_LIBRARY);
  const relink = jobs.length > 0 || libTime === 0 ||
    (await Promise.all(objects.map(mtime))).some((t) => t > libTime);
  if (!relink) return false;
  const parallel = Math.max(1, navigator.hardwareConcurrency ?? 2);
  for (let i = 0; i < jobs.length; i += parallel) {
    await Promise.all(jobs.slice(i, i + parallel).map((job) => job()));
  }
  const tmp = new URL(`libagentrl_cpu.so.tmp${Deno.pid}`, BUILD);
  await run(CXX, [...LDFLAGS, "-o", tmp.pathname, ...objects.map((o) => o.pathname)], verbose);
  await Deno.rename(tmp, CPU_LIBRARY);
  await Deno.writeTextFile(flagsStamp, flags);
  return true;
}

if (import.meta.main) {
  const force = Deno.args.includes("--force");
  const verbose = Deno.args.includes("--verbose");
  try {
    const built = await buildKernels({ force, verbose });
    console.log(built ? `built ${CPU_LIBRARY.pathname}` : "kernels are up to date");
  } catch (e) {
    console.error(e instanceof Error ? e.message : String(e));
    Deno.exit(1);
  }
}
