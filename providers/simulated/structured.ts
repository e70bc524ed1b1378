// The simulated model's structured output (response_format): json_object
// answers {"answer": <what it would have said>}; json_schema answers an
// instance of the schema (json-instance.ts), `strict` or not, seeded by the
// conversation so the same request always gets the same instance.
import type { ChatMessage, JsonResponseFormat } from "../chat-request.ts";
import { jsonInstance } from "./json-instance.ts";

export function structuredAnswer(format: JsonResponseFormat, text: string, messages: ChatMessage[]): string {
  if (format.type === "json_object") return JSON.stringify({ answer: text });
  const seed = `${format.name}\n${messages.map((m) => `${m.role}:${m.content}`).join("\n")}`;
  return JSON.stringify(jsonInstance(format.schema, seed, { optional: true }));
}
