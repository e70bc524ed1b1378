// ConversationActor: one per conversation id. Thin by design (an actor holds state and transitions; the work it calls is injected):
// state shape and transitions; the model loop lives in turn-loop.ts. Every
// method checks the caller's organization, so another tenant's id is 404.
import { hash } from "node:crypto";
import { payerSchema, type Payer, type UsageFigures } from "../../providers/usage.ts";
import type { EmbeddingUsage } from "../../vectors/org-index.ts";
import type { VectorRecord } from "../../vectors/vector-index.ts";
import { z } from "zod";
import { isoTime } from "../../core/clock.ts";
import { invalidRequest, isTroupeError, TroupeError, type FieldIssue } from "../../core/errors.ts";
import { actorRef, defineActor, type ActorContext } from "../actor.ts";
import type { ConversationDirectory } from "./directory.ts";
import type { ConversationEvent, ConversationEventBus } from "./events.ts";
import { appendedBytes } from "./conversation-size.ts";
import { closingReserveBytes, ConversationRoom, notAddedAnswer } from "./turn-room.ts";
import { runTurn, type TurnDeps } from "./turn-loop.ts";
import {
  conversationStateSchema,
  customToolSchema,
  ownerSchema,
  toPublic,
  toSummary,
  type AgentMessage,
  type Conversation,
  type ConversationData,
  type ConversationState,
} from "./types.ts";
import { routingStrategySchema, type ChatResult } from "../../providers/types.ts";
import type { CreateJobInput, JobActorDefinition } from "../job/job-actor.ts";
import { generateVideoArgs } from "../job/video-request.ts";

export const CONVERSATION_ACTOR = "ConversationActor";
/** The video jobs generate_video starts, typed from the JobActor's definition (built from the gateway's dependencies). */
const jobActor = actorRef<JobActorDefinition>("JobActor");

export interface ConversationActorDeps {
  /** A turn's model call; `payer` is the key that runs the turn (its model allowlist applies to the call). */
  chat(request: Parameters<TurnDeps["chat"]>[0], signal: AbortSignal | undefined, payer: Payer | undefined): ReturnType<TurnDeps["chat"]>;
  /**
   * Called once per billed call of a turn (model calls, and the memory tools'
   * embedding calls); `call` numbers them from 0, so each gets its own ledger
   * key under the one request id. Must not throw or block. A promise (it
   * never rejects) is the record's durable write, grouped with those of other
   * calls of this event-loop turn (UsageMeter.recordGrouped): the turn
   * commits and answers only after it settles, as when the write was
   * synchronous, and concurrent turns share one journal write instead of a
   * write(2) each.
   */
  recordUsage?(payer: Payer, requestId: string, category: "agents" | "embeddings", figures: UsageFigures, call: number): Promise<void> | void;
  memory: TurnDeps["memory"];
  directory: ConversationDirectory;
  events: ConversationEventBus;
  maxSteps?: number;
  /**
   * AGENT_CONVERSATION_MAX_BYTES: a message or tool outputs that would take
   * the conversation (its messages and system prompt as JSON) past this are
   * refused with 409, and a turn stops where its own next message would
   * (turn-room.ts), so no conversation grows without bound (every turn
   * reads, sends and commits the whole history). Undefined: no cap.
   */
  conversationMaxBytes?: number;
  /** AGENT_MESSAGE_MAX_BYTES: the most one built-in tool result may take, as a caller's tool output; undefined: no bound. */
  toolResultMaxBytes?: number;
}

const createInput = z.object({
  owner: ownerSchema,
  model: z.string().nullable(),
  routing_strategy: routingStrategySchema,
  system_prompt: z.string(),
  tools: z.array(customToolSchema),
});
/** The caller: its organization and, for an API key, its environment (another environment's conversation is 404 to it). */
const orgInput = z.object({ organization_id: z.string(), environment_id: z.string().optional() });
const billing = { payer: payerSchema.optional(), request_id: z.string().default("") };
const messageInput = orgInput.extend({ content: z.string(), ...billing });
const toolOutputsInput = orgInput.extend({ outputs: z.array(z.object({ tool_call_id: z.string(), output: z.string() })), ...billing });

/** The reminder that runs the model's answer to a finished video (resumeAfterVideo). */
const RESUME_REMINDER = "resume-after-video";
/** Its period: how soon an answer cut short by a crash is tried again (a longer answer meanwhile finds it done). */
const RESUME_RETRY_MS = 60_000;

/** Turns remembered for duplicate detection: far more than a retry can lag behind. */
const handledCallsKept = 32;

/** The call's fingerprint, or undefined without a request id (nothing to recognise a repeat by). */
export function callFingerprint(requestId: string, input: unknown): string | undefined {
  if (requestId === "") return undefined;
  // One-shot: the same digest as hashing the three parts in turn, without a Hash object per turn.
  return hash("sha256", `${requestId}\u0000${JSON.stringify(input)}`, "base64url").slice(0, 22);
}

/** What the helpers below use of a turn's context (any method's ctx fits). */
type Ctx = Pick<ActorContext<ConversationState>, "state" | "clock" | "ids">;
type TurnCtx = Ctx & Pick<ActorContext<ConversationState>, "call" | "afterCommit">;

const videoFinishedInput = z.object({
  job_id: z.string(),
  tool_call_id: z.string(),
  result_url: z.string().nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
});

/**
 * generate_video: starts a JobActor that calls this conversation back
 * (videoFinished) when it ends. The job's create turn never calls back into
 * this conversation, so waiting for it here cannot deadlock (actors/actor.ts).
 */
async function startVideo(
  ctx: TurnCtx,
  data: ConversationData,
  payer: Payer | undefined,
  args: Record<string, unknown>,
  toolCallId: string,
): Promise<{ job_id: string } | { error: string }> {
  if (!payer) return { error: "video generation needs a calling API key" };
  const parsed = generateVideoArgs.safeParse(args);
  if (!parsed.success) return { error: `invalid arguments: ${z.prettifyError(parsed.error)}` };
  const jobId = ctx.ids.uuid();
  const input: CreateJobInput = {
    owner: data.owner,
    payer,
    ...parsed.data,
    model: null,
    routing_strategy: "auto",
    image: null,
    callback: { conversation_id: data.id, tool_call_id: toolCallId },
  };
  try {
    await ctx.call(jobActor, jobId, "create", input);
  } catch (error) {
    // No video model available, or no ffmpeg on this server, for instance: the model reads why and answers.
    if (isTroupeError(error) && (error.status < 500 || error.code === "no_provider_available" || error.code === "capability_unavailable")) return { error: error.message };
    throw error;
  }
  return { job_id: jobId };
}

/** 409 unless `adding` more bytes (JSON of the new messages) keep the conversation within `max`, less what a turn keeps for its last message. */
function assertRoom(data: ConversationData, adding: number, max: number | undefined, field: string): void {
  if (max === undefined) return;
  const room = new ConversationRoom(data, max);
  if (room.fits(adding)) return;
  const size = room.size();
  throw new TroupeError(
    "conflict",
    `the conversation is full: it holds ${size} bytes, this would take it past its cap of ${max} bytes (less ${closingReserveBytes} kept for a turn's last message); start a new conversation`,
    { details: [{ path: field, message: `the conversation has room for ${room.left()} more bytes`, conversation_bytes: size, limit_bytes: max }] },
  );
}

function owned(ctx: Ctx, caller: z.output<typeof orgInput>): ConversationData {
  const data = ctx.state.conversation;
  if (!data || data.owner.organization_id !== caller.organization_id) throw new TroupeError("not_found", "conversation not found");
  if (caller.environment_id !== undefined && data.owner.environment_id !== caller.environment_id) throw new TroupeError("not_found", "conversation not found");
  return data;
}

export function createConversationActor(deps: ConversationActorDeps) {
  const now = (ctx: Ctx) => isoTime(ctx.clock.now());

  /**
   * What a turn announces (live events, the directory's summary) and the
   * memories its `remember` calls accepted leave once the turn commits: a
   * turn that fails announces only `turn.failed`, never messages that were
   * rolled back with it, and stores no memory. Like the rest, a memory is
   * stored at most once after the commit: a process killed in between loses
   * it (the model was told it was stored).
   */
  const announce = (ctx: TurnCtx, event: ConversationEvent) => ctx.afterCommit(() => deps.events.publish(event));
  const announceSummary = (ctx: TurnCtx, data: ConversationData) => {
    const summary = toSummary(data);
    ctx.afterCommit(() => deps.directory.updated(summary));
  };
  const storeMemory = (ctx: TurnCtx, record: VectorRecord) => ctx.afterCommit(() => deps.memory.store([record]));

  /** Runs the loop, announcing as it goes; the directory learns the outcome. */
  const continueTurn = async (ctx: TurnCtx, data: ConversationData, payer: Payer | undefined, requestId: string, before = data.status): Promise<Conversation> => {
    const publishMessage = (message: AgentMessage) => announce(ctx, { type: "message.appended", conversation_id: data.id, message });
    let call = 0;
    /** The embedding calls' usage writes, reported from inside the memory tools: awaited before the turn goes on to its commit. */
    const usageWrites: Array<Promise<void> | void> = [];
    try {
      await runTurn(data, {
        chat: async (request, signal) => {
          const result = await deps.chat(request, signal, payer);
          if (payer) await deps.recordUsage?.(payer, requestId, "agents", result, call++);
          return result;
        },
        memory: deps.memory,
        ...(payer ? { onEmbedded: (usage: EmbeddingUsage) => void usageWrites.push(deps.recordUsage?.(payer, requestId, "embeddings", usage, call++)) } : {}),
        newId: () => ctx.ids.uuid(),
        now: () => now(ctx),
        onMessage: publishMessage,
        onRemembered: (record) => storeMemory(ctx, record),
        startVideo: (args, toolCallId) => startVideo(ctx, data, payer, args, toolCallId),
        maxBytes: deps.conversationMaxBytes,
        toolResultMaxBytes: deps.toolResultMaxBytes,
        ...(deps.maxSteps !== undefined ? { maxSteps: deps.maxSteps } : {}),
      });
      if (data.pending_video) data.pending_video = { ...data.pending_video, payer: payer ?? null, request_id: requestId };
    } catch (error) {
      const code = isTroupeError(error) ? error.code : "internal_error";
      const message = error instanceof Error ? error.message : "turn failed";
      // The one announcement of a failing turn: its own failure, now (nothing it queued will leave).
      deps.events.publish({ type: "turn.failed", conversation_id: data.id, error: { code, message } });
      throw error;
    } finally {
      // A failed turn's calls were billed all the same: their records are written before its error answers too.
      await Promise.all(usageWrites);
    }
    if (data.status !== before) announce(ctx, { type: "status.changed", conversation_id: data.id, status: data.status });
    announceSummary(ctx, data);
    return toPublic(data);
  };

  return defineActor({
    type: CONVERSATION_ACTOR,
    state: conversationStateSchema,
    initialState: (): ConversationState => ({ conversation: null }),
    methods: {
      create: {
        input: createInput,
        run: async (ctx, input): Promise<Conversation> => {
          if (ctx.state.conversation) throw new TroupeError("conflict", "conversation already exists");
          const at = now(ctx);
          const data: ConversationData = {
            id: ctx.id,
            owner: input.owner,
            model: input.model,
            routing_strategy: input.routing_strategy,
            system_prompt: input.system_prompt,
            tools: input.tools,
            status: "idle",
            messages: [],
            pending_tool_call_ids: [],
            pending_video: null,
            created_at: at,
            updated_at: at,
          };
          ctx.state.conversation = data;
          await deps.directory.created(input.owner, toSummary(data));
          return toPublic(data);
        },
      },

      get: { input: orgInput, run: async (ctx, input): Promise<Conversation> => toPublic(owned(ctx, input)) },

      /**
       * Deleting its organization (gateway/organization-erasure.ts): the
       * reminder goes and the state returns to the initial one, which both
       * hosts delete from their store instead of writing it — done in a turn,
       * because daprd deletes actor state only from inside one.
       */
      erase: {
        input: orgInput,
        run: async (ctx, input): Promise<{ id: string; erased: true }> => {
          owned(ctx, input);
          await ctx.clearReminder(RESUME_REMINDER);
          ctx.state = { conversation: null };
          return { id: ctx.id, erased: true };
        },
      },

      postMessage: {
        input: messageInput,
        run: async (ctx, input): Promise<Conversation> => {
          const data = owned(ctx, input);
          const fingerprint = callFingerprint(input.request_id, { postMessage: input.content });
          if (fingerprint && ctx.state.handled_calls?.includes(fingerprint)) return toPublic(data);
          if (data.status !== "idle") {
            throw new TroupeError("conflict", `the conversation is ${data.status}; messages are accepted only when it is idle`, {
              details: { status: data.status, pending_tool_call_ids: data.pending_tool_call_ids },
            });
          }
          const message: AgentMessage = { id: ctx.ids.uuid(), role: "user", content: input.content, tool_calls: null, tool_call_id: null };
          assertRoom(data, appendedBytes(message), deps.conversationMaxBytes, "body.content");
          data.messages.push(message);
          data.updated_at = now(ctx);
          announce(ctx, { type: "message.appended", conversation_id: data.id, message });
          const result = await continueTurn(ctx, data, input.payer, input.request_id);
          remember(ctx, fingerprint);
          return result;
        },
      },

      submitToolOutputs: {
        input: toolOutputsInput,
        run: async (ctx, input): Promise<Conversation> => {
          const data = owned(ctx, input);
          const fingerprint = callFingerprint(input.request_id, { submitToolOutputs: input.outputs });
          if (fingerprint && ctx.state.handled_calls?.includes(fingerprint)) return toPublic(data);
          if (data.status !== "requires_action") {
            throw new TroupeError("conflict", `the conversation is ${data.status}; tool outputs are accepted only in requires_action`);
          }
          const pending = new Set(data.pending_tool_call_ids);
          const given = input.outputs.map((o) => o.tool_call_id);
          const issues: FieldIssue[] = [];
          const seen = new Set<string>();
          input.outputs.forEach((o, i) => {
            if (!pending.has(o.tool_call_id)) issues.push({ path: `body.outputs.${i}.tool_call_id`, message: `${o.tool_call_id} is not a pending tool call` });
            else if (seen.has(o.tool_call_id)) issues.push({ path: `body.outputs.${i}.tool_call_id`, message: `${o.tool_call_id} is answered twice` });
            seen.add(o.tool_call_id);
          });
          const missing = data.pending_tool_call_ids.filter((id) => !given.includes(id));
          if (missing.length > 0) issues.push({ path: "body.outputs", message: `missing outputs for pending tool calls: ${missing.join(", ")}` });
          if (issues.length > 0) throw invalidRequest(issues);
          const byId = new Map(input.outputs.map((o) => [o.tool_call_id, o.output]));
          const answers = data.pending_tool_call_ids.map(
            (id): AgentMessage => ({ id: ctx.ids.uuid(), role: "tool", content: byId.get(id) ?? "", tool_calls: null, tool_call_id: id }),
          );
          // Checked before anything is appended or announced: a refused call changes nothing.
          assertRoom(data, Buffer.byteLength(JSON.stringify(answers)), deps.conversationMaxBytes, "body.outputs");
          for (const message of answers) {
            data.messages.push(message);
            announce(ctx, { type: "message.appended", conversation_id: data.id, message });
          }
          data.pending_tool_call_ids = [];
          data.updated_at = now(ctx);
          const result = await continueTurn(ctx, data, input.payer, input.request_id);
          remember(ctx, fingerprint);
          return result;
        },
      },

      /**
       * The video job a generate_video call started has ended: its result (or
       * error) answers the call, and the model's turn goes on in a turn of
       * this conversation's own (resumeAfterVideo, from a durable reminder),
       * so the job's turn that calls this waits for the hand-off only, never
       * for the model. Idempotent: a job calling back again (after a crash)
       * finds the result already recorded.
       */
      videoFinished: {
        input: videoFinishedInput,
        run: async (ctx, input): Promise<Conversation | null> => {
          const data = ctx.state.conversation;
          const pending = data?.pending_video;
          if (!data || data.status !== "generating_media" || !pending || pending.job_id !== input.job_id) return null;
          if (pending.result_recorded) return toPublic(data);
          const output = input.error
            ? { job_id: input.job_id, status: "failed", error: input.error }
            : { job_id: input.job_id, status: "completed", result_url: input.result_url };
          const message: AgentMessage = { id: ctx.ids.uuid(), role: "tool", content: JSON.stringify(output), tool_calls: null, tool_call_id: pending.tool_call_id };
          // The turn that started the job kept room for this answer (turn-room.ts): a result too long for it is answered as not added.
          const cap = deps.conversationMaxBytes;
          if (cap !== undefined && !new ConversationRoom(data, cap).fits(appendedBytes(message))) message.content = notAddedAnswer(cap);
          data.messages.push(message);
          announce(ctx, { type: "message.appended", conversation_id: data.id, message });
          data.pending_video = { ...pending, result_recorded: true };
          data.pending_tool_call_ids = [];
          data.updated_at = now(ctx);
          // Periodic, so a process killed during the model's answer answers again once back; the answering turn clears it.
          await ctx.setReminder(RESUME_REMINDER, 0, RESUME_RETRY_MS, "resumeAfterVideo", { job_id: input.job_id });
          return toPublic(data);
        },
      },

      /** The model answers the video's result (the reminder videoFinished set); a no-op once it has. */
      resumeAfterVideo: {
        input: z.object({ job_id: z.string() }),
        run: async (ctx, input): Promise<void> => {
          const data = ctx.state.conversation;
          const pending = data?.pending_video;
          const clearReminder = () => ctx.afterCommit(() => ctx.clearReminder(RESUME_REMINDER));
          if (!data || !pending || data.status !== "generating_media") {
            clearReminder(); // answered already (a firing queued behind the answering turn, or after a crash)
            return;
          }
          // Not handed over yet (its videoFinished turn failed after setting this reminder): the job calls again.
          if (!pending.result_recorded || pending.job_id !== input.job_id) return;
          data.pending_video = null;
          try {
            // The rest of the turn bills under its own key: the calls before the video were numbered from 0 under the request id.
            await continueTurn(ctx, data, pending.payer ?? undefined, `${pending.request_id}:after-video`, "generating_media");
          } catch (error) {
            // The model failed to answer: the result stays in the history and
            // the conversation is idle again, never stuck in generating_media.
            if (data.status === "generating_media" && !data.pending_video) data.status = "idle";
            announce(ctx, { type: "status.changed", conversation_id: data.id, status: data.status });
            announceSummary(ctx, data);
            ctx.log.warn("conversation turn after a video failed", { conversation_id: data.id, error });
          }
          // Cleared once this answer is committed: a turn killed before its commit leaves the reminder to answer again.
          clearReminder();
        },
      },
    },
  });
}

/** Records a committed call's fingerprint (kept with the turn's state, in the same commit). */
function remember(ctx: Ctx, fingerprint: string | undefined): void {
  if (!fingerprint) return;
  ctx.state.handled_calls = [...(ctx.state.handled_calls ?? []), fingerprint].slice(-handledCallsKept);
}

export type ConversationActorDefinition = ReturnType<typeof createConversationActor>;
