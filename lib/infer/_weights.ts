// How updateWeights' sources land in the engine's model: a model with the same layout is a flat
// copy; anything else goes by name, every weight checked before any is written.
import { Qwen2Model } from "../model/qwen2.ts";
import type { BufferLayout } from "../model/param_layout.ts";
import type { NamedWeights } from "./engine_options.ts";

/**
 * Writes `source` (a model, a Map of name to data, or `{ name, data[, shape] }` records) into
 * `model`. With `strict`, an unknown or missing name is an error; a weight of the wrong size or
 * shape always is. A rejected source leaves `model` as it was.
 */
export function loadWeights(
  model: Qwen2Model,
  source: Qwen2Model | NamedWeights,
  strict: boolean,
): void {
  if (source instanceof Qwen2Model) {
    if (source.disposed) throw new TypeError("The source model was disposed");
    if (source === model) return;
    if (sameLayout(source.layout, model.layout)) {
      model.params.copyFrom(source.params);
      model.markParamsChanged();
    } else {
      loadNamed(model, new Map(source.exportNamed().map((p) => [p.name, p.data])), strict);
    }
  } else if (source instanceof Map) {
    loadNamed(model, source as ReadonlyMap<string, Float32Array>, strict);
  } else if (source !== null && typeof source === "object" && Symbol.iterator in source) {
    const map = new Map<string, Float32Array>();
    for (const p of source as Iterable<{ name: string; data: Float32Array; shape?: number[] }>) {
      if (typeof p?.name !== "string") {
        throw new TypeError("Named weights must be records { name, data[, shape] }");
      }
      if (p.shape !== undefined && model.layout.has(p.name)) {
        const want = model.layout.get(p.name).shape;
        if (p.shape.length !== want.length || p.shape.some((d, i) => d !== want[i])) {
          throw new RangeError(
            `Weight '${p.name}' has shape [${p.shape.join(", ")}]: expected [${want.join(", ")}]`,
          );
        }
      }
      map.set(p.name, p.data);
    }
    loadNamed(model, map, strict);
  } else {
    throw new TypeError(
      "updateWeights needs a Qwen2Model, a Map of name to Float32Array or an iterable of " +
        "{ name, data } records",
    );
  }
}

function loadNamed(
  model: Qwen2Model,
  map: ReadonlyMap<string, Float32Array>,
  strict: boolean,
): void {
  const layout = model.layout;
  if (strict) {
    for (const name of map.keys()) {
      if (!layout.has(name)) {
        throw new RangeError(
          `Unknown weight '${name}': the engine's model has no such parameter ` +
            `(expected names like ${layout.regions[0]?.name ?? "?"})`,
        );
      }
    }
  }
  // all checked before anything is written: a rejected update leaves the weights as they were
  const missing: string[] = [];
  for (const r of layout.regions) {
    const data = map.get(r.name);
    if (data === undefined) missing.push(r.name);
    else if (!(data instanceof Float32Array) || data.length !== r.size) {
      throw new RangeError(
        `Parameter '${r.name}' of shape [${r.shape.join(", ")}] needs ${r.size} float32 ` +
          `values, got ${data instanceof Float32Array ? data.length : typeof data}`,
      );
    }
  }
  if (strict && missing.length > 0) {
    throw new Error(`No data for parameters: ${missing.join(", ")}`);
  }
  model.loadNamed((name) => map.get(name), { strict });
}

function sameLayout(a: BufferLayout, b: BufferLayout): boolean {
  if (a.total !== b.total || a.regions.length !== b.regions.length) return false;
  return a.regions.every((r, i) => {
    const s = b.regions[i]!;
    return r.name === s.name && r.offset === s.offset && r.size === s.size;
  });
}
