// A hand-written check of the common OpenAI chat.completions body, before
// the route's zod schema (chat-request.ts), as gateway/routes/chat-body.ts
// does for /v1: zod's parse of the strict OpenAI schema (a discriminated
// union per message) cost the /openai/v1 mount ~13 µs a call more than /v1
// on the main thread (`bench:chat` at saturation, where Troupe's main thread
// is held to ≤ 20 µs a call over a bare pass-through's).
//
// Only a body whose every field is plainly valid takes the short path: text
// messages of the system, developer, user and assistant roles with a string
// content and an optional name, and model, stream, temperature, top_p, seed,
// max_tokens, max_completion_tokens, user and routing_strategy. Anything else
// (tools, a tool message, content parts, a null content, an unknown field, a
// value the schema would refuse) answers undefined and goes through the
// schema, which also words every 400. The output equals the schema's, key
// order included: test/gateway/compat/openai-chat-body-fast.test.ts compares
// the two on generated bodies.
import { routingStrategySchema } from "../../../providers/types.ts";
import { isPlainRecord, plainTextMessages } from "../../plain-body.ts";
import type { OpenAiChatRequest } from "./chat-request.ts";

type Message = OpenAiChatRequest["messages"][number];

/** The schema's key order (chat-request.ts), which its output keeps. */
const bodyFields = ["model", "messages", "stream", "temperature", "top_p", "seed", "max_tokens", "max_completion_tokens", "user", "routing_strategy"] as const;
const bodyKeys: ReadonlySet<string> = new Set(bodyFields);
const textRoles: ReadonlySet<string> = new Set(["system", "developer", "user", "assistant"]);
const strategies: ReadonlySet<string> = new Set(routingStrategySchema.options);

const nullOr = (check: (value: unknown) => boolean) => (value: unknown) => value === null || check(value);
const inRange = (min: number, max: number) => (value: unknown) => typeof value === "number" && value >= min && value <= max;
const tokenCount = (value: unknown) => Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 1_000_000;

/** Each scalar field's rule, as the schema states it. */
const fieldChecks: Record<Exclude<(typeof bodyFields)[number], "messages">, (value: unknown) => boolean> = {
  model: (value) => typeof value === "string" && value.length > 0,
  stream: nullOr((value) => typeof value === "boolean"),
  temperature: nullOr(inRange(0, 2)),
  top_p: nullOr(inRange(0, 1)),
  seed: nullOr((value) => Number.isInteger(value)),
  max_tokens: nullOr(tokenCount),
  max_completion_tokens: nullOr(tokenCount),
  user: (value) => typeof value === "string",
  routing_strategy: (value) => typeof value === "string" && strategies.has(value),
};

/** The parsed body when it is in the common form, else undefined (the schema decides). */
export function plainOpenAiChatBody(value: unknown): OpenAiChatRequest | undefined {
  if (!isPlainRecord(value)) return undefined;
  for (const key of Object.keys(value)) if (!bodyKeys.has(key)) return undefined;
  if (!("model" in value)) return undefined;
  const plain = plainTextMessages(value["messages"], textRoles, "name");
  if (!plain) return undefined;
  const messages = plain.map(({ role, content, extra: name }) => (name === undefined ? { role, content } : { role, content, name }) as Message);
  const body: Record<string, unknown> = {};
  for (const field of bodyFields) {
    if (field === "messages") {
      body["messages"] = messages;
      continue;
    }
    if (!(field in value)) continue;
    const fieldValue = value[field];
    if (!fieldChecks[field](fieldValue)) return undefined;
    body[field] = fieldValue;
  }
  return body as OpenAiChatRequest;
}
