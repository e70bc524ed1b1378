// POST /v1/chat/completions (spec §4.1; DESIGN.md §4 Chat and Streaming):
// JSON, or Server-Sent Events with `stream: true`. Errors before the first
// event are ordinary JSON errors with their status; after it, a final
// {"error"} event then [DONE]. A client disconnect aborts the upstream call.
import { z } from "zod";
import { isTroupeError } from "../../core/errors.ts";
import { modelIdSchema, withModel } from "../../providers/catalogue.ts";
import { chatRequestSchema } from "../../providers/chat-request.ts";
import { chatResultSchema, isFinish, type StreamEvent } from "../../providers/types.ts";
import { defineRoute, json, streamed, type RouteContext } from "../route.ts";
import { usageContextOf, type AiRouteDeps } from "../usage-context.ts";

/**
 * Body of POST /v1/chat/completions (spec §4.1): the chat request (its rules
 * live in providers/chat-request.ts) plus how to answer. The parsed body goes
 * to the router as it is.
 */
const chatCompletionBodySchema = chatRequestSchema.extend({ stream: z.boolean().default(false) });
type ChatCompletionBody = z.infer<typeof chatCompletionBodySchema>;

async function streamChat(deps: AiRouteDeps, ctx: RouteContext<ChatCompletionBody, undefined>): Promise<typeof streamed> {
  const events = deps.router.chatStream(ctx.body, { signal: ctx.signal });
  // Planning and the first upstream event happen before the response starts,
  // so invalid requests and unavailable providers still get their HTTP status.
  const first = await events.next();
  const sse = ctx.sse();
  let event: StreamEvent | undefined = first.done ? undefined : first.value;
  try {
    while (event !== undefined) {
      await sse.send(event);
      if (isFinish(event)) {
        deps.usage.record(usageContextOf(ctx), "chat", event);
        break;
      }
      if (sse.closed) break;
      const next = await events.next();
      event = next.done ? undefined : next.value;
    }
  } catch (error) {
    const code = isTroupeError(error) ? error.code : "internal_error";
    const message = error instanceof Error ? error.message : "stream failed";
    await sse.send({ error: { code, message } });
  } finally {
    // Stops the upstream when the client left or we stopped early.
    await events.return(undefined).catch(() => undefined);
  }
  sse.done();
  return streamed;
}

export function chatRoutes(deps: AiRouteDeps) {
  // `model` is one of the catalogue's text models (an enum in the document), required when routing is manual.
  const body = withModel(chatCompletionBodySchema, modelIdSchema(deps.router.catalogue, { category: "text" }).nullable().optional());
  return [
    defineRoute({
      method: "post",
      path: "/v1/chat/completions",
      summary: "Chat completion (JSON, or Server-Sent Events with stream: true)",
      tag: "chat",
      auth: "api_key",
      scope: "chat",
      body,
      responses: { 200: chatResultSchema },
      streams: true,
      errors: ["provider_error", "no_provider_available", "provider_timeout"],
      handler: async (ctx) => {
        if (ctx.body.stream) return streamChat(deps, ctx);
        const result = await deps.router.chat(ctx.body, { signal: ctx.signal });
        deps.usage.record(usageContextOf(ctx), "chat", result);
        return json(200, result);
      },
    }),
  ];
}
