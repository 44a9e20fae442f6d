/**
 * Short renderings of metric values for log lines, chart axes and tables.
 *
 * @module
 */

/**
 * A short rendering of a metric value: integers as they are (below 1e6),
 * 4 significant digits otherwise, exponent form for very large or small
 * magnitudes, "nan"/"inf" for non-finite values.
 *
 * @example
 * ```ts
 * import { formatNumber } from "./format_number.ts";
 * console.log(formatNumber(0.123456), formatNumber(12), formatNumber(1234567.8)); // 0.1235 12 1.235e+6
 * ```
 */
export function formatNumber(v: number | null): string {
  if (v === null || Number.isNaN(v)) return "nan";
  if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
  const a = Math.abs(v);
  if (Number.isInteger(v) && a < 1e6) return String(v);
  if (a >= 1e6 || (a < 1e-3 && a !== 0)) return v.toExponential(3).replace(/\.?0+e/, "e");
  return String(Number(v.toPrecision(4)));
}
