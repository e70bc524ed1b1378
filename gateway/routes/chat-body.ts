// The body of POST /v1/chat/completions: the chat request (its rules live in
// providers/chat-request.ts) plus how to answer, and a hand-written check of
// its common form.
//
// Why the second check: zod's parse of a plain two-message body was ~6.5 µs
// of the ~25 µs a chat call costs Troupe's main thread beyond a bare
// pass-through (a CPU profile at saturation, where the target is ≤ 20 µs;
// docs/benchmarks.md). Only a body whose
// every field is plainly valid takes the short path: text messages of the
// system, user and assistant roles with a string content, and model,
// routing_strategy, max_tokens, temperature and stream. Anything else (tools,
// a tool message, a null content, an unknown field, any value the schema
// would refuse) answers undefined and goes through the schema, which also
// words every 400. The output equals the schema's, key order included:
// test/gateway/routes/chat-body.test.ts compares the two on generated bodies.
import { z } from "zod";
import { chatRequestSchema } from "../../providers/chat-request.ts";
import { routingStrategySchema, type RoutingStrategy } from "../../providers/types.ts";
import { isPlainRecord, plainTextMessages } from "../plain-body.ts";

export const chatCompletionBodySchema = chatRequestSchema.extend({ stream: z.boolean().default(false) });
export type ChatCompletionBody = z.infer<typeof chatCompletionBodySchema>;
type Message = ChatCompletionBody["messages"][number];

const bodyKeys = new Set(["messages", "model", "routing_strategy", "max_tokens", "temperature", "stream"]);
const textRoles = new Set(["system", "user", "assistant"]);
const strategies: ReadonlySet<string> = new Set(routingStrategySchema.options);

/** The parsed body when it is in the common form, else undefined (the schema decides). `modelIds`: what `model` may name. */
export function plainChatBody(value: unknown, modelIds: ReadonlySet<string>): ChatCompletionBody | undefined {
  if (!isPlainRecord(value)) return undefined;
  for (const key of Object.keys(value)) if (!bodyKeys.has(key)) return undefined;
  const plain = plainTextMessages(value["messages"], textRoles, "id");
  if (!plain) return undefined;
  const messages = plain.map(({ role, content, extra: id }) => (id === undefined ? { role, content } : { role, id, content }) as Message);
  const { model, routing_strategy: strategy = "auto", max_tokens: maxTokens, temperature, stream = false } = value;
  if (model !== undefined && model !== null && !(typeof model === "string" && modelIds.has(model))) return undefined;
  if (typeof strategy !== "string" || !strategies.has(strategy)) return undefined;
  // routing_strategy manual needs a model: the schema words that 400.
  if (strategy === "manual" && (model === undefined || model === null)) return undefined;
  if (maxTokens !== undefined && maxTokens !== null && !(Number.isInteger(maxTokens) && (maxTokens as number) >= 1 && (maxTokens as number) <= 1_000_000)) return undefined;
  if (temperature !== undefined && temperature !== null && !(typeof temperature === "number" && temperature >= 0 && temperature <= 2)) return undefined;
  if (typeof stream !== "boolean") return undefined;
  // The schema's key order; a field the body leaves out stays out, as the schema leaves it.
  const body: Record<string, unknown> = { messages };
  if (model !== undefined) body["model"] = model;
  body["routing_strategy"] = strategy as RoutingStrategy;
  if (maxTokens !== undefined) body["max_tokens"] = maxTokens;
  if (temperature !== undefined) body["temperature"] = temperature;
  body["stream"] = stream;
  return body as ChatCompletionBody;
}
