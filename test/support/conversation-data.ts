// A conversation's state and its messages as the conversation modules hold
// them, for in-process tests: every field set, an idle conversation of one
// owner with no messages, the test overriding only what it is about.
import type { AgentMessage, ConversationData } from "../../actors/conversation/types.ts";

export const testConversationId = "0193c6f0-0000-7000-8000-000000000000";

export function conversationData(over: Partial<ConversationData> = {}): ConversationData {
  return {
    id: testConversationId,
    owner: { organization_id: "org_1", project_id: "prj_1", environment_id: "env_1" },
    model: null,
    routing_strategy: "auto",
    system_prompt: "You are terse.",
    tools: [],
    status: "idle",
    messages: [],
    pending_tool_call_ids: [],
    pending_video: null,
    created_at: "2026-11-28T00:00:00.000Z",
    updated_at: "2026-11-28T00:00:00.000Z",
    ...over,
  };
}

/** A message with no tool calls, a user's unless `over` says otherwise. */
export function agentMessage(content: string, over: Partial<AgentMessage> = {}): AgentMessage {
  return { id: "0193c6f0-0000-7000-8000-000000000001", role: "user", content, tool_calls: null, tool_call_id: null, ...over };
}
