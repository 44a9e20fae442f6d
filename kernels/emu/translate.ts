/**
 * Rewrites CUDA C++ source into host C++ for the CUDA emulator (`kernels/emu/`): each launch
 * `kernel<<<grid, block, shared, stream>>>(args)` becomes
 * `::emu::launch(kernel, "kernel", ::emu::Config(grid, block, shared, stream), args)`, and
 * each `extern __shared__ T name[];` a pointer to the launch's dynamic shared memory. The rest
 * compiles as it is against `kernels/emu/cuda_runtime.h`. A `#line` directive keeps the
 * compiler's messages pointing at the original file.
 *
 * @module
 */

/** A launch or declaration the translator could not parse. */
export class TranslateError extends Error {
  constructor(file: string, source: string, at: number, what: string) {
    const line = source.slice(0, at).split("\n").length;
    super(`${file}:${line}: ${what}`);
    this.name = "TranslateError";
  }
}

const IDENT = /[A-Za-z0-9_:]/;

/** Index of the bracket closing the one at `open` (nesting `pair`), or -1. */
function matching(src: string, open: number, pair: string): number {
  let depth = 0;
  for (let i = open; i < src.length; i++) {
    if (src[i] === pair[0]) depth++;
    else if (src[i] === pair[1] && --depth === 0) return i;
  }
  return -1;
}

/** Start of the kernel expression that ends just before `end` (a name, maybe with <...>). */
function kernelStart(src: string, end: number): number {
  let i = end;
  while (i > 0 && /\s/.test(src[i - 1]!)) i--;
  if (src[i - 1] === ">") { // template arguments: walk back to the matching '<'
    let depth = 0;
    for (i = i - 1; i >= 0; i--) {
      if (src[i] === ">") depth++;
      else if (src[i] === "<" && --depth === 0) break;
    }
  }
  while (i > 0 && IDENT.test(src[i - 1]!)) i--;
  return i;
}

function translateLaunches(src: string, file: string): string {
  let out = "";
  let done = 0;
  for (let at = src.indexOf("<<<"); at >= 0; at = src.indexOf("<<<", at + 3)) {
    const start = kernelStart(src, at);
    const kernel = src.slice(start, at).trim();
    if (kernel === "" || start < done) {
      throw new TranslateError(file, src, at, "a launch without a kernel name before <<<");
    }
    const close = src.indexOf(">>>", at);
    if (close < 0) throw new TranslateError(file, src, at, "a launch's <<< has no >>>");
    let open = close + 3;
    while (/\s/.test(src[open] ?? "")) open++;
    if (src[open] !== "(") {
      throw new TranslateError(file, src, at, "a launch's >>> is not followed by (arguments)");
    }
    const end = matching(src, open, "()");
    if (end < 0) throw new TranslateError(file, src, at, "a launch's arguments do not close");
    const config = src.slice(at + 3, close).trim();
    const args = src.slice(open + 1, end).trim();
    const name = kernel.replace(/\s+/g, " ").replaceAll('"', "");
    out += src.slice(done, start) +
      `::emu::launch(${kernel}, "${name}", ::emu::Config(${config})` +
      (args === "" ? ")" : `, ${args})`);
    done = end + 1;
  }
  return out + src.slice(done);
}

const DYNAMIC_SHARED =
  /extern\s+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?([A-Za-z_][\w:]*)\s+(?:__align__\(\s*\d+\s*\)\s+)?([A-Za-z_]\w*)\s*\[\s*\]\s*;/g;

/** The host C++ that the emulator compiles in place of `src` (the CUDA file `file`). */
export function translateCuda(src: string, file: string): string {
  const shared = src.replace(
    DYNAMIC_SHARED,
    (_m, type: string, name: string) =>
      `${type}* const ${name} = ::emu::dynamic_shared<${type}>();`,
  );
  return `#line 1 "${file}"\n` + translateLaunches(shared, file);
}
