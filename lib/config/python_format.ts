// Python's str() of the primitive values an OmegaConf string interpolation embeds.

/** Formats a value the way Python's `str()` would inside an OmegaConf string. */
export function pythonStr(value: null | boolean | number | string): string {
  if (value === null) return "None";
  if (typeof value === "boolean") return value ? "True" : "False";
  if (typeof value === "number") return pythonNumber(value);
  return value;
}

/** Python's repr of a number: `1e-05`, `inf`, `nan`, `0.1`, `42`. */
export function pythonNumber(n: number): string {
  if (Number.isNaN(n)) return "nan";
  if (!Number.isFinite(n)) return n > 0 ? "inf" : "-inf";
  if (Number.isInteger(n) && Math.abs(n) < 1e16) return String(n);
  const [mantissa, expText] = n.toExponential().split("e") as [string, string];
  const exp = Number(expText);
  if (exp < -4 || exp >= 16) {
    const sign = exp < 0 ? "-" : "+";
    return `${mantissa}e${sign}${String(Math.abs(exp)).padStart(2, "0")}`;
  }
  return String(n);
}
