// The built-in tools every agent has without declaring them (docs/api/agents.md):
// `search_memory` and `remember`, both on the organization's vector index
// (memories are records with metadata.kind = "memory"; docs/api/agents.md). They
// run inside the conversation's turn. A bad argument from the model becomes
// an error result the model can read and recover from, not a failed turn.
// A result is held to AGENT_MESSAGE_MAX_BYTES, cut with a marker
// (tool-result-size.ts).
//
// `remember` checks and embeds the memory inside the turn but does not store
// it: the turn's caller stores it once the turn commits (an outbox), so a
// failed turn stores nothing, and its record id comes from the conversation,
// the turn and the tool call, so a turn run twice stores one memory. The
// turn's own later `search_memory` calls find it meanwhile.
import { z } from "zod";
import { isTroupeError } from "../../core/errors.ts";
import { nameUuid } from "../../core/ids.ts";
import { toolParameters } from "../../core/tool-parameters.ts";
import type { ToolDefinition } from "../../providers/types.ts";
import type { OnEmbedded, OrgIndex } from "../../vectors/org-index.ts";
import { MAX_TOP_K, type VectorRecord } from "../../vectors/vector-index.ts";
import { generateVideoTool } from "../job/video-request.ts";
import { boundToolResult, searchResultText } from "./tool-result-size.ts";

export const DEFAULT_MEMORY_TOP_K = 5;

const searchArgs = z.object({
  query: z.string().min(1).describe("What to look for"),
  top_k: z.number().int().min(1).max(MAX_TOP_K).optional().describe(`How many results (default ${DEFAULT_MEMORY_TOP_K})`),
});
const rememberArgs = z.object({ content: z.string().min(1).describe("The fact to remember, self-contained") });

export const builtinTools: ToolDefinition[] = [
  {
    name: "search_memory",
    description:
      "Search the organization's long-term memory and indexed documents for passages relevant to a query. Returns the closest records with their cosine distance (lower is closer).",
    parameters: toolParameters(searchArgs),
  },
  {
    name: "remember",
    description: "Store a fact in the organization's long-term memory so later conversations can find it with search_memory.",
    parameters: toolParameters(rememberArgs),
  },
];

/** Run inside the turn. */
export const builtinToolNames = new Set(builtinTools.map((t) => t.name));
/** Not run inside the turn: starts a JobActor and parks the conversation in generating_media. */
export const GENERATE_VIDEO = generateVideoTool.name;
/** Every tool the model is offered without declaring it. */
export const offeredBuiltinTools: ToolDefinition[] = [...builtinTools, generateVideoTool];
/** Refused as custom tool names. */
export const reservedToolNames = new Set([...builtinToolNames, GENERATE_VIDEO]);

/**
 * The record id of the memory a `remember` call stores: the same for the same
 * conversation, turn and call, so storing it again replaces it. The turn is
 * the position in the conversation of the assistant message that made the
 * call, the same on every run of the turn from the same committed state (a
 * later turn's calls sit further on, even when the model reuses call ids).
 */
export function memoryRecordId(conversationId: string, position: number, toolCallId: string): string {
  return nameUuid(JSON.stringify(["memory", conversationId, position, toolCallId]));
}

export interface BuiltinToolContext {
  memory: OrgIndex;
  organizationId: string;
  conversationId: string;
  /** The call being run: its id, and the position in the conversation of the assistant message that made it. */
  call: { id: string; position: number };
  /**
   * The memories `remember` accepted earlier in the turn, to be stored once it
   * commits: `remember` adds to it, `search_memory` ranks them among the
   * stored records.
   */
  unstored: VectorRecord[];
  signal?: AbortSignal | undefined;
  /** Bills the memory tools' embedding calls to the turn's payer. */
  onEmbedded?: OnEmbedded | undefined;
  /** AGENT_MESSAGE_MAX_BYTES: the most a result may take; undefined: no bound. */
  maxResultBytes?: number | undefined;
}

/** Runs one built-in tool call; returns the tool message content (JSON text), within ctx.maxResultBytes. */
export async function runBuiltinTool(name: string, args: Record<string, unknown>, ctx: BuiltinToolContext): Promise<string> {
  return boundToolResult(await runUnbounded(name, args, ctx), ctx.maxResultBytes);
}

async function runUnbounded(name: string, args: Record<string, unknown>, ctx: BuiltinToolContext): Promise<string> {
  try {
    if (name === "search_memory") {
      const parsed = searchArgs.safeParse(args);
      if (!parsed.success) return JSON.stringify({ error: `invalid arguments: ${z.prettifyError(parsed.error)}` });
      const results = await ctx.memory.search(ctx.organizationId, parsed.data.query, parsed.data.top_k ?? DEFAULT_MEMORY_TOP_K, undefined, ctx.signal, ctx.onEmbedded, ctx.unstored);
      return searchResultText(
        results.map((r) => ({ id: r.id, content: r.content, metadata: r.metadata, distance: r.distance })),
        ctx.maxResultBytes,
      );
    }
    if (name === "remember") {
      const parsed = rememberArgs.safeParse(args);
      if (!parsed.success) return JSON.stringify({ error: `invalid arguments: ${z.prettifyError(parsed.error)}` });
      const record = await ctx.memory.prepare({
        organizationId: ctx.organizationId,
        id: memoryRecordId(ctx.conversationId, ctx.call.position, ctx.call.id),
        content: parsed.data.content,
        metadata: { kind: "memory", conversation_id: ctx.conversationId },
        // The turn's earlier memories count against the quota too: none of them is stored yet.
        unstoredHeld: ctx.unstored.length,
        signal: ctx.signal,
        onUsage: ctx.onEmbedded,
      });
      ctx.unstored.push(record);
      return JSON.stringify({ stored: true, id: record.id });
    }
    return JSON.stringify({ error: `unknown built-in tool ${name}` });
  } catch (error) {
    // A 4xx from the index (empty or oversized content, bad top_k, a full
    // quota: the same limits as /v1/embeddings/index) is the model's to read;
    // anything else fails the turn.
    if (isTroupeError(error) && error.status < 500) return JSON.stringify({ error: error.message });
    throw error;
  }
}
