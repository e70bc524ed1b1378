// POST /openai/v1/chat/completions: OpenAI's request translated onto Troupe's
// chat (chat-request.ts), admitted, routed, billed and cut off exactly as
// POST /v1/chat/completions is (gateway/routes/chat.ts): the same budget
// reservation, the bill settled before the last event, the upstream call
// stopped when the client stops reading. Fields accepted and not sent on are
// named in the troupe-ignored-params header of either answer (chat-fields.ts).
import { isTroupeError, TroupeError } from "../../../core/errors.ts";
import { countChatInputTokens } from "../../../providers/tokens.ts";
import { isFinish, type StreamEvent } from "../../../providers/types.ts";
import { generationEstimateNanos } from "../../billed-call.ts";
import { defineRoute, json, streamed, type RouteContext } from "../../route.ts";
import type { AiRouteDeps } from "../../usage-context.ts";
import { ignoredParamsHeaders, ignoredParamsSseHeaders } from "../ignored-params.ts";
import { plainOpenAiChatBody } from "./chat-body-fast.ts";
import { openAiChatRequestSchema, toChatRequest, type OpenAiChatRequest, type TranslatedChat } from "./chat-request.ts";
import { ignoredHints } from "./chat-fields.ts";
import { chatCompletionChunkSchema, chatCompletionSchema, completionId, toChatCompletion } from "./chat-response.ts";
import { chunkStream } from "./chat-stream.ts";
import { openAiError } from "./errors.ts";
import { modelCallErrors, openAiMount } from "./mount.ts";
import { modelNameSchema } from "./model-name.ts";

export interface OpenAiRouteDeps extends AiRouteDeps {
  /** Milliseconds since the epoch: `created` of what is answered. */
  now(): number;
}

async function streamChat(deps: OpenAiRouteDeps, ctx: RouteContext<OpenAiChatRequest, undefined>, chat: TranslatedChat): Promise<typeof streamed> {
  const events = deps.router.chatStream(chat.request, { signal: ctx.signal, category: chat.category });
  // The first upstream event comes before the response starts: refusals and
  // unavailable providers still get their HTTP status.
  const first = await events.next();
  const sse = ctx.sse(ignoredParamsSseHeaders([...chat.ignored, ...ignoredHints(chat.request.hints, firstChoice(deps, chat))]));
  const chunks = chunkStream(completionId(), Math.floor(deps.now() / 1000), ctx.body.model, ctx.body.stream_options?.include_usage === true, chat.legacyFunctions);
  let event: StreamEvent | undefined = first.done ? undefined : first.value;
  try {
    while (event !== undefined) {
      // Billed before the client learns the call ended, so its next call sees it spent.
      if (isFinish(event)) await ctx.bill(event);
      for (const chunk of chunks.chunks(event)) await sse.send(chunk);
      if (isFinish(event) || sse.closed) break;
      const next = await events.next();
      event = next.done ? undefined : next.value;
    }
  } catch (error) {
    // After the stream started: OpenAI's error object as an event (the SDKs raise it), then [DONE].
    await sse.send(openAiError(isTroupeError(error) ? error : new TroupeError("internal_error", error instanceof Error ? error.message : "stream failed")).body);
  } finally {
    await events.return(undefined).catch(() => undefined);
  }
  sse.done();
  return streamed;
}

/**
 * The model a stream's routing tries first: its header leaves before the
 * answer names who served it. Only looked up when the body sets a hint.
 */
function firstChoice(deps: OpenAiRouteDeps, chat: TranslatedChat): { provider: string; id: string } | undefined {
  if (chat.request.hints === undefined) return undefined;
  const { request } = chat;
  const need = { category: chat.category, tools: (request.tools?.length ?? 0) > 0, streaming: true, json: request.response_format !== undefined };
  return deps.router.plan(request.model, request.routing_strategy ?? "auto", need)[0];
}

/** Whether a user message carries an image part: such a call is vision (its key needs that scope, and it is billed so), as POST /v1/vision/analyze. */
function carriesImages(body: OpenAiChatRequest): boolean {
  return body.messages.some((m) => m.role === "user" && typeof m.content !== "string" && m.content.some((p) => p.type === "image_url"));
}

export function openAiChatRoutes(deps: OpenAiRouteDeps) {
  return [
    defineRoute({
      method: "post",
      path: "/openai/v1/chat/completions",
      summary: "OpenAI-compatible chat completion (JSON, or chat.completion.chunk Server-Sent Events with stream: true)",
      ...openAiMount,
      scope: "chat",
      inputScope: (body) => (carriesImages(body) ? "vision" : undefined),
      body: openAiChatRequestSchema.extend({ model: modelNameSchema(deps.router.catalogue, { category: "text" }) }),
      fastBody: plainOpenAiChatBody,
      responses: { 200: chatCompletionSchema },
      streams: chatCompletionChunkSchema,
      errors: modelCallErrors,
      billing: {
        admit: "reserve",
        via: deps,
        category: (ctx) => (carriesImages(ctx.body) ? "vision" : "chat"),
        // As /v1: without max_tokens a hard budget reserves the model's most output, so a burst cannot run past it.
        estimate: (ctx) => {
          const { category, request } = toChatRequest(deps.router.catalogue, ctx.body);
          return generationEstimateNanos(deps.router.catalogue, category, request.model, countChatInputTokens(request.messages, request.tools), request.max_tokens);
        },
      },
      handler: async (ctx) => {
        const chat = toChatRequest(deps.router.catalogue, ctx.body);
        if (ctx.body.stream) return streamChat(deps, ctx, chat);
        const result = await deps.router.chat(chat.request, { signal: ctx.signal, category: chat.category });
        await ctx.bill(result);
        const ignored = [...chat.ignored, ...ignoredHints(chat.request.hints, { provider: result.provider, id: result.model })];
        return json(200, toChatCompletion(result, completionId(), Math.floor(deps.now() / 1000), chat.legacyFunctions), ignoredParamsHeaders(ignored));
      },
    }),
  ];
}
