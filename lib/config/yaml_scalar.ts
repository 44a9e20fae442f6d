// Plain YAML scalars read as OmegaConf reads them: PyYAML's YAML 1.1 rules, with
// OmegaConf's float rule (`1e-5` is a float) and timestamps left as strings.

const NULL = /^(?:~|null|Null|NULL|)$/;
const TRUE = /^(?:yes|Yes|YES|true|True|TRUE|on|On|ON)$/;
const FALSE = /^(?:no|No|NO|false|False|FALSE|off|Off|OFF)$/;
const INT_BIN = /^[-+]?0b[01_]+$/;
const INT_OCT = /^[-+]?0[0-7_]+$/;
const INT_DEC = /^[-+]?(?:0|[1-9][0-9_]*)$/;
const INT_HEX = /^[-+]?0x[0-9a-fA-F_]+$/;
const INT_SEXA = /^[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+$/;
const FLOAT = new RegExp(
  "^(?:[-+]?[0-9][0-9_]*\\.[0-9_]*(?:[eE][-+]?[0-9]+)?" +
    "|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+" +
    "|\\.[0-9_]+(?:[eE][-+][0-9]+)?" +
    "|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\\.[0-9_]*" +
    "|[-+]?\\.(?:inf|Inf|INF)" +
    "|\\.(?:nan|NaN|NAN))$",
);

/** Resolves a plain (unquoted) YAML scalar to null, a boolean, a number or a string. */
export function resolvePlainScalar(text: string): null | boolean | number | string {
  if (NULL.test(text)) return null;
  if (TRUE.test(text)) return true;
  if (FALSE.test(text)) return false;
  const int = parseYamlInt(text);
  if (int !== undefined) return int;
  if (FLOAT.test(text)) return parseYamlFloat(text);
  return text;
}

/** Parses a YAML 1.1 integer, or returns `undefined` when the text is not one. */
export function parseYamlInt(text: string): number | undefined {
  const sign = text.startsWith("-") ? -1 : 1;
  const body = text.replace(/^[-+]/, "").replaceAll("_", "");
  if (INT_BIN.test(text)) return sign * parseInt(body.slice(2), 2);
  if (INT_HEX.test(text)) return sign * parseInt(body.slice(2), 16);
  if (INT_DEC.test(text)) return sign * Number(body);
  if (INT_OCT.test(text)) return sign * parseInt(body.slice(1), 8);
  if (INT_SEXA.test(text)) {
    return sign * body.split(":").reduce((acc, part) => acc * 60 + Number(part), 0);
  }
  return undefined;
}

function parseYamlFloat(text: string): number {
  const sign = text.startsWith("-") ? -1 : 1;
  const body = text.replace(/^[-+]/, "").replaceAll("_", "");
  const lower = body.toLowerCase();
  if (lower === ".inf") return sign * Infinity;
  if (lower === ".nan") return NaN;
  if (body.includes(":")) {
    const [whole, frac] = body.split(".") as [string, string];
    const base = whole.split(":").reduce((acc, part) => acc * 60 + Number(part), 0);
    return sign * (base + Number(`0.${frac || "0"}`));
  }
  return sign * Number(body.endsWith(".") ? body.slice(0, -1) : body);
}
