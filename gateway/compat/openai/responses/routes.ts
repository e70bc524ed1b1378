// OpenAI's Responses API on the OpenAI-compatible mount
// (docs/guides/responses.md): create (plain, streamed or in the background),
// retrieve (a background one's current state and event stream), cancel,
// delete, the input items (paged as OpenAI pages them) and the input token
// count. Every route is a `chat` call of an API key; create is admitted,
// reserved and billed as /openai/v1/chat/completions is (a background one
// holds its reservation until it ends: background-routes.ts). A stored response belongs to
// the key's environment: any other key's reads are 404.
import { z } from "zod";
import { TroupeError, type FieldIssue } from "../../../../core/errors.ts";
import { countChatInputTokens } from "../../../../providers/tokens.ts";
import { generationEstimateNanos } from "../../../billed-call.ts";
import { defineRoute, json, streamed, type SseWriter } from "../../../route.ts";
import { openAiDialect } from "../errors.ts";
import { modelCallErrors } from "../mount.ts";
import { modelNameSchema } from "../model-name.ts";
import { createResponse, readerOf, type ResponseRouteDeps } from "./create.ts";
import { itemsToMessages, responseUlid, type Item } from "./items.ts";
import { inputTokensSchema, responseCreateSchema, type ResponseCreateBody } from "./request.ts";
import { replayEvents } from "./replay.ts";
import { cancelBackground, currentBackground, followRun, notFound } from "./background-routes.ts";
import { inputItemsOf, toChatRequest } from "./translate.ts";

export type { ResponseRouteDeps, ResponseConversationHook } from "./create.ts";

/** Their own tag in the document; the mount's credential and error dialect. */
const responsesMount = { tag: "OpenAI Responses", auth: "api_key", dialect: openAiDialect, scope: "chat" } as const;

const itemSchema = z.looseObject({ type: z.string(), id: z.string().optional() });
const responseSchema = z.looseObject({
  id: z.string().describe("resp_…"),
  object: z.literal("response"),
  created_at: z.number().int().describe("Unix seconds"),
  status: z.enum(["completed", "incomplete", "failed", "in_progress", "queued", "cancelled"]),
  model: z.string(),
  output: z.array(itemSchema),
  usage: z
    .object({
      input_tokens: z.number().int(),
      input_tokens_details: z.object({ cached_tokens: z.number().int() }),
      output_tokens: z.number().int(),
      output_tokens_details: z.object({ reasoning_tokens: z.number().int() }),
      total_tokens: z.number().int(),
    })
    .nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  previous_response_id: z.string().nullable(),
  store: z.boolean(),
});
const streamEventSchema = z.looseObject({ type: z.string().describe("response.created, response.output_text.delta, … response.completed"), sequence_number: z.number().int() });
const deletedSchema = z.object({ id: z.string(), object: z.literal("response"), deleted: z.literal(true) });
const itemListSchema = z.object({ object: z.literal("list"), data: z.array(itemSchema), first_id: z.string().nullable(), last_id: z.string().nullable(), has_more: z.boolean() });
const inputTokensAnswer = z.object({ object: z.literal("response.input_tokens"), input_tokens: z.number().int() });

const retrieveQuery = z.object({
  include: z.union([z.string(), z.array(z.string())]).optional(),
  include_obfuscation: z.string().optional(),
  stream: z.enum(["true", "false"]).optional(),
  starting_after: z.coerce.number().int().min(0).optional(),
});
const itemsQuery = z.object({
  after: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  order: z.enum(["asc", "desc"]).default("desc"),
  include: z.union([z.string(), z.array(z.string())]).optional(),
});

/** An id Troupe could not have made is not found without a read. */
function responseIdParam(id: string): string {
  if (!responseUlid(id)) throw new TroupeError("not_found", `No response with id '${id}' found.`);
  return id;
}

function carriesImages(body: Pick<ResponseCreateBody, "input">): boolean {
  return inputItemsOf(body).some((i) => (i.type === "message" && typeof i.content !== "string" && i.content.some((p) => p.type === "input_image")) || (i.type === "function_call_output" && typeof i.output !== "string" && i.output.some((p) => p.type === "input_image")));
}

/** The most this request may cost before its history is read: its own input and its most output (docs/decisions.md). */
function ownInputTokens(body: ResponseCreateBody): number {
  const own = inputItemsOf(body).filter((i) => i.type !== "item_reference");
  const issues: FieldIssue[] = [];
  const { messages } = itemsToMessages(own, "input", issues);
  const tools = body.tools?.map((t) => ({ name: t.name, description: t.description ?? "", parameters: t.parameters ?? {} }));
  return countChatInputTokens(body.instructions ? [{ role: "system", content: body.instructions }, ...messages] : messages, tools);
}

/** The most a create may cost (its reservation): its own input and its most output. */
function estimateOf(deps: ResponseRouteDeps, body: ResponseCreateBody): number {
  const entry = deps.router.catalogue.get(body.model);
  return generationEstimateNanos(deps.router.catalogue, carriesImages(body) ? "vision" : "text", entry ? entry.id : null, ownInputTokens(body), body.max_output_tokens);
}

/** A stored response streamed again as its events, whole (replay.ts). */
async function replayStored(sse: SseWriter, response: Item, startingAfter: number | undefined): Promise<typeof streamed> {
  for (const e of replayEvents(response, startingAfter)) {
    if (sse.closed) break;
    await sse.send(e, e.type);
  }
  sse.end();
  return streamed;
}

export function responseRoutes(deps: ResponseRouteDeps) {
  const { store } = deps;
  return [
    defineRoute({
      method: "post",
      path: "/openai/v1/responses",
      summary: "Create a model response (OpenAI's Responses API; JSON, or its Server-Sent Events with stream: true)",
      ...responsesMount,
      inputScope: (body) => (carriesImages(body) ? "vision" : undefined),
      body: responseCreateSchema.extend({ model: modelNameSchema(deps.router.catalogue, { category: "text" }) }),
      responses: { 200: responseSchema },
      streams: streamEventSchema,
      errors: modelCallErrors,
      billing: {
        admit: "reserve",
        via: deps,
        category: (ctx) => (carriesImages(ctx.body) ? "vision" : "chat"),
        // A background response is admitted here (nothing reserved) and holds its estimate itself for as long as it runs (background-routes.ts).
        estimate: (ctx) => (ctx.body.background ? 0 : estimateOf(deps, ctx.body)),
      },
      handler: (ctx) => createResponse(deps, ctx, () => estimateOf(deps, ctx.body)),
    }),
    defineRoute({
      method: "post",
      path: "/openai/v1/responses/input_tokens",
      summary: "Count the input tokens a response would send (its history included)",
      ...responsesMount,
      body: inputTokensSchema,
      responses: { 200: inputTokensAnswer },
      errors: ["not_found"],
      handler: async (ctx) => {
        const body = { ...ctx.body, model: ctx.body.model ?? "troupe/auto" };
        const { request } = await toChatRequest(deps.router.catalogue, store.history, readerOf(ctx.auth), body, "0".repeat(26));
        return json(200, { object: "response.input_tokens", input_tokens: countChatInputTokens(request.messages, request.tools) });
      },
    }),
    defineRoute({
      method: "get",
      path: "/openai/v1/responses/:id",
      summary: "Retrieve a stored response (with stream=true: its events again, as Server-Sent Events, after starting_after)",
      ...responsesMount,
      query: retrieveQuery,
      responses: { 200: responseSchema },
      streams: streamEventSchema,
      errors: ["not_found"],
      handler: async (ctx) => {
        const id = responseIdParam(ctx.params.id);
        const reader = readerOf(ctx.auth);
        const stored = await store.get(id, reader);
        if (!stored || stored.response.background === true) {
          // A background response (running, or ended): its actor has the current object and the event log.
          const current = deps.background ? await currentBackground(deps.background, id, reader) : null;
          if (!current) throw notFound(id);
          if (ctx.query.stream !== "true") return json(200, current.response);
          if (current.background && deps.background) return followRun(deps.background, ctx.sse(), id, reader, ctx.query.starting_after ?? -1);
          return replayStored(ctx.sse(), current.response, ctx.query.starting_after);
        }
        if (ctx.query.stream !== "true") return json(200, stored.response);
        return replayStored(ctx.sse(), stored.response, ctx.query.starting_after);
      },
    }),
    defineRoute({
      method: "post",
      path: "/openai/v1/responses/:id/cancel",
      summary: "Cancel a background response (queued or in progress); one already finished is answered as it is",
      ...responsesMount,
      responses: { 200: responseSchema },
      errors: ["not_found", "invalid_request"],
      handler: async (ctx) => {
        const id = responseIdParam(ctx.params.id);
        if (!deps.background) throw new TroupeError("invalid_request", "Only responses created with background set to true can be cancelled.", { details: [{ path: "background", message: "not served" }] });
        return json(200, await cancelBackground(deps.background, id, readerOf(ctx.auth)));
      },
    }),
    defineRoute({
      method: "delete",
      path: "/openai/v1/responses/:id",
      summary: "Delete a stored response",
      ...responsesMount,
      responses: { 200: deletedSchema },
      errors: ["not_found"],
      handler: async (ctx) => {
        const id = responseIdParam(ctx.params.id);
        if (!(await store.delete(id, readerOf(ctx.auth)))) throw new TroupeError("not_found", `No response with id '${id}' found.`);
        // A background run of this process stops now (on another replica: at its next report).
        deps.background?.runner.abort(id);
        return json(200, { id, object: "response", deleted: true });
      },
    }),
    defineRoute({
      method: "get",
      path: "/openai/v1/responses/:id/input_items",
      summary: "List a stored response's input items (paged: after, limit, order)",
      ...responsesMount,
      query: itemsQuery,
      responses: { 200: itemListSchema },
      errors: ["not_found"],
      handler: async (ctx) => {
        const id = responseIdParam(ctx.params.id);
        const stored = await store.get(id, readerOf(ctx.auth));
        if (!stored) throw new TroupeError("not_found", `No response with id '${id}' found.`);
        const ordered: Item[] = ctx.query.order === "asc" ? stored.input : [...stored.input].reverse();
        let start = 0;
        if (ctx.query.after !== undefined) {
          const at = ordered.findIndex((i) => i.id === ctx.query.after);
          if (at < 0) throw new TroupeError("not_found", `after: no input item '${ctx.query.after}' in response '${id}'.`);
          start = at + 1;
        }
        const data = ordered.slice(start, start + ctx.query.limit);
        const idOf = (item: Item | undefined) => (item && typeof item.id === "string" ? item.id : null);
        return json(200, { object: "list", data, first_id: idOf(data[0]), last_id: idOf(data.at(-1)), has_more: start + data.length < ordered.length });
      },
    }),
  ];
}
