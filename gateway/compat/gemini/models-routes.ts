// GET /gemini/{v1,v1beta}/models and models/{model}: the whole catalogue in
// Gemini's Model shape (name `models/<id>`), each with the methods this
// mount serves for it (generateContent and countTokens for text models,
// embedContent for embedding models), so the SDKs' models.list() and
// models.get() work for any provider's model.
import { z } from "zod";
import type { Catalogue, ModelEntry } from "../../../providers/catalogue.ts";
import { defineRoute, json } from "../../route.ts";
import { geminiMount, type GeminiVersion } from "./mount.ts";
import { requireModel } from "./request.ts";
import { geminiModelSchema, type GeminiModel } from "./schemas.ts";

function methodsOf(m: ModelEntry): string[] {
  if (m.category === "embedding") return ["embedContent", "batchEmbedContents"];
  if (m.category === "text") return ["generateContent", "streamGenerateContent", "countTokens"];
  return [];
}

function toGeminiModel(m: ModelEntry): GeminiModel {
  const model: GeminiModel = { name: `models/${m.id}`, baseModelId: m.id, version: "troupe", displayName: m.id, description: `${m.provider} ${m.category} model, served by Troupe`, supportedGenerationMethods: methodsOf(m) };
  if (m.capabilities.max_input_tokens !== undefined) model.inputTokenLimit = m.capabilities.max_input_tokens;
  if (m.capabilities.max_output_tokens !== undefined) model.outputTokenLimit = m.capabilities.max_output_tokens;
  return model;
}

export function geminiModelRoutes(catalogue: Catalogue, version: GeminiVersion) {
  return [
    defineRoute({
      ...geminiMount,
      method: "get",
      path: `/gemini/${version}/models`,
      summary: "Gemini API model list: every text and embedding model of the catalogue, of every provider",
      // One page: the catalogue is small; pageSize and pageToken are accepted and the list is whole.
      query: z.object({ pageSize: z.coerce.number().int().optional(), pageToken: z.string().optional() }),
      responses: { 200: z.object({ models: z.array(geminiModelSchema) }) },
      handler: async () => json(200, { models: catalogue.models.filter((m) => methodsOf(m).length > 0).map(toGeminiModel) }),
    }),
    defineRoute({
      ...geminiMount,
      method: "get",
      path: `/gemini/${version}/models/:model`,
      summary: "Gemini API model lookup (404 NOT_FOUND for an id the catalogue does not know)",
      responses: { 200: geminiModelSchema },
      errors: ["not_found"],
      handler: async (ctx) => json(200, toGeminiModel(requireModel(catalogue, ctx.params.model))),
    }),
  ];
}
