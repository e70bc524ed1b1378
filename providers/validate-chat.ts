// Conversation checks done before any provider call (docs/api/chat.md):
// every `tool` message answers a tool call of an earlier assistant message,
// tool calls only on assistant messages, tool_choice names a declared tool.
// Paths name the request's fields as the gateway's validation does (body.…).
import { invalidRequest, type FieldIssue } from "../core/errors.ts";
import type { ChatMessage, ToolChoice } from "./chat-request.ts";
import type { ToolDefinition } from "./types.ts";

export function validateConversation(
  messages: readonly ChatMessage[],
  tools?: readonly ToolDefinition[] | null,
  toolChoice?: ToolChoice | null,
): void {
  const issues: FieldIssue[] = [];
  const openCalls = new Set<string>();
  const seenCalls = new Set<string>();
  messages.forEach((m, i) => {
    if (m.tool_calls && m.tool_calls.length > 0) {
      if (m.role !== "assistant") issues.push({ path: `body.messages.${i}.tool_calls`, message: "only assistant messages carry tool_calls" });
      for (const c of m.tool_calls) {
        if (seenCalls.has(c.id)) issues.push({ path: `body.messages.${i}.tool_calls`, message: `duplicate tool call id ${c.id}` });
        seenCalls.add(c.id);
        openCalls.add(c.id);
      }
    }
    if (m.role === "tool") {
      if (!m.tool_call_id) issues.push({ path: `body.messages.${i}.tool_call_id`, message: "a tool message needs tool_call_id" });
      else if (!openCalls.has(m.tool_call_id)) {
        issues.push({
          path: `body.messages.${i}.tool_call_id`,
          message: `no earlier assistant tool call has id ${m.tool_call_id} (or it was already answered)`,
        });
      } else openCalls.delete(m.tool_call_id);
    } else if (m.tool_call_id) {
      issues.push({ path: `body.messages.${i}.tool_call_id`, message: "only tool messages carry tool_call_id" });
    }
  });
  if (!messages.some((m) => m.role !== "system")) {
    issues.push({ path: "body.messages", message: "at least one non-system message is needed" });
  }
  const names = new Set((tools ?? []).map((t) => t.name));
  if (tools && names.size !== tools.length) issues.push({ path: "body.tools", message: "tool names must be unique" });
  if (toolChoice != null && toolChoice !== "auto" && toolChoice !== "none") {
    if (names.size === 0) issues.push({ path: "body.tool_choice", message: "tool_choice needs tools" });
    else if (typeof toolChoice === "object" && !names.has(toolChoice.name)) {
      issues.push({ path: "body.tool_choice", message: `tool ${toolChoice.name} is not declared in tools` });
    }
  }
  if (issues.length > 0) throw invalidRequest(issues);
}
