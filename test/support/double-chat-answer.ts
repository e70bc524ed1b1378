// A model answer as the scripted "double" chat of the agent tests returns it:
// one token each way, tool calls when given.
import type { ChatResult } from "../../providers/types.ts";

export const answer = (content: string, toolCalls: ChatResult["tool_calls"] = null): ChatResult => ({
  content,
  finish_reason: toolCalls ? "tool_calls" : "stop",
  model: "double-chat",
  provider: "double",
  input_tokens: 1,
  output_tokens: 1,
  tool_calls: toolCalls,
});
