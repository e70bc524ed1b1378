// Upstreams carry tool arguments as JSON text (OpenAI) or objects (Anthropic,
// Gemini); Troupe always hands out an object (ToolCall.arguments).
import { ProviderCallError } from "./errors.ts";

export function parseToolArguments(provider: string, raw: string | unknown): Record<string, unknown> {
  let value: unknown = raw;
  if (typeof raw === "string") {
    if (raw.trim() === "") return {};
    try {
      value = JSON.parse(raw);
    } catch (e) {
      throw new ProviderCallError(provider, "protocol", `${provider} returned tool arguments that are not JSON`, { cause: e });
    }
  }
  if (value === null || value === undefined) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new ProviderCallError(provider, "protocol", `${provider} returned tool arguments that are not an object`);
  }
  return value as Record<string, unknown>;
}
