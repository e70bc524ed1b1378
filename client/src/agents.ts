// Agent helpers over the typed paths. A message or tool outputs may start a
// video (`generate_video`): the conversation answers `generating_media` and
// only becomes `idle` when the job calls back. sendMessage/answerToolCalls
// wait that out — on the conversation's event socket (its first frame is
// the current state, so a job finishing before the socket opens is seen),
// falling back to polling GET when the socket cannot be used — and return
// the conversation at its next real stop: `idle` or `requires_action`.
import type { Client } from "openapi-fetch";
import { ConnectionError, TroupeError } from "./errors.ts";
import type { EventSocketOptions } from "./events-socket.ts";
import type { paths } from "./schema.js";
import type { Conversation, ConversationFrame, CreateConversationRequest, RequestBody, ToolOutput } from "./types.ts";
import { unwrap } from "./unwrap.ts";

export interface WaitOptions {
  /** Give up waiting for `generating_media` to end after this long (default 10 min); throws a TroupeError `wait_timeout`. */
  timeoutMs?: number;
  /** Polling interval when the event socket is not used (default 5 s, the interval the API suggests). */
  pollIntervalMs?: number;
  /** `events` (default): the conversation's WebSocket, polling if it cannot open; `poll`: GET only. */
  via?: "events" | "poll";
  signal?: AbortSignal;
}

export interface AgentHelpers {
  createConversation(request: CreateConversationRequest): Promise<Conversation>;
  getConversation(conversationId: string): Promise<Conversation>;
  /** POSTs a user message, waits out `generating_media`, and returns the conversation (`idle` or `requires_action`). */
  sendMessage(conversationId: string, content: string, options?: WaitOptions): Promise<Conversation>;
  /**
   * Answers the pending tool calls of a `requires_action` conversation (an
   * array of `{tool_call_id, output}` or a map of call id to output), then
   * waits like sendMessage.
   */
  answerToolCalls(conversationId: string, outputs: ToolOutput[] | Record<string, string>, options?: WaitOptions): Promise<Conversation>;
  /** Waits until the conversation is not `generating_media` and returns it. */
  waitForConversation(conversationId: string, options?: WaitOptions): Promise<Conversation>;
}

interface Base {
  api: Client<paths, "application/json">;
  conversationEvents(conversationId: string, options?: EventSocketOptions): AsyncGenerator<ConversationFrame>;
}

const pause = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });

export function agentHelpers(base: Base): AgentHelpers {
  const { api } = base;
  const getConversation = (id: string): Promise<Conversation> => unwrap(api.GET("/v1/agents/conversations/{id}", { params: { path: { id } } }));

  /** True once the socket saw the conversation leave `generating_media`; false if it ended first. */
  async function settledOnSocket(id: string, signal: AbortSignal): Promise<boolean> {
    for await (const frame of base.conversationEvents(id, { signal })) {
      const status = frame.type === "conversation" ? frame.conversation.status : frame.type === "status.changed" ? frame.status : undefined;
      if (status !== undefined && status !== "generating_media") return true;
    }
    return false;
  }

  async function waitForConversation(id: string, options: WaitOptions = {}): Promise<Conversation> {
    const timeoutMs = options.timeoutMs ?? 600_000;
    const deadline = Date.now() + timeoutMs;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new TroupeError({ status: 0, code: "wait_timeout", message: `conversation ${id} was still generating_media after ${timeoutMs} ms` })), timeoutMs);
    const stop = (): void => controller.abort(options.signal?.reason);
    options.signal?.addEventListener("abort", stop, { once: true });
    try {
      if ((options.via ?? "events") === "events") {
        try {
          if (await settledOnSocket(id, controller.signal)) return await getConversation(id);
        } catch (error) {
          // A socket that could not open or broke: polling still works; anything else (404, timeout) is the answer.
          if (!(error instanceof ConnectionError)) throw error;
        }
      }
      for (;;) {
        const conversation = await getConversation(id);
        if (conversation.status !== "generating_media") return conversation;
        if (controller.signal.aborted) throw controller.signal.reason;
        await pause(Math.min(options.pollIntervalMs ?? 5_000, Math.max(0, deadline - Date.now())), controller.signal);
      }
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", stop);
    }
  }

  const settle = async (conversation: Conversation, options?: WaitOptions): Promise<Conversation> =>
    conversation.status === "generating_media" ? waitForConversation(conversation.id, options) : conversation;

  return {
    // `model` may name a model the generated enum does not know (types.ts, AnyModel).
    createConversation: (request) => unwrap(api.POST("/v1/agents/conversations", { body: request as RequestBody<"/v1/agents/conversations", "post"> })),
    getConversation,
    waitForConversation,
    sendMessage: async (id, content, options) =>
      settle(await unwrap(api.POST("/v1/agents/conversations/{id}/messages", { params: { path: { id } }, body: { content } })), options),
    answerToolCalls: async (id, outputs, options) => {
      const list = Array.isArray(outputs) ? outputs : Object.entries(outputs).map(([tool_call_id, output]) => ({ tool_call_id, output }));
      return settle(await unwrap(api.POST("/v1/agents/conversations/{id}/tool-outputs", { params: { path: { id } }, body: { outputs: list } })), options);
    },
  };
}
