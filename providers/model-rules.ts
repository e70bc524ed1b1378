// Per-model request rules JSON Schema can state (OpenAPI `if`/`then`, one
// pair per model, in the body's `allOf`): a named model's fixed embedding
// dimension, a video model that needs or refuses `image_url`, a speech
// model's voices, an image model's sizes and `n`. The server refuses the same
// requests (400 naming the field) when it checks a request against its model
// (capabilityProblem, the routes' media checks); these only say so up front,
// so a client or a fuzzer reads them from the document.
import { capabilityProblem, type Catalogue, type ModelEntry, type Need } from "./catalogue.ts";

type JsonObject = Record<string, unknown>;

/** One if/then per model serving `need` that `then` has a rule for. */
export function perModelRules(catalogue: Catalogue, need: Need, then: (m: ModelEntry) => JsonObject | undefined): JsonObject[] {
  const rules: JsonObject[] = [];
  for (const m of catalogue.models) {
    if (capabilityProblem(m, need) !== undefined) continue;
    const rule = then(m);
    if (rule) rules.push({ if: { properties: { model: { const: m.id } }, required: ["model"] }, then: rule });
  }
  return rules;
}

/** Embeddings: a model without custom dimensions takes only its own `dimensions` (or none). */
export function embeddingDimensionRules(catalogue: Catalogue): JsonObject[] {
  return perModelRules(catalogue, { category: "embedding" }, (m) =>
    m.capabilities.custom_dimensions || m.capabilities.dimensions === undefined ? undefined : { properties: { dimensions: { anyOf: [{ const: m.capabilities.dimensions }, { type: "null" }] } } },
  );
}

/** Video: a model that only animates an image needs `image_url`; one that cannot takes none. */
export function videoImageRules(catalogue: Catalogue): JsonObject[] {
  return perModelRules(catalogue, { category: "video" }, (m) => {
    const input = m.capabilities.image_input ?? "none";
    if (input === "required") return { properties: { image_url: { type: "string" } }, required: ["image_url"] };
    if (input === "none") return { properties: { image_url: { type: "null" } } };
    return undefined;
  });
}

/** Speech: a model's own voices. */
export function speechVoiceRules(catalogue: Catalogue, need: Need): JsonObject[] {
  return perModelRules(catalogue, need, (m) => (m.capabilities.voices ? { properties: { voice: { enum: m.capabilities.voices } } } : undefined));
}

/** Images: a model's own sizes and at most its `n_max` images. */
export function imageRules(catalogue: Catalogue): JsonObject[] {
  return perModelRules(catalogue, { category: "image" }, (m) => {
    const properties: JsonObject = {};
    if (m.capabilities.sizes) properties["size"] = { enum: m.capabilities.sizes };
    properties["n"] = { maximum: m.capabilities.n_max ?? 1 };
    return { properties };
  });
}
