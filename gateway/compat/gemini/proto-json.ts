// Google's APIs read proto JSON: each field by its lowerCamelCase name or
// its proto name in snake_case (`maxOutputTokens` or `max_output_tokens`),
// and google-genai sends some in snake_case (`parameters_json_schema`). So
// a body's field names are made lowerCamelCase before the strict schemas
// read them, except inside values that are the caller's own data (function
// arguments and responses, JSON Schemas, labels), whose keys are names.
import { invalidRequest } from "../../../core/errors.ts";

/** Keys whose values are free-form: their insides are left as sent. */
const verbatim = new Set(["args", "response", "parameters", "parametersJsonSchema", "responseJsonSchema", "responseSchema", "labels"]);

const camel = (name: string): string => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** The value with lowerCamelCase field names; the same object when it had none to change (the SDKs' common case: no copy). */
export function camelFields(value: unknown, path = "body"): unknown {
  if (Array.isArray(value)) {
    let changed: unknown[] | undefined;
    value.forEach((v, i) => {
      const c = camelFields(v, `${path}.${i}`);
      if (c !== v) (changed ??= [...value])[i] = c;
    });
    return changed ?? value;
  }
  if (typeof value !== "object" || value === null) return value;
  let changed = false;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    const name = key.includes("_") ? camel(key) : key;
    if (Object.hasOwn(out, name)) throw invalidRequest([{ path: `${path}.${name}`, message: `given twice (as ${name} and in snake_case): send one` }]);
    const converted = verbatim.has(name) ? inner : camelFields(inner, `${path}.${name}`);
    if (name !== key || converted !== inner) changed = true;
    out[name] = converted;
  }
  return changed ? out : value;
}
