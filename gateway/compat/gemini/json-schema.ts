// Gemini's Schema object (an OpenAPI 3.0 subset: `type: "STRING"`,
// `nullable`, `propertyOrdering`) as the JSON Schema Troupe's tools and
// response_format carry. responseJsonSchema / parametersJsonSchema are
// already JSON Schema and pass as they are.

const nested = ["properties"] as const;
const lists = ["anyOf", "prefixItems"] as const;

export function toJsonSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "propertyOrdering") continue; // an ordering hint for Gemini's decoder, no JSON Schema keyword
    if (key === "type" && typeof value === "string") out["type"] = value.toLowerCase();
    else if (key === "nullable") continue;
    else if ((nested as readonly string[]).includes(key) && isRecord(value)) out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, isRecord(v) ? toJsonSchema(v) : v]));
    else if (key === "items" && isRecord(value)) out[key] = toJsonSchema(value);
    else if ((lists as readonly string[]).includes(key) && Array.isArray(value)) out[key] = value.map((v) => (isRecord(v) ? toJsonSchema(v) : v));
    else out[key] = value;
  }
  if (schema["nullable"] === true && typeof out["type"] === "string") out["type"] = [out["type"], "null"];
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
