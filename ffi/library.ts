/**
 * Finds and opens the native kernel library: the path in `AGENTRL_KERNELS_CPU`
 * (or `AGENTRL_KERNELS_CUDA` for the CUDA library), else the `build/` output of
 * `deno task build` beside this module, else an error naming that command.
 * Nothing is downloaded.
 *
 * @module
 */
import { ABI_VERSION, SYMBOLS } from "./symbols.ts";

/** A device kind a kernel library serves. */
export type DeviceKind = "cpu" | "cuda";

const ENV: Record<DeviceKind, string> = {
  cpu: "AGENTRL_KERNELS_CPU",
  cuda: "AGENTRL_KERNELS_CUDA",
};
const FILE: Record<DeviceKind, string> = {
  cpu: "libagentrl_cpu.so",
  cuda: "libagentrl_cuda.so",
};

/** The native library could not be found or opened. */
export class KernelLibraryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "KernelLibraryError";
  }
}

/** The path the library is loaded from, by the rules above. */
export function libraryPath(device: DeviceKind = "cpu"): string {
  if (!Object.hasOwn(FILE, device)) {
    throw new KernelLibraryError(
      `Unknown device ${JSON.stringify(device)}: expected ${
        Object.keys(FILE).map((d) => `"${d}"`).join(" or ")
      }`,
    );
  }
  const override = Deno.env.get(ENV[device]);
  if (override) return override;
  const url = new URL(`../build/${FILE[device]}`, import.meta.url);
  if (url.protocol !== "file:") {
    throw new KernelLibraryError(
      `agentrl was imported from ${url.origin}, so its kernels cannot be found beside it: ` +
        `build them from a local checkout (deno task build) and set ${ENV[device]} to the ` +
        `built ${FILE[device]}.`,
    );
  }
  return decodeURIComponent(url.pathname);
}

const opened = new Map<DeviceKind, Deno.DynamicLibrary<typeof SYMBOLS>>();

/** Opens (once) the kernel library for a device. */
export function openLibrary(device: DeviceKind = "cpu"): Deno.DynamicLibrary<typeof SYMBOLS> {
  const cached = opened.get(device);
  if (cached) return cached;
  const path = libraryPath(device);
  try {
    Deno.statSync(path);
  } catch {
    throw new KernelLibraryError(
      `The ${device} kernel library is not built: ${path} does not exist. ` +
        `Run \`deno task build\` (or set ${ENV[device]} to a built ${FILE[device]}).`,
    );
  }
  let lib: Deno.DynamicLibrary<typeof SYMBOLS>;
  try {
    lib = Deno.dlopen(path, SYMBOLS);
  } catch (e) {
    // (Deno's message repeats its own prefix: "Could not open library: Could not open library: ")
    // (and names the path, which this message does already)
    const reason = (e instanceof Error ? e.message : String(e))
      .replace(/^(Could not open library: )+/, "")
      .replace(`${path}: `, "");
    throw new KernelLibraryError(`Could not open the ${device} kernel library ${path}: ${reason}`);
  }
  // a library built from other sources would misread the structs it is given
  const abi = lib.symbols.arl_abi_version();
  if (abi !== ABI_VERSION) {
    lib.close();
    throw new KernelLibraryError(
      `The ${device} kernel library ${path} has ABI version ${abi}, and this agentrl needs ` +
        `${ABI_VERSION}: run \`deno task build\` to rebuild it.`,
    );
  }
  opened.set(device, lib);
  return lib;
}
