/**
 * One case's outputs on two contexts, compared: relative L2 error, largest difference, tolerance.
 *
 * @module
 */
import { Kernels } from "../../../ffi/mod.ts";
import { type Case, EXACT, type Output, Scope } from "./harness.ts";

/** One compared output of one op. */
export interface OpRow {
  op: string;
  output: string;
  /** ||cuda - cpu|| / ||cpu|| (L2); for named scalars (metrics) the largest
   * |cuda - cpu| / max(|cpu|, 1e-3). */
  relErr: number;
  maxAbs: number;
  /** 0: must be bitwise equal. */
  tol: number;
  ok: boolean;
  note?: string;
}

/** A row; NaN errors (a non-finite value on either side) never pass. */
function row(op: string, output: string, err: [number, number], tol: number, note = ""): OpRow {
  const [relErr, maxAbs] = err;
  const ok = tol === EXACT ? maxAbs === 0 : relErr <= tol;
  return {
    op,
    output,
    relErr,
    maxAbs,
    tol,
    ok: ok && !Number.isNaN(relErr),
    ...(note && { note }),
  };
}

function compareArrays(
  op: string,
  output: string,
  cpu: ArrayLike<number>,
  cuda: ArrayLike<number>,
  tol: number,
): OpRow {
  if (cpu.length !== cuda.length) {
    return row(op, output, [NaN, NaN], tol, `length ${cuda.length} != ${cpu.length}`);
  }
  let [diff2, ref2, maxAbs, finite] = [0, 0, 0, true];
  for (let i = 0; i < cpu.length; i++) {
    const [a, b] = [cuda[i]!, cpu[i]!];
    finite &&= Number.isFinite(a) && Number.isFinite(b);
    diff2 += (a - b) ** 2;
    ref2 += b * b;
    maxAbs = Math.max(maxAbs, Math.abs(a - b));
  }
  if (!finite) return row(op, output, [NaN, NaN], tol, "NaN or infinity");
  const relErr = diff2 === 0 ? 0 : Math.sqrt(diff2 / ref2);
  return row(op, output, [relErr, maxAbs], tol, ref2 === 0 ? "cpu output is all zero" : "");
}

/** Named scalars (loss metrics): the worst |cuda - cpu| / max(|cpu|, 1e-3) over the names. */
function compareScalars(
  op: string,
  output: string,
  cpu: Record<string, number>,
  cuda: Record<string, number>,
  tol: number,
): OpRow {
  let [relErr, maxAbs, worst] = [0, 0, ""];
  for (const key of Object.keys(cpu)) {
    const [a, b] = [cuda[key]!, cpu[key]!];
    if (!Number.isFinite(a) || !Number.isFinite(b)) {
      return row(op, output, [NaN, NaN], tol, `${key}: cuda ${a} cpu ${b}`);
    }
    const rel = Math.abs(a - b) / Math.max(Math.abs(b), 1e-3);
    if (rel > relErr) [relErr, worst] = [rel, `worst: ${key} cuda ${a} cpu ${b}`];
    maxAbs = Math.max(maxAbs, Math.abs(a - b));
  }
  return row(op, output, [relErr, maxAbs], tol, worst);
}

/** A failed row for an op that threw, with the error's message. */
export function errorRow(op: string, e: unknown): OpRow {
  return row(op, "(error)", [NaN, NaN], NaN, e instanceof Error ? e.message : String(e));
}

/** Runs a case on both contexts (each in its own scope) and compares every output it names. */
export function runCase(c: Case, cpu: Kernels, cuda: Kernels): OpRow[] {
  let a: Record<string, Output>, b: Record<string, Output>;
  try {
    using s = new Scope(cpu);
    a = c.run(s);
  } catch (e) {
    return [errorRow(c.op, `reference (cpu) side: ${e instanceof Error ? e.message : e}`)];
  }
  try {
    using s = new Scope(cuda);
    b = c.run(s);
  } catch (e) {
    return [errorRow(c.op, `compared (cuda) side: ${e instanceof Error ? e.message : e}`)];
  }
  return Object.keys(a).map((key) => {
    const tol = typeof c.tol === "number" ? c.tol : c.tol[key]!;
    const [x, y] = [a[key]!, b[key]!];
    const isArray = (o: Output): o is ArrayLike<number> =>
      ArrayBuffer.isView(o) || Array.isArray(o);
    return isArray(x) && isArray(y)
      ? compareArrays(c.op, key, x, y, tol)
      : compareScalars(c.op, key, x as Record<string, number>, y as Record<string, number>, tol);
  });
}
