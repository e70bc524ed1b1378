// The simulated provider's prompt cache (docs/simulated-provider.md, "Prompt
// cache"): a rule on the request alone, no memory, so every replica and
// every repeat of a request reports the same counts, and the cached-price
// billing path can be exercised through any mount without a real provider.
//
// The prefix is everything before the last user message, tool declarations
// included (what a client sends again unchanged on its next turn). Under
// 1,024 tokens nothing is cached (OpenAI's and Anthropic's minimum). From
// 1,024, the prefix rounded down to a multiple of 128 tokens (OpenAI's
// increments) is read from the cache when the prefix holds an assistant
// message (the conversation was sent before, so its start is cached), and
// written to the cache otherwise (a first turn: a long system prompt).
import type { ChatRequest } from "../chat-request.ts";
import type { ChatExtras } from "../types.ts";
import { countChatInputTokens } from "../tokens.ts";

export const minimumCachedPrefix = 1024;
export const cacheIncrement = 128;

export function simulatedCacheCounts(req: ChatRequest): Pick<ChatExtras, "cached_input_tokens" | "cache_write_input_tokens"> | undefined {
  let lastUser = -1;
  for (let i = req.messages.length - 1; i >= 0; i--) {
    if (req.messages[i]!.role === "user") {
      lastUser = i;
      break;
    }
  }
  if (lastUser <= 0) return undefined;
  const prefix = req.messages.slice(0, lastUser);
  const tokens = countChatInputTokens(prefix, req.tools);
  if (tokens < minimumCachedPrefix) return undefined;
  const cached = tokens - (tokens % cacheIncrement);
  return prefix.some((m) => m.role === "assistant") ? { cached_input_tokens: cached } : { cache_write_input_tokens: cached };
}
