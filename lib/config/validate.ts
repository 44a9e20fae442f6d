import type { z } from "npm:zod@4.6.7";
import { didYouMean } from "../util/did_you_mean.ts";
import { ConfigError, ConfigErrors, describeValue } from "./errors.ts";
import { formatKeyPath } from "./key_path.ts";
import type { OriginMap } from "./origins.ts";
import { keysAt } from "./schema/walk.ts";
import type { KeySegment } from "./types.ts";

/**
 * Parses `data` with a zod schema and turns every issue into a ConfigError that
 * names the key, where it was written, what was found, what was expected, and
 * (for unknown keys) the closest known key.
 */
export function parseWithSchema<S extends z.core.$ZodType>(
  schema: S,
  data: unknown,
  origins: OriginMap,
  prefix: readonly KeySegment[] = [],
): z.output<S> {
  const result = (schema as unknown as z.ZodType).safeParse(data, { reportInput: true });
  if (result.success) return result.data as z.output<S>;
  const errors = result.error.issues.flatMap((issue) => toErrors(schema, issue, origins, prefix));
  throw errors.length === 1 ? errors[0]! : new ConfigErrors(errors);
}

function toErrors(
  schema: z.core.$ZodType,
  issue: z.core.$ZodIssue,
  origins: OriginMap,
  prefix: readonly KeySegment[],
): ConfigError[] {
  const path = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p)) as KeySegment[];
  const full = [...prefix, ...path];
  if (issue.code === "unrecognized_keys") {
    const known = keysAt(schema, path);
    return issue.keys.map((key) =>
      new ConfigError(`Unknown key '${key}'`, {
        key: formatKeyPath([...full, key]),
        origin: origins.find([...full, key]),
        expected: path.length === 0
          ? "a field of the AgenticConfig (or a variable that an interpolation uses)"
          : `a field of '${formatKeyPath(full)}'`,
        hint: didYouMean(key, known),
      })
    );
  }
  const input = (issue as { input?: unknown }).input;
  // zod's number type refuses Infinity and NaN as a wrong type: say what is wrong with it
  const wantsNumber = issue.code === "invalid_type" &&
    (issue.expected === "number" || issue.expected === "int");
  if (wantsNumber && typeof input === "number") {
    const notInteger = Number.isFinite(input) && issue.expected === "int";
    return [
      new ConfigError(notInteger ? "Not an integer" : "Not a finite number", {
        key: formatKeyPath(full),
        origin: origins.find(full),
        found: describeValue(input),
        expected: issue.expected === "int" ? "a finite integer" : "a finite number",
      }),
    ];
  }
  // Hydra types `exp_name=5` as an int; OmegaConf would turn it into text, zod does not
  const textWanted = issue.code === "invalid_type" && issue.expected === "string" &&
    (typeof input === "number" || typeof input === "boolean");
  const origin = origins.find(full);
  // a misspelled choice (adv_estimator=grpoo): the closest allowed value
  const closest = issue.code === "invalid_value" && typeof input === "string"
    ? didYouMean(input, issue.values.filter((v): v is string => typeof v === "string"))
    : undefined;
  const hint = textWanted ? asTextHint(origin?.override, full.at(-1), input) : closest;
  return [
    new ConfigError(messageOf(issue), {
      key: formatKeyPath(full),
      origin,
      found: input === undefined ? "nothing (the key is missing)" : describeValue(input),
      expected: expectedOf(issue),
      ...(hint !== undefined ? { hint } : {}),
    }),
  ];
}

function messageOf(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return "Wrong type";
    case "invalid_value":
      return "Value not allowed";
    case "too_small":
      if (issue.origin === "string") return issue.minimum === 1 ? "Empty value" : "Too short";
      return "Value out of range";
    case "too_big":
      return "Value out of range";
    case "invalid_union":
      return "Value matches none of the allowed forms";
    default:
      return issue.message;
  }
}

/** zod's type names in the words of YAML and Hydra. */
const TYPE_WORDS: Record<string, string> = {
  int: "an integer",
  record: "a mapping",
  object: "a mapping",
  map: "a mapping",
  array: "a list",
  tuple: "a list",
};

function expectedOf(issue: z.core.$ZodIssue): string | undefined {
  switch (issue.code) {
    case "invalid_type":
      return TYPE_WORDS[issue.expected] ?? `a ${issue.expected}`;
    case "invalid_value":
      return `one of: ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "too_small":
      if (issue.origin === "string") {
        return issue.minimum === 1 ? "a non-empty text" : `at least ${issue.minimum} characters`;
      }
      return issue.origin === "array"
        ? `at least ${issue.minimum} items`
        : `a value ${issue.inclusive ? ">=" : ">"} ${issue.minimum}`;
    case "too_big":
      return issue.origin === "array"
        ? `at most ${issue.maximum} items`
        : `a value ${issue.inclusive ? "<=" : "<"} ${issue.maximum}`;
    case "invalid_format":
      return `a ${issue.format}`;
    case "not_multiple_of":
      return `a multiple of ${issue.divisor}`;
    default:
      return undefined;
  }
}

/** How to pass a number or boolean as text: quote it, or (on the command line) cast it. */
function asTextHint(
  override: string | undefined,
  name: KeySegment | undefined,
  input: unknown,
): string {
  // an interpolation of a number stays a number, quoted or cast: text around it makes a string
  const aroundIt = `put text around the interpolation to make it text (e.g. run_\${seed})`;
  const eq = override?.indexOf("=") ?? -1;
  if (override === undefined || eq < 0) {
    return `quote it in YAML to make it text (${String(name)}: '${String(input)}'); if it is ` +
      `an interpolation, ${aroundIt}`;
  }
  const key = override.slice(0, eq);
  const raw = override.slice(eq + 1).trim();
  if (raw.includes("${")) return `the value resolves to ${String(input)}: ${aroundIt}`;
  return `quote it (${key}='${raw}') or cast it (${key}=str(${raw})) to pass it as text`;
}
