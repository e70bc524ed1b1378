// createTroupeClient: openapi-fetch over the generated `paths` (every /v1
// operation typed from the server's OpenAPI document), with the credential,
// retries on 429/5xx and errors as classes; plus the helpers a typed path
// call cannot express: the chat stream, the event sockets, the agent turns.
import createClient, { type Client } from "openapi-fetch";
import { ConnectionError, createError } from "./errors.ts";
import { eventSocket, type EventSocketOptions } from "./events-socket.ts";
import { defaultSleep, retryingFetch, type Fetch, type Sleep } from "./retry.ts";
import type { paths } from "./schema.js";
import { readSseData } from "./sse.ts";
import type { ChatRequest, ChatResult, ChatStreamEvent, ConversationFrame, JobFrame, RequestBody } from "./types.ts";
import { agentHelpers, type AgentHelpers } from "./agents.ts";
import { unwrap, unwrapWithResponse } from "./unwrap.ts";

export interface TroupeClientOptions {
  /** Where Troupe listens, e.g. `https://troupe.example.com` (no /v1). */
  baseUrl: string;
  /** An API key (`trp_live_…`/`trp_test_…`) for the AI, agent, job and webhook routes. */
  apiKey?: string;
  /** A dashboard session token (from /v1/auth/login) for account and key management. */
  sessionToken?: string;
  /** The fetch to use (default: the global one). */
  fetch?: Fetch;
  /** Further attempts after a 429 or 5xx answer (default 2; 0 disables). */
  retries?: number;
  /** First backoff when the server sends no Retry-After, doubled per attempt (default 500 ms). */
  retryBaseDelayMs?: number;
  /** A Retry-After longer than this is not waited for: the error is thrown at once (default 60 s). */
  maxRetryAfterMs?: number;
  /** How retries wait (default: setTimeout); tests inject a recorder. */
  sleep?: Sleep;
  /** The WebSocket class for the event streams (default: the global one, Node ≥ 22). */
  WebSocket?: typeof globalThis.WebSocket;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
}

/** The body as generated (`model` as the generated enum); ChatRequest also allows models added by the deployment. */
type ChatBody = RequestBody<"/v1/chat/completions", "post">;

export interface TroupeClient extends AgentHelpers {
  /** Every /v1 operation, typed: `await unwrap(client.api.GET("/v1/jobs/{id}", { params: { path: { id } } }))`. */
  readonly api: Client<paths, "application/json">;
  /** POST /v1/chat/completions, answered as one JSON body. */
  chat(request: Omit<ChatRequest, "stream">, options?: { signal?: AbortSignal }): Promise<ChatResult>;
  /** POST /v1/chat/completions with `stream: true`: its events, in order; an error inside the stream is thrown. */
  chatStream(request: Omit<ChatRequest, "stream">, options?: { signal?: AbortSignal }): AsyncGenerator<ChatStreamEvent>;
  /** WebSocket /v1/agents/conversations/{id}/events: the conversation first, then every change (API key only). */
  conversationEvents(conversationId: string, options?: EventSocketOptions): AsyncGenerator<ConversationFrame>;
  /** WebSocket /v1/jobs/{id}/events: the job first, then every change; ends once the job is final (API key only). */
  jobEvents(jobId: string, options?: EventSocketOptions): AsyncGenerator<JobFrame>;
}

export function createTroupeClient(options: TroupeClientOptions): TroupeClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const credential = options.apiKey ?? options.sessionToken;
  const fetch: Fetch = retryingFetch(options.fetch ?? ((request) => globalThis.fetch(request)), {
    retries: options.retries ?? 2,
    baseDelayMs: options.retryBaseDelayMs ?? 500,
    maxRetryAfterMs: options.maxRetryAfterMs ?? 60_000,
    sleep: options.sleep ?? defaultSleep,
  });
  const headers: Record<string, string> = { ...options.headers };
  if (credential) headers["authorization"] = `Bearer ${credential}`;
  const api = createClient<paths, "application/json">({ baseUrl, fetch, headers });

  const socketCredential = (): string => {
    if (!options.apiKey) throw new TypeError("the event WebSockets take an API key: pass apiKey to createTroupeClient");
    return options.apiKey;
  };
  const socketDeps = () => ({ WebSocket: options.WebSocket ?? globalThis.WebSocket });

  async function* chatStream(request: Omit<ChatRequest, "stream">, opts: { signal?: AbortSignal } = {}): AsyncGenerator<ChatStreamEvent> {
    const call = api.POST("/v1/chat/completions", { body: { ...request, stream: true } as ChatBody, parseAs: "stream", signal: opts.signal });
    const { data: body, response } = await unwrapWithResponse(call);
    const requestId = response.headers.get("x-request-id") ?? undefined;
    if (!body) throw new ConnectionError({ status: 0, code: "connection_error", message: "the chat stream has no body" });
    for await (const data of readSseData(body)) {
      if (data === "[DONE]") return;
      const event = JSON.parse(data) as ChatStreamEvent | { error: { code: string; message: string } };
      // The stream had started (200) when this came: the status is 200, the class says what failed.
      if ("error" in event) throw createError({ status: 200, code: event.error.code, message: event.error.message, requestId });
      yield event;
    }
    throw new ConnectionError({ status: 0, code: "connection_error", message: "the chat stream ended before [DONE]" });
  }

  const client: Omit<TroupeClient, keyof AgentHelpers> = {
    api,
    chat: (request, opts = {}) => unwrap(api.POST("/v1/chat/completions", { body: { ...request, stream: false } as ChatBody, signal: opts.signal })),
    chatStream,
    conversationEvents: (id, opts) =>
      eventSocket<ConversationFrame>(`${baseUrl}/v1/agents/conversations/${encodeURIComponent(id)}/events`, socketCredential(), socketDeps(), opts),
    jobEvents: (id, opts) => eventSocket<JobFrame>(`${baseUrl}/v1/jobs/${encodeURIComponent(id)}/events`, socketCredential(), socketDeps(), opts),
  };
  return Object.assign(client, agentHelpers(client));
}
