// The /anthropic/v1 mount: Anthropic's Messages API over what /v1 chat
// runs on — the same admission (API key in x-api-key or Authorization,
// scope "chat", rate limits), budget reservation and billing (declared on
// the route: gateway/route-billing.ts), and router (any catalogue model of any provider,
// with its fallbacks). Only the shapes differ: request.ts, response.ts,
// stream.ts translate, errors.ts renders the errors. A client that goes away
// aborts the upstream call (ctx.signal), as on /v1. Image blocks make a
// message call vision, as POST /v1/vision/analyze: the key needs the vision
// scope too (403 permission_error otherwise) and the call is billed as
// vision; count_tokens, which calls no model, needs only "chat". The beta
// client's `?beta=true` is the same endpoint (the beta fields are known
// without it); fields accepted and not sent are named in the
// troupe-ignored-params header of the answer, JSON or stream.
import { z } from "zod";
import { isTroupeError, TroupeError } from "../../../core/errors.ts";
import type { ChatRequest } from "../../../providers/chat-request.ts";
import { countChatInputTokens } from "../../../providers/tokens.ts";
import { isFinish, type StreamEvent } from "../../../providers/types.ts";
import { estimateNanos } from "../../billed-call.ts";
import { defineRoute, json, streamed, type RouteContext } from "../../route.ts";
import type { AiRouteDeps } from "../../usage-context.ts";
import { ignoredParamsHeaders, ignoredParamsSseHeaders } from "../ignored-params.ts";
import { anthropicDialect, anthropicErrorBody } from "./errors.ts";
import { ignoredFields, inMountTerms, requireModel, toChatConversation, toChatRequest } from "./request.ts";
import { messageId, toMessage } from "./response.ts";
import { countTokensBodySchema, countTokensResultSchema, messageSchema, messagesBodySchema, type MessagesBody } from "./schemas.ts";
import { MessageStreamTranslator } from "./stream.ts";

/** What every route of the mount declares besides its own fields. */
const mount = {
  tag: "Anthropic-compatible",
  auth: "api_key",
  scope: "chat",
  apiKeyHeader: "x-api-key",
  dialect: anthropicDialect,
} as const;

async function streamMessage(
  deps: AiRouteDeps,
  ctx: RouteContext<MessagesBody, z.output<typeof messagesQuerySchema>>,
  request: ChatRequest,
  inputTokens: number,
  ignored: string[],
): Promise<typeof streamed> {
  const events = deps.router.chatStream(request, { signal: ctx.signal });
  // Planning and the first upstream event happen before the response starts,
  // so invalid requests and unavailable providers still get their HTTP status.
  const first = await events.next().catch((error: unknown) => {
    throw inMountTerms(error, ctx.body);
  });
  const sse = ctx.sse([["request-id", ctx.requestId], ...ignoredParamsSseHeaders(ignored)]);
  const translator = new MessageStreamTranslator(messageId(), ctx.body.model, {
    stopSequences: ctx.body.stop_sequences,
    oneToolCall: oneToolCall(ctx.body),
    omitThinking: request.reasoning?.display === "omitted",
    provider: deps.router.catalogue.get(ctx.body.model)?.provider ?? "unknown",
  });
  const start = translator.start(inputTokens);
  await sse.send(start.data, start.event);
  let event: StreamEvent | undefined = first.done ? undefined : first.value;
  try {
    while (event !== undefined) {
      if (isFinish(event)) {
        // Billed before the client learns the call ended (message_delta carries the usage).
        await ctx.bill(event);
        for (const f of translator.finish(event)) await sse.send(f.data, f.event);
        break;
      }
      for (const f of translator.push(event)) await sse.send(f.data, f.event);
      if (sse.closed) break;
      const next = await events.next();
      event = next.done ? undefined : next.value;
    }
  } catch (error) {
    const troupe = isTroupeError(error) ? error : new TroupeError("internal_error", error instanceof Error ? error.message : "stream failed");
    await sse.send(anthropicErrorBody(troupe, ctx.requestId), "error");
  } finally {
    // Stops the upstream when the client left or the stream failed.
    await events.return(undefined).catch(() => undefined);
  }
  sse.end();
  return streamed;
}

/** Whether a message carries an image block: such a call is vision (its key needs that scope, and it is billed so), as POST /v1/vision/analyze. */
function carriesImages(body: MessagesBody): boolean {
  return body.messages.some((m) => Array.isArray(m.content) && m.content.some((b) => b.type === "image"));
}

const oneToolCall = (body: MessagesBody): boolean => body.tool_choice !== undefined && "disable_parallel_tool_use" in body.tool_choice && body.tool_choice.disable_parallel_tool_use === true;

// The SDK's beta client adds ?beta=true; other query parameters Anthropic does not take either.
const messagesQuerySchema = z.object({ beta: z.enum(["true", "false"]).optional() }).strict();

export function anthropicRoutes(deps: AiRouteDeps) {
  const { catalogue } = deps.router;
  return [
    defineRoute({
      ...mount,
      method: "post",
      path: "/anthropic/v1/messages",
      summary: "Anthropic Messages API: a message (JSON, or Anthropic's named SSE events with stream: true) from any catalogue text model",
      body: messagesBodySchema,
      query: messagesQuerySchema,
      inputScope: (body) => (carriesImages(body) ? "vision" : undefined),
      responses: { 200: messageSchema },
      streams: true,
      errors: ["not_found", "budget_exceeded", "provider_error", "no_provider_available", "provider_timeout"],
      billing: {
        admit: "reserve",
        via: deps,
        category: (ctx) => (carriesImages(ctx.body) ? "vision" : "chat"),
        // The most it may cost: its input plus max_tokens of output (as /v1 chat reserves); an unknown model is 404 first.
        estimate: (ctx) => {
          requireModel(catalogue, ctx.body.model);
          const request = toChatRequest(ctx.body);
          return estimateNanos(catalogue, "text", ctx.body.model, { input_tokens: countChatInputTokens(request.messages, request.tools), output_tokens: ctx.body.max_tokens });
        },
      },
      handler: async (ctx) => {
        requireModel(catalogue, ctx.body.model);
        const request = toChatRequest(ctx.body);
        const ignored = ignoredFields(ctx.body, ctx.headers, catalogue.get(ctx.body.model)?.provider);
        if (ctx.body.stream) return streamMessage(deps, ctx, request, countChatInputTokens(request.messages, request.tools), ignored);
        const result = await deps.router.chat(request, { signal: ctx.signal }).catch((error: unknown) => {
          throw inMountTerms(error, ctx.body);
        });
        await ctx.bill(result);
        const message = toMessage(result, messageId(), { stopSequences: ctx.body.stop_sequences, oneToolCall: oneToolCall(ctx.body), omitThinking: request.reasoning?.display === "omitted" });
        return json(200, message, { "request-id": ctx.requestId, ...ignoredParamsHeaders(ignored) });
      },
    }),
    defineRoute({
      ...mount,
      method: "post",
      path: "/anthropic/v1/messages/count_tokens",
      summary: "Anthropic Messages API: the input tokens of a request, as Troupe counts them (no provider call, not billed)",
      body: countTokensBodySchema,
      query: messagesQuerySchema,
      responses: { 200: countTokensResultSchema },
      errors: ["not_found"],
      handler: async (ctx) => {
        requireModel(catalogue, ctx.body.model);
        const { messages, tools } = toChatConversation(ctx.body);
        return json(200, { input_tokens: countChatInputTokens(messages, tools) }, { "request-id": ctx.requestId });
      },
    }),
  ];
}
