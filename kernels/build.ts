/**
 * Builds the native kernel libraries: `build/libagentrl_cpu.so` from
 * `kernels/cpu/*.cpp` with the system C++ compiler, and, whenever `nvcc` is
 * present, `build/libagentrl_cuda.so` from `kernels/cuda/*.cu` (no GPU is
 * needed to build it). Incremental: an object is recompiled only when its
 * source, a header or the flags changed, and a library is relinked only when
 * an object changed.
 *
 * With `--emulator` it also builds `build/libagentrl_cuda_emu.so`: the same CUDA
 * sources compiled with the host compiler against the CUDA emulator
 * (`kernels/emu/`), which runs every kernel on the CPU (no nvcc, no GPU). The
 * tests use it to execute the CUDA library's code (`deno task test` builds it).
 *
 * Usage: `deno task build [--force] [--verbose] [--cpu-only] [--emulator]`
 *
 * Environment: `CXX` (default g++), `NVCC` (default: `nvcc` on the PATH, else
 * /usr/local/cuda/bin/nvcc), `AGENTRL_CUDA_ARCH` (nvcc targets, default
 * `sm_80,sm_90`: machine code for both, PTX of sm_80 for newer GPUs).
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url);
const BUILD = new URL("build/", ROOT);
const KERNELS = new URL("kernels/", ROOT);
const SHARED_HEADERS = [new URL("include/", KERNELS), new URL("common/", KERNELS)];

const CXX = Deno.env.get("CXX") ?? "g++";
/** The C++ flags the CPU library is compiled with (tests compile its sources with them too). */
export const CXXFLAGS: readonly string[] = [
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
/** The path of the CUDA library that `deno task build` produces where nvcc is. */
export const CUDA_LIBRARY = new URL("libagentrl_cuda.so", BUILD);
/** The path of the emulated CUDA library that `deno task build --emulator` produces. */
export const CUDA_EMU_LIBRARY = new URL("libagentrl_cuda_emu.so", BUILD);

/** How one library is compiled and linked. */
interface LibrarySpec {
  name: string;
  sources: URL;
  ext: string;
  headerExts: string[];
  objects: URL;
  output: URL;
  compiler: string;
  compile: string[];
  link: string[];
  /** Header folders besides include/ and common/ whose changes rebuild every object. */
  extraHeaders?: URL[];
}

function cudaArchFlags(): string[] {
  const archs = (Deno.env.get("AGENTRL_CUDA_ARCH") ?? "sm_80,sm_90").split(",").map((a) => a.trim())
    .filter((a) => a !== "");
  const flags: string[] = [];
  for (const arch of archs) {
    const m = /^sm_(\d+a?)$/.exec(arch);
    if (!m) {
      throw new Error(`AGENTRL_CUDA_ARCH: '${arch}' is not a GPU target like sm_80 or sm_90a`);
    }
    flags.push(`-gencode=arch=compute_${m[1]},code=sm_${m[1]}`);
  }
  const first = /^sm_(\d+a?)$/.exec(archs[0] ?? "sm_80")![1];
  flags.push(`-gencode=arch=compute_${first},code=compute_${first}`);
  return flags;
}

function cpuSpec(): LibrarySpec {
  return {
    name: "cpu",
    sources: new URL("cpu/", KERNELS),
    ext: ".cpp",
    headerExts: [".h"],
    objects: new URL("obj/cpu/", BUILD),
    output: CPU_LIBRARY,
    compiler: CXX,
    compile: [...CXXFLAGS],
    link: LDFLAGS,
  };
}

function cudaSpec(nvcc: string): LibrarySpec {
  return {
    name: "cuda",
    sources: new URL("cuda/", KERNELS),
    ext: ".cu",
    headerExts: [".h", ".cuh"],
    objects: new URL("obj/cuda/", BUILD),
    output: CUDA_LIBRARY,
    compiler: nvcc,
    compile: [
      "-std=c++17",
      "-O3",
      // source lines for a profiler's stall sampling (no change to the code generated)
      "-lineinfo",
      ...cudaArchFlags(),
      "-Xcompiler=-fPIC,-fvisibility=hidden,-Wall",
      "--expt-relaxed-constexpr",
      "-Werror=all-warnings",
    ],
    // cudart is linked statically: the library loads (and reports "no CUDA
    // device") on machines with no driver; cuBLAS is dlopen'ed at run time.
    link: ["-shared", "-cudart=static", "-Xlinker=-z,nodelete,--no-undefined", "-ldl"],
  };
}

const EMU = new URL("emu/", KERNELS);
const EMU_SOURCES = new URL("obj/cuda_emu/src/", BUILD);

/**
 * Writes the emulator's translation of kernels/cuda/ (and its runtime, emu.cpp) into
 * build/obj/cuda_emu/src/, each file only when its text changed (so its mtime says when).
 */
async function translateForEmulator(): Promise<void> {
  const { translateCuda } = await import("./emu/translate.ts");
  await Deno.mkdir(EMU_SOURCES, { recursive: true });
  const cudaDir = new URL("cuda/", KERNELS);
  const written = new Set<string>();
  const write = async (name: string, text: string) => {
    written.add(name);
    const dst = new URL(name, EMU_SOURCES);
    let old: string | null = null;
    try {
      old = await Deno.readTextFile(dst);
    } catch { /* new */ }
    if (old !== text) await Deno.writeTextFile(dst, text);
  };
  for (const src of await listFiles(cudaDir, [".cu", ".cuh", ".h"])) {
    const name = src.pathname.split("/").pop()!;
    const text = translateCuda(await Deno.readTextFile(src), `kernels/cuda/${name}`);
    await write(name.endsWith(".cu") ? name.slice(0, -3) + ".cpp" : name, text);
  }
  await write(
    "emu_runtime.cpp",
    `#line 1 "kernels/emu/emu.cpp"\n` + await Deno.readTextFile(new URL("emu.cpp", EMU)),
  );
  // Translations of files since removed from kernels/cuda/ would still be compiled.
  for await (const e of Deno.readDir(EMU_SOURCES)) {
    if (e.isFile && !written.has(e.name)) await Deno.remove(new URL(e.name, EMU_SOURCES));
  }
}

function emulatorSpec(): LibrarySpec {
  return {
    name: "cuda_emu",
    sources: EMU_SOURCES,
    ext: ".cpp",
    headerExts: [".h", ".cuh"],
    objects: new URL("obj/cuda_emu/", BUILD),
    output: CUDA_EMU_LIBRARY,
    compiler: CXX,
    compile: [
      "-std=c++17",
      "-O2",
      "-fPIC",
      "-fvisibility=hidden",
      "-fno-math-errno",
      "-ffp-contract=off",
      `-I${EMU.pathname}`,
      `-I${new URL("cuda/", KERNELS).pathname}`,
    ],
    link: ["-shared", "-Wl,-z,nodelete", "-Wl,--no-undefined", "-ldl", "-lpthread"],
    extraHeaders: [EMU],
  };
}

/** The nvcc to use, or null when there is none. */
export async function findNvcc(): Promise<string | null> {
  const candidates = [Deno.env.get("NVCC"), "nvcc", "/usr/local/cuda/bin/nvcc"];
  for (const c of candidates) {
    if (!c) continue;
    try {
      const out = await new Deno.Command(c, { args: ["--version"], stdout: "null", stderr: "null" })
        .output();
      if (out.success) return c;
    } catch { /* not there */ }
  }
  return null;
}

async function mtime(url: URL): Promise<number> {
  try {
    return (await Deno.stat(url)).mtime?.getTime() ?? 0;
  } catch {
    return 0;
  }
}

async function listFiles(dir: URL, exts: string[]): Promise<URL[]> {
  const out: URL[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (e.isFile && exts.some((x) => e.name.endsWith(x))) out.push(new URL(e.name, dir));
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
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
        `The compiler '${cmd}' was not found. Install g++ (Debian: apt-get install g++) or set CXX.`,
      );
    }
    throw e;
  }
  const text = new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout);
  if (!out.success) throw new Error(`${cmd} failed:\n${text}`);
  if (verbose && text.trim()) console.log(text);
}

/** One object to compile, with an estimate of its cost (to start the longest first). */
export interface CompileJob {
  weight: number;
  run: () => Promise<void>;
}

/** A library's out-of-date objects, and the link that follows them (false: nothing to do). */
export interface LibraryPlan {
  jobs: CompileJob[];
  link: () => Promise<boolean>;
}

async function planLibrary(spec: LibrarySpec, force: boolean, verbose: boolean) {
  await Deno.mkdir(spec.objects, { recursive: true });
  const flagsStamp = new URL("flags.txt", spec.objects);
  const flags = JSON.stringify([spec.compiler, spec.compile, spec.link]);
  let previousFlags = "";
  try {
    previousFlags = await Deno.readTextFile(flagsStamp);
  } catch { /* first build */ }
  if (previousFlags !== flags) {
    force = true;
    // until a link succeeds with the new flags, no object here counts as up to date
    await Deno.remove(flagsStamp).catch(() => {});
  }

  const headers = [
    ...await listFiles(spec.sources, spec.headerExts),
    ...(await Promise.all(SHARED_HEADERS.map((d) => listFiles(d, [".h"])))).flat(),
    ...(await Promise.all((spec.extraHeaders ?? []).map((d) => listFiles(d, [".h"])))).flat(),
  ];
  const newestHeader = Math.max(0, ...await Promise.all(headers.map(mtime)));
  const sources = await listFiles(spec.sources, [spec.ext]);
  const objects: URL[] = [];
  const jobs: CompileJob[] = [];
  for (const src of sources) {
    const name = src.pathname.split("/").pop()!.slice(0, -spec.ext.length) + ".o";
    const obj = new URL(name, spec.objects);
    objects.push(obj);
    const objTime = await mtime(obj);
    if (force || objTime === 0 || objTime < await mtime(src) || objTime < newestHeader) {
      jobs.push({
        weight: await includedBytes(src, new Set()),
        run: () =>
          run(spec.compiler, [...spec.compile, "-c", src.pathname, "-o", obj.pathname], verbose),
      });
    }
  }
  const link = async () => {
    const libTime = await mtime(spec.output);
    const relink = jobs.length > 0 || libTime === 0 ||
      (await Promise.all(objects.map(mtime))).some((t) => t > libTime);
    if (!relink) return false;
    const tmp = new URL(`libagentrl_${spec.name}.so.tmp${Deno.pid}`, BUILD);
    await run(
      spec.compiler,
      [...spec.link, "-o", tmp.pathname, ...objects.map((o) => o.pathname)],
      verbose,
    );
    await Deno.rename(tmp, spec.output);
    await Deno.writeTextFile(flagsStamp, flags);
    return true;
  };
  return { jobs, link } satisfies LibraryPlan;
}

/**
 * The bytes a compiler reads for a source: the file and the local headers it includes, each
 * once (a proxy for its compile time: the GEMV and attention templates dominate).
 */
export async function includedBytes(file: URL, seen: Set<string>): Promise<number> {
  if (seen.has(file.href)) return 0;
  seen.add(file.href);
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch {
    return 0; // a system header, or one the compiler finds on an include path
  }
  let bytes = text.length;
  for (const m of text.matchAll(/^#include "([^"]+)"/gm)) {
    bytes += await includedBytes(new URL(m[1]!, file), seen);
  }
  return bytes;
}

/**
 * Compiles every plan's objects on as many processes as there are cores, the costliest first
 * (one library's long tail overlaps another's objects), then links each library. After a
 * failed compile no new job of that library starts; the other libraries build and link (a
 * broken nvcc leaves the CPU library usable), and then the first error is thrown.
 */
export async function buildPlans(
  plans: LibraryPlan[],
  parallel = Math.max(1, navigator.hardwareConcurrency ?? 2),
): Promise<boolean[]> {
  const queue = plans.flatMap((p, plan) => p.jobs.map((job) => ({ job, plan })))
    .sort((a, b) => b.job.weight - a.job.weight);
  const errors = new Map<number, unknown>();
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      if (errors.has(next.plan)) continue;
      try {
        await next.job.run();
      } catch (e) {
        if (!errors.has(next.plan)) errors.set(next.plan, e);
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  const linked = await Promise.all(
    plans.map((p, plan) => errors.has(plan) ? Promise.resolve(false) : p.link()),
  );
  if (errors.size > 0) throw errors.values().next().value;
  return linked;
}

/** What {@linkcode buildKernels} did for each library. */
export interface BuildResult {
  cpu: "built" | "up to date";
  cuda: "built" | "up to date" | "skipped: no nvcc" | "skipped: --cpu-only";
  /** The emulated CUDA library (only with the `emulator` option). */
  emulator?: "built" | "up to date" | "skipped: needs x86-64 Linux";
}

/** Builds what is out of date. */
export async function buildKernels(
  options: { force?: boolean; verbose?: boolean; cpuOnly?: boolean; emulator?: boolean } = {},
): Promise<BuildResult> {
  const force = options.force ?? false;
  const verbose = options.verbose ?? false;
  const plans: LibraryPlan[] = [await planLibrary(cpuSpec(), force, verbose)];
  let emulator: BuildResult["emulator"];
  let emulatorPlan = -1;
  if (options.emulator && !(Deno.build.os === "linux" && Deno.build.arch === "x86_64")) {
    emulator = "skipped: needs x86-64 Linux"; // its fiber switch is x86-64 assembly
  } else if (options.emulator) {
    await translateForEmulator();
    emulatorPlan = plans.push(await planLibrary(emulatorSpec(), force, verbose)) - 1;
  }
  let cuda: BuildResult["cuda"] = "skipped: --cpu-only";
  let cudaPlan = -1;
  if (!options.cpuOnly) {
    const nvcc = await findNvcc();
    if (nvcc === null) cuda = "skipped: no nvcc";
    else cudaPlan = plans.push(await planLibrary(cudaSpec(nvcc), force, verbose)) - 1;
  }
  const built = await buildPlans(plans);
  const outcome = (i: number) => built[i] ? "built" as const : "up to date" as const;
  if (emulatorPlan >= 0) emulator = outcome(emulatorPlan);
  if (cudaPlan >= 0) cuda = outcome(cudaPlan);
  const withEmulator = emulator === undefined ? {} : { emulator };
  return { cpu: outcome(0), cuda, ...withEmulator };
}

if (import.meta.main) {
  const force = Deno.args.includes("--force");
  const verbose = Deno.args.includes("--verbose");
  const cpuOnly = Deno.args.includes("--cpu-only") ||
    Deno.env.get("AGENTRL_BUILD_CPU_ONLY") === "1";
  const emulator = Deno.args.includes("--emulator");
  try {
    const result = await buildKernels({ force, verbose, cpuOnly, emulator });
    const say = (name: string, path: URL, what: string) =>
      // on stderr: a task that prints JSON or YAML on stdout runs the build first
      console.error(what === "built" ? `built ${path.pathname}` : `${name} kernels: ${what}`);
    say("cpu", CPU_LIBRARY, result.cpu);
    say("cuda", CUDA_LIBRARY, result.cuda);
    if (result.emulator) say("emulated cuda", CUDA_EMU_LIBRARY, result.emulator);
  } catch (e) {
    console.error(e instanceof Error ? e.message : String(e));
    Deno.exit(1);
  }
}
