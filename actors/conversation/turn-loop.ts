// The agent loop of one turn (statuses and transitions: docs/api/agents.md):
// call the model, run built-in tool calls inside the turn (the memories
// `remember` accepts go to the caller, which stores them once the turn
// commits: onRemembered), and loop until the
// model answers (→ idle) or calls a caller-declared tool (→ requires_action,
// the assistant message with its tool_calls kept). The number of model steps
// per turn is bounded: past it the conversation returns to idle with an
// assistant message saying so, never a stuck status. So is what the turn
// appends: the model's answers and every tool result count against the
// conversation's cap, and a turn that reaches it stops (turn-room.ts).
import type { ChatMessage, ChatRequest } from "../../providers/chat-request.ts";
import type { ChatResult } from "../../providers/types.ts";
import type { OnEmbedded, OrgIndex } from "../../vectors/org-index.ts";
import type { VectorRecord } from "../../vectors/vector-index.ts";
import { builtinToolNames, GENERATE_VIDEO, offeredBuiltinTools, runBuiltinTool } from "./builtin-tools.ts";
import { appendedBytes } from "./conversation-size.ts";
import { boundToolResult } from "./tool-result-size.ts";
import { capNotice, ConversationRoom, notAddedAnswer } from "./turn-room.ts";
import type { AgentMessage, ConversationData } from "./types.ts";

export const MAX_MODEL_STEPS_PER_TURN = 8;

export interface TurnDeps {
  chat(request: ChatRequest, signal?: AbortSignal): Promise<ChatResult>;
  memory: OrgIndex;
  /** Bills the memory tools' embedding calls. */
  onEmbedded?: OnEmbedded;
  newId(): string;
  now(): string;
  /** Called as each message is appended and when the status changes. */
  onMessage?(message: AgentMessage): void;
  /**
   * Called as `remember` accepts a memory (checked and embedded, not stored):
   * the caller stores it once the turn commits (builtin-tools.ts).
   */
  onRemembered?(record: VectorRecord): void;
  maxSteps?: number;
  /** AGENT_CONVERSATION_MAX_BYTES: the turn stops where its next message would pass it; undefined: no cap. */
  maxBytes?: number | undefined;
  /** AGENT_MESSAGE_MAX_BYTES: the most one tool result the turn writes may take; undefined: no bound. */
  toolResultMaxBytes?: number | undefined;
  signal?: AbortSignal;
  /**
   * Starts a video job for a `generate_video` call: its job id, or an error
   * the model reads. Absent: the tool answers that video is unavailable.
   */
  startVideo?(args: Record<string, unknown>, toolCallId: string): Promise<{ job_id: string } | { error: string }>;
}

function toModelMessages(data: ConversationData): ChatMessage[] {
  const history: ChatMessage[] = data.messages.map((m) => ({ role: m.role, content: m.content, tool_calls: m.tool_calls, tool_call_id: m.tool_call_id }));
  return data.system_prompt ? [{ role: "system", content: data.system_prompt }, ...history] : history;
}

/**
 * Runs the loop on `data` (mutated in place) from a state where the model
 * should speak next. Ends idle, requires_action, or generating_media with
 * `pending_video` set (its payer filled in by the caller).
 */
export async function runTurn(data: ConversationData, deps: TurnDeps): Promise<void> {
  const room = deps.maxBytes === undefined ? undefined : new ConversationRoom(data, deps.maxBytes);
  const append = (message: AgentMessage): void => {
    data.messages.push(message);
    room?.took(message);
    data.updated_at = deps.now();
    deps.onMessage?.(message);
  };
  /** Ends the turn at the cap: idle, with an assistant message saying what did not fit (when even that fits). */
  const stopAtCap = (cap: ConversationRoom, what: string): void => {
    const notice: AgentMessage = { id: deps.newId(), role: "assistant", content: capNotice(cap.maxBytes, what), tool_calls: null, tool_call_id: null };
    if (cap.fits(appendedBytes(notice), true)) append(notice);
    data.status = "idle";
    data.pending_tool_call_ids = [];
  };
  /** This turn's memories, stored once it commits; until then its own searches find them here. */
  const unstored: VectorRecord[] = [];
  const customNames = new Set(data.tools.map((t) => t.name));
  const tools = [...offeredBuiltinTools, ...data.tools];
  const maxSteps = deps.maxSteps ?? MAX_MODEL_STEPS_PER_TURN;
  for (let step = 0; step < maxSteps; step++) {
    const result = await deps.chat({ model: data.model, routing_strategy: data.routing_strategy, messages: toModelMessages(data), tools }, deps.signal);
    const calls = result.tool_calls ?? [];
    const assistant: AgentMessage = { id: deps.newId(), role: "assistant", content: result.content, tool_calls: calls.length > 0 ? calls : null, tool_call_id: null };
    // The model's message is taken only with room to answer each of its calls, should their results not fit.
    let reserved = 0;
    if (room) for (const call of calls) reserved += room.answerBytes(call.id);
    if (room && !room.fits(appendedBytes(assistant) + reserved)) {
      stopAtCap(room, `the model's answer (${appendedBytes(assistant)} bytes)`);
      return;
    }
    append(assistant);
    const position = data.messages.length - 1;
    /** Why the turn stops at the cap, once a result did not fit; the step's other calls are then answered as not added. */
    let full: string | undefined;
    const answer = (toolCallId: string, content: string, what = "a tool result"): void => {
      const message: AgentMessage = { id: deps.newId(), role: "tool", content: boundToolResult(content, deps.toolResultMaxBytes), tool_calls: null, tool_call_id: toolCallId };
      if (room) reserved -= room.answerBytes(toolCallId);
      const bytes = room ? appendedBytes(message) : 0;
      if (room && (full !== undefined || !room.fits(bytes + reserved))) {
        full ??= `${what} (${bytes} bytes)`;
        message.content = notAddedAnswer(room.maxBytes);
      }
      append(message);
    };
    if (calls.length === 0) {
      data.status = "idle";
      data.pending_tool_call_ids = [];
      return;
    }
    const pending: string[] = [];
    let video: { job_id: string; tool_call_id: string } | undefined;
    for (const call of calls) {
      if (full !== undefined) {
        // Past the cap: nothing more is run in this turn.
        answer(call.id, "");
      } else if (call.name === GENERATE_VIDEO) {
        // One job per step: the conversation waits for it in generating_media, and its result answers this call.
        const started = video ? { error: "one video at a time: call generate_video again once this one is ready" } : deps.startVideo ? await deps.startVideo(call.arguments, call.id) : { error: "video generation is not available" };
        if ("job_id" in started) video = { job_id: started.job_id, tool_call_id: call.id };
        else answer(call.id, JSON.stringify(started));
      } else if (builtinToolNames.has(call.name)) {
        const accepted = unstored.length;
        const output = await runBuiltinTool(call.name, call.arguments, {
          memory: deps.memory,
          organizationId: data.owner.organization_id,
          conversationId: data.id,
          call: { id: call.id, position },
          unstored,
          signal: deps.signal,
          onEmbedded: deps.onEmbedded,
          maxResultBytes: deps.toolResultMaxBytes,
        });
        for (const record of unstored.slice(accepted)) deps.onRemembered?.(record);
        answer(call.id, output, `a ${call.name} result`);
      } else if (customNames.has(call.name)) {
        pending.push(call.id);
      } else {
        // A tool nobody declared: tell the model instead of stalling the conversation.
        answer(call.id, JSON.stringify({ error: `no tool named ${call.name} is available` }));
      }
    }
    if (full !== undefined && room) {
      // A video started in this step goes on as a job; its result finds the conversation idle and is not added.
      for (const id of video ? [...pending, video.tool_call_id] : pending) answer(id, "");
      stopAtCap(room, full);
      return;
    }
    if (video) {
      // Caller tools asked in the same step are answered now: the model may call them again after the video.
      for (const id of pending) answer(id, JSON.stringify({ error: "not run: a video is being generated; call this tool again afterwards" }));
      data.status = "generating_media";
      data.pending_tool_call_ids = [video.tool_call_id];
      data.pending_video = { ...video, payer: null, request_id: "", result_recorded: false };
      return;
    }
    if (pending.length > 0) {
      data.status = "requires_action";
      data.pending_tool_call_ids = pending;
      return;
    }
  }
  append({
    id: deps.newId(),
    role: "assistant",
    content: `I stopped after ${maxSteps} model steps in this turn without reaching a final answer. Send another message to continue.`,
    tool_calls: null,
    tool_call_id: null,
  });
  data.status = "idle";
  data.pending_tool_call_ids = [];
}
