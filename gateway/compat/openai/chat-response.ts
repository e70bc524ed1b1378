// Troupe's chat result in OpenAI's exact `chat.completion` shape, and the
// pieces the streamed `chat.completion.chunk`s share with it (ids, finish
// reasons, usage, tool calls with their arguments as JSON strings).
import { z } from "zod";
import { ulid } from "../../../core/ids.ts";
import type { ChatExtras, ChatResult, FinishReason, ToolCall } from "../../../providers/types.ts";

/**
 * `chatcmpl-` and a ULID (26 alphanumerics, unique and time-ordered, as the
 * Anthropic mount's `msg_` ids): ~0.6 µs, where 18 fresh random bytes cost
 * ~3 µs a call on the hot path.
 */
export function completionId(): string {
  return `chatcmpl-${ulid()}`;
}

/** OpenAI has no `error` finish reason: a call that ended on an upstream error is reported as stopped. */
export function openAiFinishReason(reason: FinishReason, legacyFunctions = false): "stop" | "length" | "tool_calls" | "content_filter" | "function_call" {
  if (reason === "error") return "stop";
  return legacyFunctions && reason === "tool_calls" ? "function_call" : reason;
}

/**
 * OpenAI's usage, with the prompt-cache reads and the thinking tokens
 * whichever provider answered (each adapter fills the extras); they are
 * parts of the prompt and completion counts, as OpenAI counts them.
 */
export function openAiUsage(input: number, output: number, extras?: ChatExtras) {
  return {
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: input + output,
    prompt_tokens_details: { cached_tokens: extras?.cached_input_tokens ?? 0 },
    completion_tokens_details: { reasoning_tokens: extras?.reasoning_tokens ?? 0 },
  };
}

export function openAiToolCall(call: ToolCall) {
  return { id: call.id, type: "function" as const, function: { name: call.name, arguments: JSON.stringify(call.arguments) } };
}

const usageSchema = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
  prompt_tokens_details: z.object({ cached_tokens: z.number().int().describe("prompt tokens read from the provider's prompt cache") }),
  completion_tokens_details: z.object({ reasoning_tokens: z.number().int().describe("completion tokens the model spent thinking") }),
});
const toolCallOutSchema = z.object({
  id: z.string(),
  type: z.literal("function"),
  function: z.object({ name: z.string(), arguments: z.string().describe("the arguments as a JSON object in a string") }),
});
const finishSchema = z.enum(["stop", "length", "tool_calls", "content_filter", "function_call"]);
const functionCallOutSchema = z.object({ name: z.string(), arguments: z.string() }).describe("the deprecated form, answered to a body that sent `functions`");

export const chatCompletionSchema = z.object({
  id: z.string(),
  object: z.literal("chat.completion"),
  created: z.number().int().describe("Unix seconds"),
  model: z.string().describe("the catalogue model that answered (after any fallback)"),
  choices: z.array(
    z.object({
      index: z.number().int(),
      message: z.object({
        role: z.literal("assistant"),
        content: z.string().nullable(),
        refusal: z.null(),
        tool_calls: z.array(toolCallOutSchema).optional(),
        function_call: functionCallOutSchema.optional(),
      }),
      finish_reason: finishSchema,
      logprobs: z.null(),
    }),
  ),
  usage: usageSchema,
  system_fingerprint: z.null(),
});
export type ChatCompletion = z.infer<typeof chatCompletionSchema>;

/** A streamed call as OpenAI sends it: the first delta of an index has id, type and name; the later ones only argument fragments. */
const toolCallDeltaSchema = z.object({
  index: z.number().int(),
  id: z.string().optional(),
  type: z.literal("function").optional(),
  function: z.object({ name: z.string().optional(), arguments: z.string().describe("a fragment of the arguments' JSON string; the fragments of one index joined are the whole") }),
});

export const chatCompletionChunkSchema = z.object({
  id: z.string(),
  object: z.literal("chat.completion.chunk"),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.object({
      index: z.number().int(),
      delta: z.object({
        role: z.literal("assistant").optional(),
        content: z.string().optional(),
        tool_calls: z.array(toolCallDeltaSchema).optional(),
        function_call: z.object({ name: z.string().optional(), arguments: z.string() }).optional(),
      }),
      finish_reason: finishSchema.nullable(),
      logprobs: z.null(),
    }),
  ),
  usage: usageSchema.nullable().optional(),
  system_fingerprint: z.null(),
});

/** The answer's calls: `tool_calls`, or for a `functions` body the first call as `function_call` (that form has one). */
function callsOf(calls: ToolCall[] | undefined, legacyFunctions: boolean) {
  if (!calls) return {};
  if (legacyFunctions) return { function_call: openAiToolCall(calls[0]!).function };
  return { tool_calls: calls.map(openAiToolCall) };
}

export function toChatCompletion(result: ChatResult, id: string, createdSeconds: number, legacyFunctions = false): ChatCompletion {
  const calls = result.tool_calls?.length ? result.tool_calls : undefined;
  return {
    id,
    object: "chat.completion",
    created: createdSeconds,
    model: result.model,
    choices: [
      {
        index: 0,
        // OpenAI: null content when the answer is only tool calls.
        message: { role: "assistant", content: calls && result.content === "" ? null : result.content, refusal: null, ...callsOf(calls, legacyFunctions) },
        finish_reason: openAiFinishReason(result.finish_reason, legacyFunctions),
        logprobs: null,
      },
    ],
    usage: openAiUsage(result.input_tokens, result.output_tokens, result.extras),
    system_fingerprint: null,
  };
}
