// :generateContent, :streamGenerateContent (SSE with alt=sse, else a streamed JSON array) and :countTokens — Gemini's
// request translated (request.ts) onto the one router, billed as /v1 chat
// is: the bill settled before the answer (or before a stream's last chunk),
// the upstream stopped when the client stops reading.
import { isTroupeError, TroupeError } from "../../../core/errors.ts";
import type { Catalogue } from "../../../providers/catalogue.ts";
import { countChatInputTokens } from "../../../providers/tokens.ts";
import { isFinish, type StreamEvent } from "../../../providers/types.ts";
import { generationEstimateNanos } from "../../billed-call.ts";
import { json, streamed, type RouteContext, type RouteResult, type StreamFraming } from "../../route.ts";
import type { AiRouteDeps } from "../../usage-context.ts";
import { ignoredParamsHeaders, ignoredParamsSseHeaders } from "../ignored-params.ts";
import { geminiErrorBody } from "./errors.ts";
import { ignoredFieldsOf, ignoredHintFields } from "./fields.ts";
import { requireModel, toChatRequest, toConversation, type TranslatedGenerate } from "./request.ts";
import { responseId, toGenerateContentResponse } from "./response.ts";
import type { GenerateContentBody } from "./schemas.ts";
import { GenerateStreamTranslator } from "./stream.ts";
import type { z } from "zod";
import type { countTokensBodySchema } from "./schemas.ts";

type Ctx = RouteContext<Record<string, unknown>, unknown>;

/** The most a generation may cost (as /v1 chat reserves: without maxOutputTokens, the model's most output). */
export function generateEstimate(catalogue: Catalogue, model: string, body: GenerateContentBody, streaming: boolean): number {
  const { request, category } = toChatRequest(catalogue, model, body, streaming);
  return generationEstimateNanos(catalogue, category, request.model, countChatInputTokens(request.messages, request.tools), request.max_tokens);
}

async function streamGenerate(deps: AiRouteDeps, ctx: Ctx, chat: TranslatedGenerate, ignored: string[], framing: StreamFraming): Promise<typeof streamed> {
  const events = deps.router.chatStream(chat.request, { signal: ctx.signal, category: chat.category });
  // The first upstream event comes before the response starts: refusals and unavailable providers still get their HTTP status.
  const first = await events.next();
  const sse = ctx.sse(ignoredParamsSseHeaders(ignored), framing);
  const translator = new GenerateStreamTranslator(responseId(), chat.request.model ?? "", chat.includeThoughts);
  let event: StreamEvent | undefined = first.done ? undefined : first.value;
  try {
    while (event !== undefined) {
      // Billed before the client learns the call ended, so its next call sees it spent.
      if (isFinish(event)) await ctx.bill(event);
      for (const chunk of translator.push(event)) await sse.send(chunk);
      if (isFinish(event) || sse.closed) break;
      const next = await events.next();
      event = next.done ? undefined : next.value;
    }
  } catch (error) {
    // After the stream started: Gemini's error body as the last event (the SDKs raise it).
    await sse.send(geminiErrorBody(isTroupeError(error) ? error : new TroupeError("internal_error", error instanceof Error ? error.message : "stream failed")));
  } finally {
    await events.return(undefined).catch(() => undefined);
  }
  sse.end();
  return streamed;
}

/**
 * `framing`: how a stream's chunks are sent — `sse` (alt=sse, what the SDKs
 * ask for) or `json-array`, Google's default without alt=sse: one JSON array
 * streamed element by element.
 */
export async function generate(deps: AiRouteDeps, ctx: Ctx, model: string, body: GenerateContentBody, streaming: boolean, framing: StreamFraming = "sse"): Promise<RouteResult> {
  const chat = toChatRequest(deps.router.catalogue, model, body, streaming);
  const ignored = ignoredFieldsOf(body);
  const named = deps.router.catalogue.get(chat.request.model ?? "");
  // A stream's header leaves before the answer says who served it: the named model's provider (a fallback is not reflected there).
  if (streaming) return streamGenerate(deps, ctx, chat, named ? [...ignored, ...ignoredHintFields(chat.request.hints, named)] : ignored, framing);
  const result = await deps.router.chat(chat.request, { signal: ctx.signal, category: chat.category });
  await ctx.bill(result);
  const headers = ignoredParamsHeaders([...ignored, ...ignoredHintFields(chat.request.hints, { provider: result.provider, id: result.model })]);
  return json(200, toGenerateContentResponse(result, responseId(), chat.includeThoughts), headers);
}

/** Tokens as Troupe counts them for billing (no provider call, not billed). */
export function countTokens(catalogue: Catalogue, model: string, body: z.output<typeof countTokensBodySchema>): RouteResult {
  const entry = requireModel(catalogue, model);
  const request = body.generateContentRequest ?? { contents: body.contents ?? [] };
  const { messages, tools } = toConversation(request, entry.provider);
  return json(200, { totalTokens: countChatInputTokens(messages, tools) });
}
