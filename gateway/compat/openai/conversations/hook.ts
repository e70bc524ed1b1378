// What POST /openai/v1/responses calls for its `conversation` field
// (docs/guides/conversations-api.md, "With the Responses API"): the items to
// send before the request's input (404 when the conversation is not the
// caller's), and the append of a finished response's input and output
// items, so the Conversations API and the Responses API see the same items.
import type { ResponseConversationHook } from "../responses/create.ts";
import { newItemId, type ConversationItem } from "./items.ts";
import type { OpenAiConversationStore } from "./store.ts";

/** Who asks: the API key's organization and environment (another's conversation is 404). */
export interface ConversationTenancy {
  organization_id: string;
  environment_id: string;
}

export interface ConversationHook {
  /** Every item of the conversation, oldest first; 404 not_found (param conversation_id) when it is absent or another environment's. */
  conversationItemsFor(tenancy: ConversationTenancy, conversationId: string): Promise<ConversationItem[]>;
  /**
   * Appends a response's input items then its output items (each with its
   * `id` and `type`, as the response shows them). Past the conversation's
   * bounds it is 400 naming `conversation`; nothing is appended then.
   */
  appendToConversation(tenancy: ConversationTenancy, conversationId: string, items: readonly ConversationItem[]): Promise<void>;
}

export function conversationHook(store: OpenAiConversationStore): ConversationHook {
  return {
    conversationItemsFor: (tenancy, id) => store.allItems(id, tenancy),
    appendToConversation: async (tenancy, id, items) => {
      if (items.length > 0) await store.append(id, tenancy, [...items], "conversation");
    },
  };
}

/**
 * The same hook in the shape POST /openai/v1/responses takes it (its
 * `conversations` dependency). An item without an id gets one of its type.
 */
export function responsesConversationHook(hook: ConversationHook, now: () => number): ResponseConversationHook {
  return {
    items: (id, owner) => hook.conversationItemsFor(owner, id),
    append: (id, owner, items) => hook.appendToConversation(owner, id, items.map((item) => withId(item, now()))),
  };
}

function withId(item: Record<string, unknown>, nowMs: number): ConversationItem {
  const type = typeof item["type"] === "string" ? item["type"] : "message";
  const prefix = type === "function_call" || type === "function_call_output" || type === "reasoning" ? type : "message";
  const id = typeof item["id"] === "string" && item["id"] !== "" ? item["id"] : newItemId(prefix, nowMs);
  return { ...item, id, type };
}
