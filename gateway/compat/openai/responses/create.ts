// POST /openai/v1/responses, the call itself: translated onto Troupe's chat
// (translate.ts), routed and billed through the same route machinery as
// /openai/v1/chat/completions (the route declaration in routes.ts), the
// answer built as OpenAI's response object, stored once it ended unless
// `store: false`. A streamed response sends the provider's deltas as they
// come and is stored (completed, incomplete or failed) before its last event.
// `background: true` is queued and answered at once; background.ts runs it.
// A stateless call (statelessCall) goes through the response cache's router
// (docs/guides/caching.md); every other one through the plain router.
import { invalidRequest, isTroupeError, TroupeError } from "../../../../core/errors.ts";
import { ulid as newUlid } from "../../../../core/ids.ts";
import type { ResponseOwner, StoredResponse } from "../../../../actors/responses/response-actor.ts";
import type { Router } from "../../../../providers/router.ts";
import { isFinish, type StreamEvent, type StreamFinish } from "../../../../providers/types.ts";
import type { ApiKeyAuth } from "../../../auth-context.ts";
import { json, streamed, type RouteContext, type RouteResult } from "../../../route.ts";
import type { AiRouteDeps } from "../../../usage-context.ts";
import { ignoredParams, ignoredParamsHeaders, ignoredParamsSseHeaders } from "../../ignored-params.ts";
import type { Reader } from "./history.ts";
import type { Item } from "./items.ts";
import { ignorableResponseFields, type ResponseCreateBody } from "./request.ts";
import { outputItems, responseObject, statusOf, usageOf, type ModelOutput, type ResponseFrame } from "./response-object.ts";
import type { ResponseStore } from "./store.ts";
import { ResponseEventStream } from "./stream.ts";
import { inputItemsOf, toChatRequest, type TranslatedResponse } from "./translate.ts";
import { queueBackground, type BackgroundServices } from "./background-routes.ts";
import { usageContextOf } from "../../../usage-context.ts";

/**
 * Where a response given `conversation` reads its earlier items and appends
 * its own: the Conversations API's (gateway/compat/openai/conversations/).
 * Absent, a request naming a conversation is a 400 naming the field.
 */
export interface ResponseConversationHook {
  /** The conversation's items so far (oldest first), as input items; not found (404) for a reader of another environment. */
  items(conversationId: string, owner: ResponseOwner): Promise<Item[]>;
  /** Appends this response's input and output items, once it is stored. */
  append(conversationId: string, owner: ResponseOwner, items: Item[]): Promise<void>;
}

export interface ResponseRouteDeps extends AiRouteDeps {
  now(): number;
  store: ResponseStore;
  /** How long a stored response is kept (RESPONSES_RETENTION_DAYS). */
  retentionMs: number;
  conversations?: ResponseConversationHook | undefined;
  /** Background responses (absent: `background: true` is a 400 naming it). */
  background?: BackgroundServices | undefined;
  /** The response cache's router (gateway/features/cache.ts), for stateless calls only (absent: the plain router answers them too). */
  cachedRouter?: Router | undefined;
}

export function ownerOf(auth: ApiKeyAuth): ResponseOwner {
  return { organization_id: auth.key.organization_id, project_id: auth.key.project_id, environment_id: auth.key.environment_id };
}

export function readerOf(auth: ApiKeyAuth): Reader {
  return { organization_id: auth.key.organization_id, environment_id: auth.key.environment_id };
}

type CreateContext = RouteContext<ResponseCreateBody, undefined, string, "api_key">;

function conversationId(body: ResponseCreateBody): string | undefined {
  return body.conversation == null ? undefined : typeof body.conversation === "string" ? body.conversation : body.conversation.id;
}

/**
 * Reads and writes no server-side state: not stored, no chain, no
 * conversation, not in the background, no item referenced by id. Only such
 * a call may be answered from the cache or stored in it: any other one's
 * answer depends on (or becomes) state a cached copy would not see.
 */
export function statelessCall(body: ResponseCreateBody): boolean {
  return body.store === false && body.previous_response_id == null && body.conversation == null && body.background !== true && !inputItemsOf(body).some((i) => i.type === "item_reference");
}

function routerFor(deps: ResponseRouteDeps, body: ResponseCreateBody): Router {
  return deps.cachedRouter && statelessCall(body) ? deps.cachedRouter : deps.router;
}

async function persist(deps: ResponseRouteDeps, ctx: CreateContext, frame: ResponseFrame, input: Item[], response: Item): Promise<void> {
  if (!frame.store) return;
  const owner = ownerOf(ctx.auth);
  const stored: StoredResponse = { owner, expires_at: deps.now() + deps.retentionMs, previous_response_id: ctx.body.previous_response_id ?? null, input, response };
  await deps.store.save(frame.id, stored, deps.now());
  const conversation = conversationId(ctx.body);
  if (conversation && deps.conversations) await deps.conversations.append(conversation, owner, [...input, ...((response.output as Item[] | undefined) ?? [])]);
}

function answered(out: ModelOutput, frame: ResponseFrame, output: Item[]): Item {
  const { status, incomplete_details } = statusOf(out.finish_reason);
  return responseObject(frame, { status, incomplete_details, model: out.model, output, usage: usageOf(out) });
}

async function streamResponse(deps: ResponseRouteDeps, ctx: CreateContext, frame: ResponseFrame, ulid: string, chat: TranslatedResponse, ignored: string[]): Promise<typeof streamed> {
  // The cache's outcome headers are set by the first event, before the SSE head is sent.
  const events = routerFor(deps, ctx.body).chatStream(chat.request, { signal: ctx.signal, category: chat.category });
  // The first upstream event before the stream starts: refusals and unavailable providers keep their HTTP status.
  const first = await events.next();
  const sse = ctx.sse(ignoredParamsSseHeaders(ignored));
  const stream = new ResponseEventStream(ulid);
  const send = async (e: { type: string }) => sse.send(e, e.type);
  for (const e of stream.opening(responseObject(frame, { status: "in_progress", model: ctx.body.model, output: [], usage: null }))) await send(e);
  let event: StreamEvent | undefined = first.done ? undefined : first.value;
  let finish: StreamFinish | undefined;
  let failure: TroupeError | undefined;
  try {
    while (event !== undefined) {
      if (isFinish(event)) {
        finish = event;
        // Billed before the client learns the call ended, so its next call sees it spent.
        await ctx.bill(event);
      }
      for (const e of stream.events(event)) await send(e);
      if (isFinish(event) || sse.closed) break;
      const next = await events.next();
      event = next.done ? undefined : next.value;
    }
  } catch (error) {
    failure = isTroupeError(error) ? error : new TroupeError("internal_error", error instanceof Error ? error.message : "stream failed");
  } finally {
    await events.return(undefined).catch(() => undefined);
  }
  if (!finish && !failure && sse.closed) return streamed; // the client left: nothing answered, nothing stored
  const response = finish
    ? answered(stream.output(finish), frame, stream.items)
    : responseObject(frame, {
        status: "failed",
        model: ctx.body.model,
        output: stream.items,
        usage: null,
        error: { code: "server_error", message: failure?.message ?? "the provider's stream ended without finishing" },
      });
  await persist(deps, ctx, frame, chat.input, response);
  await send(stream.closing(response));
  sse.end();
  return streamed;
}

/** `estimateNanos`: the most the call may cost (a background response holds it for as long as it runs). */
export async function createResponse(deps: ResponseRouteDeps, ctx: CreateContext, estimateNanos: () => number): Promise<RouteResult> {
  const { body } = ctx;
  if (body.background) {
    if (!deps.background) throw invalidRequest([{ path: "background", message: "background responses are not served by this Troupe" }]);
    if (body.store === false) throw invalidRequest([{ path: "store", message: "a background response is stored: leave store out or true" }]);
  }
  const ulid = newUlid(deps.now());
  const frame: ResponseFrame = { id: `resp_${ulid}`, createdSeconds: Math.floor(deps.now() / 1000), body, store: body.store !== false };
  const conversation = conversationId(body);
  if (conversation && !deps.conversations) throw new TroupeError("invalid_request", "conversation: the Conversations API is not served yet", { details: [{ path: "conversation", message: "not served yet" }] });
  const earlier = conversation && deps.conversations ? await deps.conversations.items(conversation, ownerOf(ctx.auth)) : [];
  const chat = await toChatRequest(deps.router.catalogue, deps.store.history, readerOf(ctx.auth), body, ulid, earlier);
  const ignored = ignoredParams(body, ignorableResponseFields);
  if (body.background && deps.background) {
    const owner = ownerOf(ctx.auth);
    const payer = usageContextOf(ctx);
    if (!payer) throw new TroupeError("invalid_request", "background responses need an API key");
    const response = responseObject(frame, { status: "queued", model: body.model, output: [], usage: null });
    const stored: StoredResponse = { owner, expires_at: deps.now() + deps.retentionMs, previous_response_id: body.previous_response_id ?? null, input: chat.input, response };
    const { request_id: _request, call: _call, ...payerOnly } = payer;
    return queueBackground(deps.background, ctx, {
      id: frame.id,
      stored,
      payer: payerOnly,
      category: chat.category === "vision" ? "vision" : "chat",
      estimateNanos: estimateNanos(),
      ignored,
      index: () => deps.store.index(frame.id, owner.organization_id, deps.now()),
    });
  }
  if (body.stream) return streamResponse(deps, ctx, frame, ulid, chat, ignored);
  const result = await routerFor(deps, body).chat(chat.request, { signal: ctx.signal, category: chat.category });
  await ctx.bill(result);
  const out: ModelOutput = { ...result, tool_calls: result.tool_calls ?? [], reasoning: result.extras?.reasoning ?? [] };
  const response = answered(out, frame, outputItems(ulid, out));
  await persist(deps, ctx, frame, chat.input, response);
  return json(200, response, ignoredParamsHeaders(ignored));
}
