// :embedContent and :batchEmbedContents onto Troupe's embedding router,
// billed as POST /v1/embeddings. Each request's content is its parts' text
// joined; Gemini's taskType becomes the input type of providers that take
// one (a query or a document), and outputDimensionality the dimensions.
import { invalidRequest } from "../../../core/errors.ts";
import type { Catalogue } from "../../../providers/catalogue.ts";
import { capabilityProblem } from "../../../providers/catalogue.ts";
import { countTokens } from "../../../providers/tokens.ts";
import { estimateNanos } from "../../billed-call.ts";
import { json, type RouteContext, type RouteResult } from "../../route.ts";
import type { AiRouteDeps } from "../../usage-context.ts";
import { requireModel } from "./request.ts";
import type { EmbedContentBody } from "./schemas.ts";

type EmbedRequest = Omit<EmbedContentBody, "model">;

function textsOf(requests: readonly EmbedRequest[]): string[] {
  return requests.map((r, i) => {
    const text = r.content.parts.map((p) => p.text ?? "").join("");
    if (text === "") throw invalidRequest([{ path: requests.length === 1 ? "body.content.parts" : `body.requests.${i}.content.parts`, message: "text to embed is needed" }]);
    return text;
  });
}

/** One dimensionality for the call: the router embeds a batch with one model. */
function dimensionsOf(requests: readonly EmbedRequest[]): number | undefined {
  const asked = new Set(requests.map((r) => r.outputDimensionality));
  if (asked.size > 1) throw invalidRequest([{ path: "body.requests", message: "every request of a batch must ask the same outputDimensionality" }]);
  return requests[0]?.outputDimensionality;
}

function inputTypeOf(requests: readonly EmbedRequest[]): "search_document" | "search_query" | undefined {
  const task = requests[0]?.taskType;
  if (task === "RETRIEVAL_QUERY" || task === "QUESTION_ANSWERING" || task === "CODE_RETRIEVAL_QUERY") return "search_query";
  if (task === "RETRIEVAL_DOCUMENT") return "search_document";
  return undefined;
}

function embeddingModel(catalogue: Catalogue, model: string, dimensions: number | undefined): string {
  const entry = requireModel(catalogue, model);
  const problem = capabilityProblem(entry, { category: "embedding", dimensions });
  if (problem) throw invalidRequest([{ path: "model", message: problem }]);
  return entry.id;
}

export function embeddingEstimate(catalogue: Catalogue, model: string, requests: readonly EmbedRequest[]): number {
  const id = embeddingModel(catalogue, model, dimensionsOf(requests));
  return estimateNanos(catalogue, "embedding", id, { input_tokens: textsOf(requests).reduce((n, t) => n + countTokens(t), 0) });
}

export async function embed(deps: AiRouteDeps, ctx: RouteContext<Record<string, unknown>, unknown>, model: string, requests: readonly EmbedRequest[], shape: "one" | "batch"): Promise<RouteResult> {
  const dimensions = dimensionsOf(requests);
  const id = embeddingModel(deps.router.catalogue, model, dimensions);
  const r = await deps.router.embed({ model: id, routing_strategy: "auto", input: textsOf(requests), dimensions, input_type: inputTypeOf(requests) }, { signal: ctx.signal });
  await ctx.bill(r);
  const embeddings = r.embeddings.map((values) => ({ values }));
  return json(200, shape === "one" ? { embedding: embeddings[0] } : { embeddings });
}
