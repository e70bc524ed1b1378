// The /gemini mount: Google's Gemini API (generativelanguage v1 and v1beta,
// as @google/genai and google-genai call it with baseUrl <troupe>/gemini)
// over what /v1 runs on — the same admission (scope chat for generating and
// counting, embeddings for embedding; vision too for image input), budget
// reservation and billing (declared on the route: gateway/route-billing.ts)
// and router (any catalogue model of any provider, with its fallbacks).
// Only the shapes differ: request.ts, response.ts and stream.ts translate,
// errors.ts renders the errors. One POST route per version serves every
// `models/{model}:{method}` (model-action.ts).
import { z } from "zod";
import { checkInputScope } from "../../admission.ts";
import type { Scope } from "../../route.ts";
import { defineRoute } from "../../route.ts";
import type { AiRouteDeps } from "../../usage-context.ts";
import { isPlainRecord } from "../../plain-body.ts";
import { parseWith } from "../../validation.ts";
import { plainGenerateContentBody } from "./body-fast.ts";
import { embeddingEstimate, embed } from "./embed.ts";
import { countTokens, generate, generateEstimate } from "./generate.ts";
import { requireModelAction, type ModelAction } from "./model-action.ts";
import { geminiModelRoutes } from "./models-routes.ts";
import { camelFields } from "./proto-json.ts";
import { geminiMount, geminiVersions, type GeminiVersion } from "./mount.ts";
import {
  batchEmbedContentsBodySchema,
  batchEmbedContentsResponseSchema,
  countTokensBodySchema,
  countTokensResponseSchema,
  embedContentBodySchema,
  embedContentResponseSchema,
  generateContentBodySchema,
  generateContentResponseSchema,
} from "./schemas.ts";

/** Each method's body schema: the route takes any JSON object and parses it by the method its path names. */
export const bodySchemas = {
  generateContent: generateContentBodySchema,
  streamGenerateContent: generateContentBodySchema,
  countTokens: countTokensBodySchema,
  embedContent: embedContentBodySchema,
  batchEmbedContents: batchEmbedContentsBodySchema,
} as const satisfies Record<ModelAction, z.ZodType>;

export type BodyOf<A extends ModelAction> = z.output<(typeof bodySchemas)[A]>;

const scopeOf: Record<ModelAction, Scope> = {
  generateContent: "chat",
  streamGenerateContent: "chat",
  countTokens: "chat",
  embedContent: "embeddings",
  batchEmbedContents: "embeddings",
};

const anyBody = z.record(z.string(), z.unknown()).meta({
  description: "By the path's method: GenerateContentRequest (generateContent, streamGenerateContent), CountTokensRequest, EmbedContentRequest or BatchEmbedContentsRequest, as Gemini's API documents them",
});

// Parsed once per request: the billing estimate (hard-limited projects only) and the handler read the same value.
const parsed = new WeakMap<object, unknown>();

/** The body parsed by the schema of `action` (400 naming the field, in Gemini's shape). */
export function bodyFor<A extends ModelAction>(action: A, raw: Record<string, unknown>): BodyOf<A> {
  if (parsed.has(raw)) return parsed.get(raw) as BodyOf<A>;
  // The common generation body by hand (body-fast.ts); anything else through the name pass and the strict schema.
  const plain = action === "generateContent" || action === "streamGenerateContent" ? plainGenerateContentBody(raw) : undefined;
  const body = (plain ?? parseWith(bodySchemas[action], camelFields(raw), "body")) as BodyOf<A>;
  parsed.set(raw, body);
  return body;
}

/** Whether a turn carries an image part, in either proto JSON spelling (such a call is vision: its key needs that scope, and it is billed so). */
function carriesImages(raw: Record<string, unknown>): boolean {
  const contents = raw["contents"];
  if (!Array.isArray(contents)) return false;
  return contents.some((c: unknown) => {
    const parts = typeof c === "object" && c !== null ? (c as { parts?: unknown }).parts : undefined;
    return Array.isArray(parts) && parts.some((p: unknown) => typeof p === "object" && p !== null && ["inlineData", "inline_data", "fileData", "file_data"].some((k) => k in p));
  });
}

function modelActionRoute(deps: AiRouteDeps, version: GeminiVersion) {
  const { catalogue } = deps.router;
  return defineRoute({
    ...geminiMount,
    method: "post",
    path: `/gemini/${version}/models/:model`,
    summary: "Gemini API: models/{model}:generateContent, :streamGenerateContent (SSE with ?alt=sse, else a streamed JSON array), :countTokens, :embedContent, :batchEmbedContents, on any catalogue model",
    body: anyBody,
    // Any JSON object is the route's body (its method's schema parses it in bodyFor): no copy by a record schema first.
    fastBody: (value) => (isPlainRecord(value) ? value : undefined),
    query: z.object({ alt: z.enum(["sse", "json"]).optional() }),
    // Image input makes a generation vision, as on the other mounts; the method's own scope is checked with its category below.
    inputScope: (body) => (carriesImages(body) ? "vision" : undefined),
    responses: { 200: z.union([generateContentResponseSchema, countTokensResponseSchema, embedContentResponseSchema, batchEmbedContentsResponseSchema]) },
    streams: generateContentResponseSchema,
    errors: ["not_found", "budget_exceeded", "provider_error", "no_provider_available", "provider_timeout"],
    billing: {
      admit: "reserve",
      via: deps,
      // Runs for every request, before any reservation: the one place the path's method is known
      // ahead of billing, so the method's scope (chat or embeddings) is checked here, 403 before a 402.
      category: (ctx) => {
        const { action } = requireModelAction(ctx.params.model);
        checkInputScope(ctx.auth, scopeOf[action]);
        if (action === "embedContent" || action === "batchEmbedContents") return "embeddings";
        return carriesImages(ctx.body) ? "vision" : "chat";
      },
      estimate: (ctx) => {
        const call = requireModelAction(ctx.params.model);
        switch (call.action) {
          case "generateContent":
          case "streamGenerateContent":
            return generateEstimate(catalogue, call.model, bodyFor(call.action, ctx.body), call.action === "streamGenerateContent");
          case "embedContent":
          case "batchEmbedContents":
            return embeddingEstimate(catalogue, call.model, call.action === "embedContent" ? [bodyFor("embedContent", ctx.body)] : bodyFor("batchEmbedContents", ctx.body).requests);
          case "countTokens":
            return 0; // calls no model
        }
      },
    },
    handler: async (ctx) => {
      const call = requireModelAction(ctx.params.model);
      switch (call.action) {
        case "generateContent":
        case "streamGenerateContent":
          // Without alt=sse Gemini streams one JSON array, as raw HTTP clients expect; the SDKs ask for SSE.
          return generate(deps, ctx, call.model, bodyFor(call.action, ctx.body), call.action === "streamGenerateContent", ctx.query.alt === "sse" ? "sse" : "json-array");
        case "countTokens":
          return countTokens(catalogue, call.model, bodyFor("countTokens", ctx.body));
        case "embedContent":
          return embed(deps, ctx, call.model, [bodyFor("embedContent", ctx.body)], "one");
        case "batchEmbedContents":
          return embed(deps, ctx, call.model, bodyFor("batchEmbedContents", ctx.body).requests, "batch");
      }
    },
  });
}

export function geminiRoutes(deps: AiRouteDeps) {
  return geminiVersions.flatMap((version) => [modelActionRoute(deps, version), ...geminiModelRoutes(deps.router.catalogue, version)]);
}
