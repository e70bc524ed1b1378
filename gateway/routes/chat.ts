// POST /v1/chat/completions (docs/api/chat.md):
// JSON, or Server-Sent Events with `stream: true`. Errors before the first
// event are ordinary JSON errors with their status; after it, a final
// {"error"} event then [DONE]. A client disconnect aborts the upstream call.
import { isTroupeError } from "../../core/errors.ts";
import { modelIdSchema, withModel } from "../../providers/catalogue.ts";
import { chatResultSchema, isFinish, isReasoning, type ChatResult, type StreamEvent } from "../../providers/types.ts";
import { defineRoute, json, streamed, type RouteContext } from "../route.ts";
import { countChatInputTokens } from "../../providers/tokens.ts";
import { generationEstimateNanos } from "../billed-call.ts";
import type { AiRouteDeps } from "../usage-context.ts";
import { chatCompletionBodySchema, plainChatBody, type ChatCompletionBody } from "./chat-body.ts";

/** The most this request may cost: its input plus max_tokens of output, or the model's most without it (what a hard budget reserves). */
function chatEstimate(deps: AiRouteDeps, body: ChatCompletionBody): number {
  const input = countChatInputTokens(body.messages, body.tools);
  return generationEstimateNanos(deps.router.catalogue, "text", body.model, input, body.max_tokens);
}

/** The spec's result: what a provider said beyond it (`extras`) is for the compatible mounts. */
function specResult({ extras: _extras, ...result }: ChatResult): ChatResult {
  return result;
}

async function streamChat(deps: AiRouteDeps, ctx: RouteContext<ChatCompletionBody, undefined>): Promise<typeof streamed> {
  const events = deps.router.chatStream(ctx.body, { signal: ctx.signal });
  // Planning and the first upstream event happen before the response starts,
  // so invalid requests and unavailable providers still get their HTTP status.
  const first = await events.next();
  const sse = ctx.sse();
  let event: StreamEvent | undefined = first.done ? undefined : first.value;
  try {
    while (event !== undefined) {
      if (isFinish(event)) {
        // Billed before the client learns the call ended, so its next call sees it spent.
        await ctx.bill(event);
        const { extras: _extras, ...finish } = event;
        await sse.send(finish);
        break;
      }
      // Thinking has no event in /v1's stream (docs/api/chat.md).
      if (!isReasoning(event)) await sse.send(event);
      if (sse.closed) break;
      const next = await events.next();
      event = next.done ? undefined : next.value;
    }
  } catch (error) {
    const code = isTroupeError(error) ? error.code : "internal_error";
    const message = error instanceof Error ? error.message : "stream failed";
    await sse.send({ error: { code, message } });
  } finally {
    // Stops the upstream when the client left or we stopped early (an unbilled reservation is released by the server).
    await events.return(undefined).catch(() => undefined);
  }
  sse.done();
  return streamed;
}

export function chatRoutes(deps: AiRouteDeps) {
  // `model` is one of the catalogue's text models (an enum in the document), required when routing is manual.
  const models = modelIdSchema(deps.router.catalogue, { category: "text" });
  const body = withModel(chatCompletionBodySchema, models.nullable().optional());
  const modelIds: ReadonlySet<string> = new Set(models.options);
  return [
    defineRoute({
      method: "post",
      path: "/v1/chat/completions",
      summary: "Chat completion (JSON, or Server-Sent Events with stream: true)",
      tag: "chat",
      auth: "api_key",
      scope: "chat",
      body,
      // The parsed body goes to the router as it is.
      fastBody: (value) => plainChatBody(value, modelIds),
      responses: { 200: chatResultSchema },
      streams: true,
      errors: ["budget_exceeded", "provider_error", "no_provider_available", "provider_timeout"],
      billing: { admit: "reserve", via: deps, category: "chat", estimate: (ctx) => chatEstimate(deps, ctx.body) },
      handler: async (ctx) => {
        if (ctx.body.stream) return streamChat(deps, ctx);
        const result = await deps.router.chat(ctx.body, { signal: ctx.signal });
        await ctx.bill(result);
        return json(200, result.extras ? specResult(result) : result);
      },
    }),
  ];
}
