// A conversation's state and public shapes (Conversation, Message, ToolCall;
// docs/api/agents.md).
import { z } from "zod";
import { toolDefinitionSchema } from "../../providers/types.ts";
import { routingStrategySchema } from "../../providers/types.ts";

export const conversationStatusSchema = z.enum(["idle", "requires_action", "generating_media"]);
export type ConversationStatus = z.infer<typeof conversationStatusSchema>;

export const agentToolCallSchema = z.object({ id: z.string(), name: z.string(), arguments: z.record(z.string(), z.unknown()) });
export type AgentToolCall = z.infer<typeof agentToolCallSchema>;

export const agentMessageSchema = z.object({
  id: z.string(),
  role: z.enum(["user", "assistant", "tool"]),
  content: z.string(),
  tool_calls: z.array(agentToolCallSchema).nullable(),
  tool_call_id: z.string().nullable(),
});
export type AgentMessage = z.infer<typeof agentMessageSchema>;

export const customToolSchema = toolDefinitionSchema;

export const ownerSchema = z.object({ organization_id: z.string(), project_id: z.string(), environment_id: z.string() });
export type ConversationOwner = z.infer<typeof ownerSchema>;

export const pendingVideoSchema = z.object({
  job_id: z.string(),
  tool_call_id: z.string(),
  payer: z.object({ organization_id: z.string(), project_id: z.string(), environment_id: z.string(), api_key_id: z.string(), live: z.boolean() }).nullable(),
  request_id: z.string(),
  /**
   * The job's result is in the history (the job handed it over); the
   * model's answer to it runs in this conversation's own turn, started by a
   * durable reminder (resumeAfterVideo), not inside the job's turn.
   */
  result_recorded: z.boolean().default(false),
});
export type PendingVideo = z.infer<typeof pendingVideoSchema>;

export const conversationDataSchema = z.object({
  id: z.string(),
  owner: ownerSchema,
  model: z.string().nullable(),
  routing_strategy: routingStrategySchema,
  system_prompt: z.string(),
  tools: z.array(z.object({ name: z.string(), description: z.string(), parameters: z.record(z.string(), z.unknown()) })),
  status: conversationStatusSchema,
  messages: z.array(agentMessageSchema),
  /** Caller-tool calls the conversation waits for in requires_action. */
  pending_tool_call_ids: z.array(z.string()),
  /** generating_media: the video job a generate_video call started, and who pays for the turn it resumes. */
  pending_video: pendingVideoSchema.nullable().default(null),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ConversationData = z.infer<typeof conversationDataSchema>;

/** Actor state: empty until `create` runs (virtual actors exist for every id). */
export const conversationStateSchema = z.object({
  conversation: conversationDataSchema.nullable(),
  /**
   * Fingerprints of the last turns committed (request id + input): a call
   * delivered twice — Dapr retries an actor call whose first delivery it
   * lost track of during a rebalance or a store outage — answers the
   * committed conversation instead of running the turn again.
   */
  handled_calls: z.array(z.string()).optional(),
});
export type ConversationState = z.infer<typeof conversationStateSchema>;

/** The public Conversation. */
export const conversationSchema = z.object({
  id: z.string(),
  model: z.string().nullable(),
  routing_strategy: z.string(),
  status: conversationStatusSchema,
  system_prompt: z.string(),
  tools: z.array(z.object({ name: z.string(), description: z.string(), parameters: z.record(z.string(), z.unknown()) })),
  messages: z.array(agentMessageSchema),
  created_at: z.string(),
  updated_at: z.string(),
});
export type Conversation = z.infer<typeof conversationSchema>;

/** List item: no messages (a list stays small whatever the conversations hold). */
export const conversationSummarySchema = z.object({
  id: z.string(),
  model: z.string().nullable(),
  routing_strategy: z.string(),
  status: conversationStatusSchema,
  message_count: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ConversationSummary = z.infer<typeof conversationSummarySchema>;

export function toPublic(data: ConversationData): Conversation {
  return {
    id: data.id,
    model: data.model,
    routing_strategy: data.routing_strategy,
    status: data.status,
    system_prompt: data.system_prompt,
    tools: data.tools,
    messages: data.messages,
    created_at: data.created_at,
    updated_at: data.updated_at,
  };
}

export function toSummary(data: ConversationData): ConversationSummary {
  return {
    id: data.id,
    model: data.model,
    routing_strategy: data.routing_strategy,
    status: data.status,
    message_count: data.messages.length,
    created_at: data.created_at,
    updated_at: data.updated_at,
  };
}
