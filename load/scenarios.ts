// What one iteration of each scenario sends. chat and embeddings: one call.
// agents: one conversation's life — create it (with a caller-declared
// `lookup` tool), then `turns` user messages; a turn the model parks in
// requires_action is answered with tool-outputs until it comes back idle.
// The default script makes the simulated model call the built-in `remember`
// and `search_memory` tools and then `lookup` (docs/simulated-provider.md).
import type { Answer } from "./client.ts";
import type { LoadOptions } from "./options.ts";

/** Sends one timed request and records it; the first call of an iteration is timed from its schedule. */
export type Call = (op: string, method: "GET" | "POST", path: string, body?: unknown, wantBody?: boolean) => Promise<Answer>;

export type Iteration = (call: Call) => Promise<void>;

export function iterationFor(options: LoadOptions): Iteration {
  switch (options.scenario) {
    case "chat": {
      const body = JSON.stringify({ model: options.model, messages: [{ role: "user", content: options.prompt }], ...(options.maxTokens ? { max_tokens: options.maxTokens } : {}) });
      return async (call) => void (await call("chat.completions", "POST", "/v1/chat/completions", body, false));
    }
    case "embeddings": {
      const body = JSON.stringify({ model: options.model, input: options.prompt });
      return async (call) => void (await call("embeddings", "POST", "/v1/embeddings", body, false));
    }
    case "agents":
      return agentConversation(options);
  }
}

const lookupTool = { name: "lookup", description: "looks a query up", parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] } };

interface Conversation {
  id: string;
  status: string;
  messages: { role: string; tool_calls?: { id: string; name: string }[] | null }[];
}

function asConversation(body: unknown): Conversation | undefined {
  if (!body || typeof body !== "object" || !("id" in body) || typeof body.id !== "string") return undefined;
  return body as Conversation;
}

/** The caller-tool calls of the last assistant message (built-in ones already ran inside the turn). */
function pendingCalls(conversation: Conversation): string[] {
  const last = [...conversation.messages].reverse().find((m) => m.role === "assistant");
  return (last?.tool_calls ?? []).filter((c) => c.name !== "remember" && c.name !== "search_memory").map((c) => c.id);
}

function agentConversation(options: LoadOptions): Iteration {
  return async (call) => {
    const created = await call("conversations.create", "POST", "/v1/agents/conversations", { model: options.model, tools: [lookupTool] });
    const conversation = created.status === 201 ? asConversation(created.body) : undefined;
    if (!conversation) return;
    const base = `/v1/agents/conversations/${conversation.id}`;
    for (let turn = 0; turn < options.turns; turn++) {
      let answer = await call("conversations.messages", "POST", `${base}/messages`, { content: options.script.replaceAll("{turn}", String(turn + 1)) });
      let state = answer.status === 200 ? asConversation(answer.body) : undefined;
      // A script may park the turn several times; each park needs its outputs.
      for (let parks = 0; state?.status === "requires_action" && parks < 8; parks++) {
        const outputs = pendingCalls(state).map((id) => ({ tool_call_id: id, output: "looked up by troupe-load" }));
        answer = await call("conversations.tool-outputs", "POST", `${base}/tool-outputs`, { outputs });
        state = answer.status === 200 ? asConversation(answer.body) : undefined;
      }
      if (!state) return;
    }
  };
}
