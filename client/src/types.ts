// Names for the generated types callers use most, all derived from
// schema.d.ts (generated from the server's OpenAPI document), so they change
// when the server's schemas do. Only the WebSocket frame envelopes and the
// webhook payload are written here: the document describes a WebSocket route
// as its upgrade, not its frames; the fields inside them are generated types.
import type { components, paths } from "./schema.js";

type Method = "get" | "post" | "put" | "delete";
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type JsonContent<R> = R extends { content: { "application/json": infer B } } ? B : never;

/** The JSON body of an operation's success answer (200, 201 or 202). */
export type ResponseBody<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { responses: infer R } ? { [S in keyof R]: S extends 200 | 201 | 202 ? JsonContent<R[S]> : never }[keyof R] : never;

/** The JSON request body of an operation. */
export type RequestBody<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { requestBody?: infer B } ? JsonContent<NonNullable<B>> : never;

/**
 * `model` is typed as the catalogue the document was generated with, plus any
 * string: a deployment may add models (openai-compatible endpoints) the
 * generated enum cannot know. Editors still suggest the known ids.
 */
type AnyModel<T> = T extends { model?: infer M } ? Omit<T, "model"> & { model?: M | (string & {}) | null } : T;

export type ChatRequest = AnyModel<RequestBody<"/v1/chat/completions", "post">>;
export type ChatMessage = ChatRequest["messages"][number];
export type ChatResult = ResponseBody<"/v1/chat/completions", "post">;
/** One event of a streamed chat: a text delta, a complete tool call, or the final usage (errors are thrown). */
export type ChatStreamEvent = Exclude<components["schemas"]["PostV1ChatCompletionsStreamEvent"], { error: unknown }>;

export type CreateConversationRequest = AnyModel<RequestBody<"/v1/agents/conversations", "post">>;
export type Conversation = ResponseBody<"/v1/agents/conversations/{id}", "get">;
export type ConversationStatus = Conversation["status"];
export type ConversationMessage = Conversation["messages"][number];
export type ToolOutput = RequestBody<"/v1/agents/conversations/{id}/tool-outputs", "post">["outputs"][number];

export type VideoRequest = RequestBody<"/v1/video/generate", "post">;
export type Job = ResponseBody<"/v1/jobs/{id}", "get">;

/** Frames of GET /v1/agents/conversations/{id}/events: the conversation first, then each change. */
export type ConversationFrame =
  | { type: "conversation"; conversation_id: string; conversation: Conversation }
  | { type: "message.appended"; conversation_id: string; message: ConversationMessage }
  | { type: "status.changed"; conversation_id: string; status: ConversationStatus }
  | { type: "turn.failed"; conversation_id: string; error: { code: string; message: string } };

/** Frames of GET /v1/jobs/{id}/events: the job first, then one per status or progress change; the socket closes once it is final. */
export type JobFrame = { type: "job"; job_id: string; job: Job } | { type: "job.updated"; job_id: string; job: Job };

/** The body of a webhook delivery; `id` is the event id, the same on every retry. */
export interface WebhookEvent {
  id: string;
  type: "job.completed" | "job.failed" | "budget.alert" | "webhook.test" | (string & {});
  created_at: string;
  data: Record<string, unknown>;
}
