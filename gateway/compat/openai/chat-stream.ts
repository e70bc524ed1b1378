// Troupe's stream events (docs/api/chat.md, streaming) as OpenAI's
// `chat.completion.chunk`s: a role delta first, each text fragment as a
// content delta, each tool call as OpenAI streams one: a tool_calls delta
// with its index, id, type and name (arguments ""), then its arguments in
// fragments carrying only the index (Troupe has the call whole; clients that
// take the name from the first delta and concatenate the later arguments, as
// OpenAI's own examples do, read it right), a finish chunk, and with
// `stream_options.include_usage` a last chunk with empty choices and the
// usage (with its cached and reasoning token details). A body that sent the
// deprecated `functions` gets its one call as `function_call` deltas.
// `[DONE]` is the writer's.
import type { StreamEvent } from "../../../providers/types.ts";
import { isFinish, isReasoning } from "../../../providers/types.ts";
import { openAiFinishReason, openAiToolCall, openAiUsage } from "./chat-response.ts";

export interface ChunkStream {
  /** The chunks for one Troupe event (the finish event gives the finish chunk and, when asked, the usage chunk). */
  chunks(event: StreamEvent): object[];
}

/**
 * `model` in the chunks before the finish is the requested name (the serving
 * model is known only once the call finished, after any fallback); the
 * finish and usage chunks carry the model that answered.
 */
export function chunkStream(id: string, createdSeconds: number, requestedModel: string, includeUsage: boolean, legacyFunctions = false): ChunkStream {
  let started = false;
  let toolIndex = 0;
  const chunk = (model: string, delta: object, finish: string | null = null): object => ({
    id,
    object: "chat.completion.chunk",
    created: createdSeconds,
    model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    ...(includeUsage ? { usage: null } : {}),
    system_fingerprint: null,
  });
  return {
    chunks(event) {
      const out: object[] = [];
      if (!started) {
        started = true;
        out.push(chunk(requestedModel, { role: "assistant", content: "" }));
      }
      if (isFinish(event)) {
        out.push(chunk(event.model, {}, openAiFinishReason(event.finish_reason, legacyFunctions)));
        if (includeUsage) {
          const usage = openAiUsage(event.input_tokens, event.output_tokens, event.extras);
          out.push({ id, object: "chat.completion.chunk", created: createdSeconds, model: event.model, choices: [], usage, system_fingerprint: null });
        }
      } else if ("delta" in event) {
        if (event.delta !== "") out.push(chunk(requestedModel, { content: event.delta }));
      } else if (!isReasoning(event)) {
        const index = toolIndex++;
        const { id: callId, type, function: fn } = openAiToolCall(event.tool_call);
        if (legacyFunctions) {
          // The deprecated form streams one call: its name, then its arguments.
          if (index === 0) {
            out.push(chunk(requestedModel, { function_call: { name: fn.name, arguments: "" } }));
            for (const piece of fragments(fn.arguments)) out.push(chunk(requestedModel, { function_call: { arguments: piece } }));
          }
          return out;
        }
        out.push(chunk(requestedModel, { tool_calls: [{ index, id: callId, type, function: { name: fn.name, arguments: "" } }] }));
        for (const piece of fragments(fn.arguments)) out.push(chunk(requestedModel, { tool_calls: [{ index, function: { arguments: piece } }] }));
      }
      return out;
    },
  };
}

/** Code points per arguments fragment: several fragments for a small call, not a chunk per character for a large one. */
const fragmentLength = 32;

/** The arguments in pieces cut between code points (a piece ending in half a surrogate pair would not decode on its own). */
function fragments(text: string): string[] {
  const points = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < points.length; i += fragmentLength) out.push(points.slice(i, i + fragmentLength).join(""));
  return out;
}
