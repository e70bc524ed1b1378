// POST /v1/chat/completions (spec §4.1; DESIGN.md §4 Chat and Streaming):
// JSON, or Server-Sent Events with `stream: true`. Errors before the first
// event are ordinary JSON errors with their status; after it, a final
// {"error"} event then [DONE]. A client disconnect aborts the upstream call.
import { isTroupeError } from "../../core/errors.ts";
import { modelIdSchema, withModel } from "../../providers/catalogue.ts";
import type { Router, RoutedChatRequest } from "../../providers/router.ts";
import {
  chatCompletionRequestSchema,
  chatResultSchema,
  isFinish,
  type ChatCompletionRequest,
  type ChatMessage,
  type StreamEvent,
  type ToolChoice,
} from "../../providers/types.ts";
import { emitUsage, usageRecord, type Payer, type UsageCategory, type UsageSink } from "../../providers/usage.ts";
import type { AuthContext } from "../auth-context.ts";
import { defineRoute, json, streamed, type RouteContext } from "../route.ts";

export interface AiRouteDeps {
  router: Router;
  usage: UsageSink;
}

export function payerOf(auth: AuthContext): Payer | undefined {
  if (auth.kind !== "api_key") return undefined;
  const k = auth.key;
  return { organization_id: k.organization_id, project_id: k.project_id, environment_id: k.environment_id, api_key_id: k.id, live: k.live };
}

export function recordUsage(
  deps: AiRouteDeps,
  ctx: { auth: AuthContext; requestId: string },
  call: { category: UsageCategory; model: string; provider: string; input_tokens: number; output_tokens?: number },
): void {
  const payer = payerOf(ctx.auth);
  if (!payer) return;
  emitUsage(deps.usage, usageRecord(deps.router.catalogue, payer, { ...call, request_id: ctx.requestId }));
}

function toolChoiceOf(choice: ChatCompletionRequest["tool_choice"]): ToolChoice | null | undefined {
  if (choice == null || typeof choice === "string") return choice;
  if ("function" in choice) return { name: choice.function.name };
  return choice;
}

export function toRoutedChat(body: ChatCompletionRequest): RoutedChatRequest {
  return {
    model: body.model,
    routing_strategy: body.routing_strategy,
    max_tokens: body.max_tokens,
    temperature: body.temperature,
    tools: body.tools ?? null,
    tool_choice: toolChoiceOf(body.tool_choice),
    messages: body.messages.map(
      (m): ChatMessage => ({
        role: m.role,
        content: m.content ?? "",
        ...(m.role === "assistant" && m.tool_calls ? { tool_calls: m.tool_calls } : {}),
        ...(m.role === "tool" ? { tool_call_id: m.tool_call_id } : {}),
      }),
    ),
  };
}

async function streamChat(deps: AiRouteDeps, ctx: RouteContext<ChatCompletionRequest, undefined>, req: RoutedChatRequest): Promise<typeof streamed> {
  const events = deps.router.chatStream(req, { signal: ctx.signal });
  // Planning and the first upstream event happen before the response starts,
  // so invalid requests and unavailable providers still get their HTTP status.
  const first = await events.next();
  const sse = ctx.sse();
  let event: StreamEvent | undefined = first.done ? undefined : first.value;
  try {
    while (event !== undefined) {
      await sse.send(event);
      if (isFinish(event)) {
        recordUsage(deps, ctx, { category: "chat", model: event.model, provider: event.provider, input_tokens: event.input_tokens, output_tokens: event.output_tokens });
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
  const body = withModel(chatCompletionRequestSchema, modelIdSchema(deps.router.catalogue, { category: "text" }).nullable().optional());
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
        const req = toRoutedChat(ctx.body);
        if (ctx.body.stream) return streamChat(deps, ctx, req);
        const result = await deps.router.chat(req, { signal: ctx.signal });
        recordUsage(deps, ctx, { category: "chat", model: result.model, provider: result.provider, input_tokens: result.input_tokens, output_tokens: result.output_tokens });
        return json(200, result);
      },
    }),
  ];
}
