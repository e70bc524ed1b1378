// The ConversationActor's methods (actors/conversation/conversation-actor.ts)
// run in process, each turn on a context the test builds: an injected clock
// and id source, a scripted model, recorded reminders and actor calls, and
// an after-commit queue the test runs itself ("the commit"), so what leaves
// before and after it is seen apart. Each committed state is checked against
// the state schema, as the hosts do. It proves:
// - create saves the conversation idle and lists it before answering; a
//   second create is 409; get, erase and every turn answer 404 to another
//   organization or environment; erase drops the reminder and the state;
// - a message turn appends the caller's message and the model's, bills each
//   model and embedding call to the payer (numbered from 0, none without a
//   payer), and announces messages, status changes, the directory summary
//   and `remember` memories only after the commit; a failing turn announces
//   its `turn.failed` at once (code and message), and its billing writes
//   settle before it answers;
// - messages only when idle, tool outputs only in requires_action, each
//   pending call answered once (400 naming each bad output), the cap's 409
//   with its exact room; a call delivered twice answers the committed
//   conversation, and the last 32 fingerprints are kept;
// - generate_video starts one JobActor with the payer and a callback, parks
//   the conversation in generating_media, and tells the model why not when
//   there is no payer, bad arguments or a 4xx/no-provider/no-ffmpeg refusal
//   (other errors fail the turn); videoFinished records the result once
//   (within the cap) and sets the resume reminder; resumeAfterVideo runs the
//   model's answer under `<request id>:after-video`, ends idle even when the
//   model fails, and clears the reminder after the commit.
import { createHash } from "node:crypto";
import t from "tap";
import { z } from "zod";
import {
  callFingerprint,
  CONVERSATION_ACTOR,
  createConversationActor,
  type ConversationActorDeps,
  type ConversationActorDefinition,
} from "../../actors/conversation/conversation-actor.ts";
import { appendedBytes, conversationBytes } from "../../actors/conversation/conversation-size.ts";
import type { ConversationDirectory } from "../../actors/conversation/directory.ts";
import type { ConversationEvent } from "../../actors/conversation/events.ts";
import { boundToolResult } from "../../actors/conversation/tool-result-size.ts";
import { capNotice, closingReserveBytes, notAddedAnswer } from "../../actors/conversation/turn-room.ts";
import {
  conversationStateSchema,
  type AgentMessage,
  type AgentToolCall,
  type ConversationData,
  type ConversationState,
  type ConversationSummary,
} from "../../actors/conversation/types.ts";
import { generateVideoArgs } from "../../actors/job/video-request.ts";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../core/log.ts";
import { TroupeError } from "../../core/errors.ts";
import type { ChatRequest } from "../../providers/chat-request.ts";
import type { ChatResult } from "../../providers/types.ts";
import type { Payer, UsageFigures } from "../../providers/usage.ts";
import type { OrgIndex, RecordDraft } from "../../vectors/org-index.ts";
import type { VectorRecord } from "../../vectors/vector-index.ts";
import { answer } from "../support/double-chat-answer.ts";
import { recordingLog, type LogLine } from "../support/recording-log.ts";

type Methods = ConversationActorDefinition["methods"];
type Ctx = Parameters<Methods["create"]["run"]>[0];

const conversationId = "0193c6f0-0000-7000-8000-0000000000c1";
const owner = { organization_id: "org_1", project_id: "prj_1", environment_id: "env_1" };
const caller = { organization_id: "org_1" };
const payer: Payer = { ...owner, api_key_id: "key_1", live: true };
const customTool = { name: "lookup_order", description: "Looks an order up", parameters: { type: "object", properties: {} } };
const start = Date.UTC(2026, 11, 4, 10, 0, 0);
const at = (seconds: number): string => new Date(start + seconds * 1000).toISOString();
const call = (id: string, name: string, args: Record<string, unknown> = {}): AgentToolCall => ({ id, name, arguments: args });

class ManualClock implements Clock {
  ms = start;
  now(): number {
    return this.ms;
  }
}

/** A promise the test resolves when it wants a held write to go on. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

interface UsageRecord {
  payer: Payer;
  requestId: string;
  category: "agents" | "embeddings";
  figures: UsageFigures;
  call: number;
}
type Step = ChatResult | Error | string;

/**
 * One actor with recording dependencies. `trail` lists every side effect in
 * the order it happened, with "commit" where the test committed a turn.
 */
class World {
  readonly clock = new ManualClock();
  readonly trail: string[] = [];
  readonly published: ConversationEvent[] = [];
  readonly summaries: ConversationSummary[] = [];
  readonly created: Array<{ owner: { organization_id: string; environment_id: string }; summary: ConversationSummary }> = [];
  readonly stored: VectorRecord[][] = [];
  readonly drafts: RecordDraft[] = [];
  readonly usage: UsageRecord[] = [];
  readonly requests: ChatRequest[] = [];
  readonly payers: Array<Payer | undefined> = [];
  readonly jobCalls: Array<{ type: string; id: string; method: string; input: unknown }> = [];
  readonly reminders: Array<{ op: "set" | "clear"; name: string; dueMs?: number; periodMs?: number | undefined; method?: string; input?: unknown }> = [];
  readonly log: { log: Logger; lines: LogLine[] } = recordingLog();
  /** The model's steps, in order; past the end it answers "done". */
  script: Step[] = [];
  /** What a JobActor create does: resolves, or throws what the test put here. */
  jobFailure: unknown = undefined;
  /** Held usage writes of one category. */
  holdUsage: { category: "agents" | "embeddings"; until: Promise<void> } | undefined;
  committed: ConversationState = { conversation: null };
  readonly actor: ConversationActorDefinition;
  private ids = 0;

  constructor(over: Partial<ConversationActorDeps> = {}, withUsage = true) {
    const directory = {
      created: async (o: { organization_id: string; environment_id: string }, summary: ConversationSummary) => {
        this.trail.push("directory.created");
        this.created.push({ owner: o, summary });
      },
      updated: (summary: ConversationSummary) => {
        this.trail.push(`summary:${summary.status}:${summary.message_count}`);
        this.summaries.push(summary);
      },
    };
    const memory = {
      prepare: async (draft: RecordDraft): Promise<VectorRecord> => {
        this.drafts.push(draft);
        draft.onUsage?.({ model: "embedder", provider: "local", input_tokens: draft.content.length });
        return { id: draft.id, organization_id: draft.organizationId, content: draft.content, metadata: draft.metadata, model: "embedder", vector: [1], created_at: "" };
      },
      search: async (_org: string, query: string, _topK: number, _filter: unknown, _signal: unknown, onUsage: ((u: { model: string; provider: string; input_tokens: number }) => void) | undefined) => {
        onUsage?.({ model: "embedder", provider: "local", input_tokens: query.length });
        return [];
      },
      store: async (records: readonly VectorRecord[]) => {
        this.trail.push(`store:${records.map((r) => r.content).join(",")}`);
        this.stored.push([...records]);
      },
    };
    const deps: ConversationActorDeps = {
      chat: async (request, _signal, p) => {
        this.requests.push(structuredClone(request));
        this.payers.push(p);
        const step = this.script[this.requests.length - 1] ?? answer("done");
        this.clock.ms += 1000;
        if (typeof step === "string") throw step;
        if (step instanceof Error) throw step;
        return step;
      },
      memory: memory as unknown as OrgIndex,
      directory: directory as unknown as ConversationDirectory,
      events: {
        publish: (event) => {
          this.trail.push(`event:${event.type}`);
          this.published.push(structuredClone(event));
        },
        listen: async () => async () => undefined,
      },
      ...over,
    };
    if (withUsage) {
      deps.recordUsage = (p, requestId, category, figures, n) => {
        this.trail.push(`usage:${category}:${n}`);
        this.usage.push({ payer: p, requestId, category, figures, call: n });
        return this.holdUsage?.category === category ? this.holdUsage.until : undefined;
      };
    }
    this.actor = createConversationActor(deps);
  }

  /** The id the next uuid() call returns. */
  nextId(ahead = 1): string {
    return `id-${String(this.ids + ahead).padStart(4, "0")}`;
  }

  /** One turn's context on a copy of the committed state; commit() keeps its state and runs its after-commit queue. */
  turn(): { ctx: Ctx; queued: Array<() => unknown>; commit: () => Promise<ConversationState> } {
    const queued: Array<() => unknown> = [];
    const ctx: Ctx = {
      type: CONVERSATION_ACTOR,
      id: conversationId,
      state: structuredClone(this.committed),
      clock: this.clock,
      ids: { uuid: () => `id-${String(++this.ids).padStart(4, "0")}` },
      log: this.log.log,
      call: async (callee, id, method, input) => {
        this.trail.push(`call:${callee.type}.${method}`);
        this.jobCalls.push({ type: callee.type, id, method, input: structuredClone(input) });
        if (this.jobFailure !== undefined) throw this.jobFailure;
        return undefined as never;
      },
      setTimer: () => Promise.reject(new Error("no timer expected")),
      clearTimer: () => Promise.reject(new Error("no timer expected")),
      setReminder: async (name, dueMs, periodMs, method, input) => {
        this.trail.push(`setReminder:${name}`);
        this.reminders.push({ op: "set", name, dueMs, periodMs, method, input });
      },
      clearReminder: async (name) => {
        this.trail.push(`clearReminder:${name}`);
        this.reminders.push({ op: "clear", name });
      },
      afterCommit: (fn) => void queued.push(fn),
    };
    const commit = async (): Promise<ConversationState> => {
      this.committed = conversationStateSchema.parse(ctx.state);
      this.trail.push("commit");
      for (const fn of queued) await fn();
      return this.committed;
    };
    return { ctx, queued, commit };
  }

  /** Runs one method as a host does: the input through its schema, then the turn; committed when it resolves. */
  async invoke<K extends keyof Methods>(name: K, raw: z.input<Methods[K]["input"]>): Promise<Awaited<ReturnType<Methods[K]["run"]>>> {
    const { ctx, commit } = this.turn();
    const method = this.actor.methods[name] as unknown as { input: z.ZodType; run: (ctx: Ctx, input: unknown) => Promise<Awaited<ReturnType<Methods[K]["run"]>>> };
    const result = await method.run(ctx, method.input.parse(raw));
    await commit();
    return result;
  }

  /** Runs a method expected to throw; returns the error, nothing committed. */
  async refused<K extends keyof Methods>(name: K, raw: z.input<Methods[K]["input"]>): Promise<{ error: unknown; queued: number }> {
    const { ctx, queued } = this.turn();
    const method = this.actor.methods[name] as unknown as { input: z.ZodType; run: (ctx: Ctx, input: unknown) => Promise<unknown> };
    try {
      await method.run(ctx, method.input.parse(raw));
    } catch (error) {
      return { error, queued: queued.length };
    }
    throw new Error(`${String(name)} did not throw`);
  }

  async create(over: { system_prompt?: string; tools?: Array<typeof customTool> } = {}): Promise<void> {
    await this.invoke("create", { owner, model: "gpt-test", routing_strategy: "cost", system_prompt: over.system_prompt ?? "", tools: over.tools ?? [customTool] });
    this.trail.length = 0;
    this.created.length = 0;
  }

  get data(): ConversationData {
    const data = this.committed.conversation;
    if (!data) throw new Error("no conversation");
    return data;
  }

  /** Puts the conversation in generating_media for `job-1`, as a generate_video turn leaves it. */
  seedGenerating(over: Partial<NonNullable<ConversationData["pending_video"]>> = {}): void {
    this.data.messages.push(
      { id: "m-user", role: "user", content: "make a video", tool_calls: null, tool_call_id: null },
      { id: "m-asst", role: "assistant", content: "", tool_calls: [call("cv", "generate_video", { prompt: "a cat" })], tool_call_id: null },
    );
    this.data.status = "generating_media";
    this.data.pending_tool_call_ids = ["cv"];
    this.data.pending_video = { job_id: "job-1", tool_call_id: "cv", payer, request_id: "req-v", result_recorded: false, ...over };
  }
}

const user = (id: string, content: string): AgentMessage => ({ id, role: "user", content, tool_calls: null, tool_call_id: null });
const assistant = (id: string, content: string, calls: AgentToolCall[] | null = null): AgentMessage => ({ id, role: "assistant", content, tool_calls: calls, tool_call_id: null });
const tool = (id: string, toolCallId: string, content: string): AgentMessage => ({ id, role: "tool", content, tool_calls: null, tool_call_id: toolCallId });
const troupe = (error: unknown): TroupeError => {
  if (!(error instanceof TroupeError)) throw new Error(`not a TroupeError: ${String(error)}`);
  return error;
};
const summary = (data: ConversationData): ConversationSummary => ({
  id: data.id,
  model: data.model,
  routing_strategy: data.routing_strategy,
  status: data.status,
  message_count: data.messages.length,
  created_at: data.created_at,
  updated_at: data.updated_at,
});
const publicOf = (data: ConversationData) => ({
  id: data.id,
  model: data.model,
  routing_strategy: data.routing_strategy,
  status: data.status,
  system_prompt: data.system_prompt,
  tools: data.tools,
  messages: data.messages,
  created_at: data.created_at,
  updated_at: data.updated_at,
});

t.test("the actor's type names", async (t) => {
  const w = new World();
  t.equal(CONVERSATION_ACTOR, "ConversationActor");
  t.equal(w.actor.type, "ConversationActor");
  t.strictSame(w.actor.initialState(), { conversation: null });
});

t.test("create saves the conversation idle and lists it before it answers; a second create is 409", async (t) => {
  const w = new World();
  const { ctx, queued, commit } = w.turn();
  const input = w.actor.methods.create.input.parse({ owner, model: null, routing_strategy: "auto", system_prompt: "Be terse.", tools: [customTool] });
  const result = await w.actor.methods.create.run(ctx, input);
  t.strictSame(w.trail, ["directory.created"], "listed inside the turn, nothing queued");
  t.equal(queued.length, 0);
  const expected: ConversationData = {
    id: conversationId,
    owner,
    model: null,
    routing_strategy: "auto",
    system_prompt: "Be terse.",
    tools: [customTool],
    status: "idle",
    messages: [],
    pending_tool_call_ids: [],
    pending_video: null,
    created_at: at(0),
    updated_at: at(0),
  };
  t.strictSame((await commit()).conversation, expected);
  t.strictSame(result, publicOf(expected));
  t.strictSame(w.created, [{ owner, summary: summary(expected) }]);

  const again = await w.refused("create", { owner, model: "m", routing_strategy: "cost", system_prompt: "", tools: [] });
  t.equal(troupe(again.error).code, "conflict");
  t.equal(troupe(again.error).message, "conversation already exists");
  t.equal(w.created.length, 1, "not listed twice");
});

t.test("get answers the caller's own conversation and 404 to any other organization or environment", async (t) => {
  const fresh = new World();
  const none = await fresh.refused("get", caller);
  t.equal(troupe(none.error).code, "not_found", "no conversation at this id");
  t.equal(troupe(none.error).message, "conversation not found");

  const w = new World();
  await w.create();
  t.strictSame(await w.invoke("get", caller), publicOf(w.data), "without an environment (a session)");
  t.strictSame(await w.invoke("get", { organization_id: "org_1", environment_id: "env_1" }), publicOf(w.data), "the same environment");
  for (const other of [{ organization_id: "org_2" }, { organization_id: "org_2", environment_id: "env_1" }, { organization_id: "org_1", environment_id: "env_2" }]) {
    const refused = await w.refused("get", other);
    t.equal(troupe(refused.error).code, "not_found", JSON.stringify(other));
    t.equal(troupe(refused.error).message, "conversation not found");
  }
  const post = await w.refused("postMessage", { organization_id: "org_1", environment_id: "env_2", content: "hi" });
  t.equal(troupe(post.error).code, "not_found", "a turn from another environment");
  const outputs = await w.refused("submitToolOutputs", { organization_id: "org_2", outputs: [] });
  t.equal(troupe(outputs.error).code, "not_found", "tool outputs from another organization");
  t.equal(w.requests.length, 0);
});

t.test("erase drops the resume reminder and returns the state to its initial one; another organization's erase is 404", async (t) => {
  const w = new World();
  await w.create();
  const refused = await w.refused("erase", { organization_id: "org_2" });
  t.equal(troupe(refused.error).code, "not_found");
  t.strictSame(w.reminders, [], "nothing cleared for another organization");
  t.strictSame(await w.invoke("erase", caller), { id: conversationId, erased: true });
  t.strictSame(w.reminders, [{ op: "clear", name: "resume-after-video" }]);
  t.strictSame(w.committed, { conversation: null });
});

t.test("a message turn appends both messages, bills the payer's model call, and announces everything only after the commit", async (t) => {
  const w = new World();
  await w.create();
  w.clock.ms = start + 5000;
  w.script = [answer("Hello there")];
  const { ctx, queued, commit } = w.turn();
  const input = w.actor.methods.postMessage.input.parse({ ...caller, content: "hi", payer, request_id: "req-1" });
  const result = await w.actor.methods.postMessage.run(ctx, input);
  t.strictSame(w.trail, ["usage:agents:0"], "only the billing write before the commit");
  t.equal(queued.length, 3, "two messages and the summary queued");
  const state = await commit();
  const data = w.data;
  t.strictSame(data.messages, [user("id-0001", "hi"), assistant("id-0002", "Hello there")]);
  t.equal(data.status, "idle");
  t.equal(data.updated_at, at(6), "stamped when the model's answer was appended");
  t.equal(data.created_at, at(0));
  t.strictSame(result, publicOf(data));
  t.strictSame(w.trail, ["usage:agents:0", "commit", "event:message.appended", "event:message.appended", "summary:idle:2"], "no status change: idle to idle");
  t.strictSame(w.published, [
    { type: "message.appended", conversation_id: conversationId, message: user("id-0001", "hi") },
    { type: "message.appended", conversation_id: conversationId, message: assistant("id-0002", "Hello there") },
  ]);
  t.strictSame(w.summaries, [summary(data)]);
  t.strictSame(w.payers, [payer], "the model is called with the turn's payer");
  t.strictSame(w.requests[0]?.messages, [{ role: "user", content: "hi", tool_calls: null, tool_call_id: null }]);
  t.equal(w.requests[0]?.model, "gpt-test");
  t.strictSame(w.usage, [{ payer, requestId: "req-1", category: "agents", figures: answer("Hello there"), call: 0 }]);
  t.strictSame(state.handled_calls, [callFingerprint("req-1", { postMessage: "hi" })], "its fingerprint is committed with it");
});

t.test("a caller's tool call moves the conversation to requires_action, announced after the messages", async (t) => {
  const w = new World();
  await w.create();
  w.script = [answer("", [call("c1", "lookup_order", { id: 7 })])];
  await w.invoke("postMessage", { ...caller, content: "where is order 7?", payer, request_id: "req-1" });
  t.equal(w.data.status, "requires_action");
  t.strictSame(w.data.pending_tool_call_ids, ["c1"]);
  t.strictSame(w.trail, ["usage:agents:0", "commit", "event:message.appended", "event:message.appended", "event:status.changed", "summary:requires_action:2"]);
  t.strictSame(w.published[2], { type: "status.changed", conversation_id: conversationId, status: "requires_action" });
});

t.test("without a payer nothing is billed; without a request id no fingerprint is kept", async (t) => {
  const w = new World();
  await w.create();
  w.script = [answer("", [call("r1", "remember", { content: "likes tea" })]), answer("", [call("s1", "search_memory", { query: "tea" })]), answer("noted")];
  await w.invoke("postMessage", { ...caller, content: "I like tea" });
  t.strictSame(w.payers, [undefined, undefined, undefined]);
  t.strictSame(w.usage, [], "neither the model calls nor the embedding calls");
  t.equal(w.drafts.length, 1);
  t.equal(w.drafts[0]?.onUsage, undefined, "the memory tools are given nothing to bill");
  t.equal(w.committed.handled_calls, undefined);
  t.equal(w.data.messages.length, 6);

  // The same call again is another turn.
  w.script = [];
  w.requests.length = 0;
  await w.invoke("postMessage", { ...caller, content: "I like tea" });
  t.equal(w.requests.length, 1, "run again");
  t.equal(w.data.messages.length, 8);

  const unbilled = new World({}, false);
  await unbilled.create();
  unbilled.script = [answer("", [call("r1", "remember", { content: "x" })]), answer("ok")];
  await unbilled.invoke("postMessage", { ...caller, content: "hi", payer, request_id: "req-1" });
  t.equal(unbilled.data.messages.length, 4, "a payer and no usage recorder: the turn runs");
});

t.test("with a payer, model and embedding calls are billed in one numbering; memories are stored once, after the commit", async (t) => {
  const w = new World();
  await w.create();
  w.script = [answer("", [call("r1", "remember", { content: "likes tea" })]), answer("", [call("s1", "search_memory", { query: "tea?" })]), answer("noted")];
  const { ctx, commit } = w.turn();
  await w.actor.methods.postMessage.run(ctx, w.actor.methods.postMessage.input.parse({ ...caller, content: "I like tea", payer, request_id: "req-9" }));
  t.strictSame(w.trail, ["usage:agents:0", "usage:embeddings:1", "usage:agents:2", "usage:embeddings:3", "usage:agents:4"]);
  t.strictSame(
    w.usage.map((u) => [u.requestId, u.category, u.call, u.figures.input_tokens]),
    [
      ["req-9", "agents", 0, 1],
      ["req-9", "embeddings", 1, "likes tea".length],
      ["req-9", "agents", 2, 1],
      ["req-9", "embeddings", 3, "tea?".length],
      ["req-9", "agents", 4, 1],
    ],
  );
  t.strictSame(w.usage.map((u) => u.payer), Array.from({ length: 5 }, () => payer));
  t.strictSame(w.stored, [], "nothing stored before the commit");
  await commit();
  t.equal(w.stored.length, 1);
  t.equal(w.stored[0]?.[0]?.content, "likes tea");
  t.equal(w.trail.filter((e) => e.startsWith("store:")).length, 1, "stored once");
  t.ok(w.trail.indexOf("store:likes tea") > w.trail.indexOf("commit"));
  t.ok(w.trail.indexOf("store:likes tea") < w.trail.indexOf("summary:idle:6"), "in the order the turn queued it");
});

t.test("a turn answers only once its embedding usage writes have settled", async (t) => {
  const w = new World();
  await w.create();
  const held = gate();
  w.holdUsage = { category: "embeddings", until: held.promise };
  w.script = [answer("", [call("r1", "remember", { content: "likes tea" })]), answer("noted")];
  let answered = false;
  const { ctx } = w.turn();
  const running = w.actor.methods.postMessage
    .run(ctx, w.actor.methods.postMessage.input.parse({ ...caller, content: "hi", payer, request_id: "req-1" }))
    .then(() => void (answered = true));
  for (let i = 0; i < 5; i++) await settle();
  t.equal(w.requests.length, 2, "the model went on");
  t.equal(answered, false, "the turn waits for the write");
  held.open();
  await running;
  t.equal(answered, true);
});

t.test("a turn waits for a model call's usage write before going on", async (t) => {
  const w = new World();
  await w.create();
  const held = gate();
  w.holdUsage = { category: "agents", until: held.promise };
  w.script = [answer("", [call("x", "no_such_tool")]), answer("done")];
  const { ctx } = w.turn();
  const running = w.actor.methods.postMessage.run(ctx, w.actor.methods.postMessage.input.parse({ ...caller, content: "hi", payer, request_id: "req-1" }));
  for (let i = 0; i < 5; i++) await settle();
  t.equal(w.requests.length, 1, "the next model call waits for the first one's record");
  held.open();
  await running;
  t.equal(w.requests.length, 2);
});

t.test("a failing turn announces only turn.failed, at once, with its code and message", async (t) => {
  const cases: Array<{ thrown: Error | string; code: string; message: string }> = [
    { thrown: new TroupeError("provider_error", "the provider is down"), code: "provider_error", message: "the provider is down" },
    { thrown: new Error("boom"), code: "internal_error", message: "boom" },
    { thrown: "a string", code: "internal_error", message: "turn failed" },
  ];
  for (const c of cases) {
    const w = new World();
    await w.create();
    w.script = [c.thrown];
    const refused = await w.refused("postMessage", { ...caller, content: "hi", payer, request_id: "req-1" });
    t.equal(refused.error, c.thrown, "the turn rejects with what the model threw");
    t.strictSame(w.published, [{ type: "turn.failed", conversation_id: conversationId, error: { code: c.code, message: c.message } }]);
    t.strictSame(w.trail, ["event:turn.failed"], "nothing else leaves (the queued announcements are dropped with the turn)");
    t.equal(w.data.messages.length, 0, "nothing committed");
  }
});

t.test("a failing turn's billed calls are recorded, and written before it answers", async (t) => {
  const w = new World();
  await w.create();
  const held = gate();
  w.holdUsage = { category: "embeddings", until: held.promise };
  w.script = [answer("", [call("r1", "remember", { content: "likes tea" })]), new TroupeError("provider_timeout", "too slow")];
  let settled = false;
  const { ctx } = w.turn();
  const running = w.actor.methods.postMessage
    .run(ctx, w.actor.methods.postMessage.input.parse({ ...caller, content: "hi", payer, request_id: "req-1" }))
    .catch((error: unknown) => {
      settled = true;
      return error;
    });
  for (let i = 0; i < 5; i++) await settle();
  t.equal(settled, false, "the failure waits for the embedding write");
  t.strictSame(w.usage.map((u) => `${u.category}:${u.call}`), ["agents:0", "embeddings:1"]);
  held.open();
  t.equal(troupe(await running).code, "provider_timeout");
  t.strictSame(w.stored, [], "the memory is not stored");
});

t.test("messages are accepted only when idle", async (t) => {
  const w = new World();
  await w.create();
  w.script = [answer("", [call("c1", "lookup_order"), call("c2", "lookup_order")])];
  await w.invoke("postMessage", { ...caller, content: "go" });
  w.trail.length = 0;
  const refused = await w.refused("postMessage", { ...caller, content: "again", request_id: "req-2" });
  const error = troupe(refused.error);
  t.equal(error.code, "conflict");
  t.equal(error.message, "the conversation is requires_action; messages are accepted only when it is idle");
  t.strictSame(error.details, { status: "requires_action", pending_tool_call_ids: ["c1", "c2"] });
  t.equal(refused.queued, 0);
  t.strictSame(w.trail, []);
  t.equal(w.requests.length, 1);
});

t.test("a call delivered twice answers the committed conversation without running the turn again", async (t) => {
  const w = new World();
  await w.create();
  w.script = [answer("", [call("c1", "lookup_order")])];
  const first = await w.invoke("postMessage", { ...caller, content: "go", payer, request_id: "req-1" });
  const committed = structuredClone(w.committed);
  w.trail.length = 0;
  const { ctx, queued } = w.turn();
  const again = await w.actor.methods.postMessage.run(ctx, w.actor.methods.postMessage.input.parse({ ...caller, content: "go", payer, request_id: "req-1" }));
  t.strictSame(again, first, "answered as committed (requires_action, not a conflict)");
  t.strictSame(ctx.state, committed, "nothing changed");
  t.equal(queued.length, 0);
  t.equal(w.requests.length, 1);
  t.strictSame(w.trail, []);

  const other = await w.refused("postMessage", { ...caller, content: "go", payer, request_id: "req-2" });
  t.equal(troupe(other.error).code, "conflict", "another request id is another call");
  const otherContent = await w.refused("postMessage", { ...caller, content: "went", payer, request_id: "req-1" });
  t.equal(troupe(otherContent.error).code, "conflict", "another content under the same request id is another call");

  const outputs = [{ tool_call_id: "c1", output: "shipped" }];
  const done = await w.invoke("submitToolOutputs", { ...caller, outputs, payer, request_id: "req-3" });
  t.equal(done.status, "idle");
  const before = structuredClone(w.committed);
  t.strictSame(await w.invoke("submitToolOutputs", { ...caller, outputs, payer, request_id: "req-3" }), done, "tool outputs delivered twice: the same answer");
  t.strictSame(w.committed, before);
  t.equal(w.requests.length, 2);
  t.strictSame(w.committed.handled_calls, [
    callFingerprint("req-1", { postMessage: "go" }),
    callFingerprint("req-3", { submitToolOutputs: outputs }),
  ]);
});

t.test("the last 32 fingerprints are kept", async (t) => {
  const w = new World();
  await w.create();
  const older = Array.from({ length: 32 }, (_, i) => `fp-${i}`);
  w.committed.handled_calls = [...older];
  await w.invoke("postMessage", { ...caller, content: "hi", request_id: "req-new" });
  t.strictSame(w.committed.handled_calls, [...older.slice(1), callFingerprint("req-new", { postMessage: "hi" })]);
});

t.test("a call's fingerprint: none without a request id, else 22 characters of the SHA-256 of the id and the input", async (t) => {
  t.equal(callFingerprint("", { postMessage: "hi" }), undefined);
  const expected = createHash("sha256").update("req-1").update("\u0000").update(JSON.stringify({ postMessage: "hi" })).digest("base64url").slice(0, 22);
  t.equal(callFingerprint("req-1", { postMessage: "hi" }), expected);
  t.equal(expected.length, 22);
  t.not(callFingerprint("req-1", { postMessage: "ho" }), expected);
});

t.test("a message past the cap is refused with its exact room; one that just fits is taken", async (t) => {
  const content = "x".repeat(200);
  const probe = new World();
  await probe.create();
  probe.data.messages.push(user("m-0", "earlier"));
  const size = conversationBytes(probe.data);
  const adding = appendedBytes(user(probe.nextId(), content));
  const fitting = size + adding + closingReserveBytes;

  const full = new World({ conversationMaxBytes: fitting - 1 });
  await full.create();
  full.data.messages.push(user("m-0", "earlier"));
  const refused = await full.refused("postMessage", { ...caller, content });
  const error = troupe(refused.error);
  t.equal(error.code, "conflict");
  t.equal(
    error.message,
    `the conversation is full: it holds ${size} bytes, this would take it past its cap of ${fitting - 1} bytes (less ${closingReserveBytes} kept for a turn's last message); start a new conversation`,
  );
  t.strictSame(error.details, [
    { path: "body.content", message: `the conversation has room for ${adding - 1} more bytes`, conversation_bytes: size, limit_bytes: fitting - 1 },
  ]);
  t.equal(refused.queued, 0, "nothing announced");
  t.equal(full.requests.length, 0);

  const room = new World({ conversationMaxBytes: fitting });
  await room.create();
  room.data.messages.push(user("m-0", "earlier"));
  await room.invoke("postMessage", { ...caller, content });
  t.strictSame(room.data.messages[1], user("id-0001", content), "taken at exactly the cap less the reserve");
  t.equal(room.requests.length, 1);
  t.equal(room.data.messages[2]?.content, capNotice(fitting, `the model's answer (${appendedBytes(assistant("id-0002", "done"))} bytes)`), "the turn itself stops at the cap");
});

t.test("the deps' step bound and tool result bound reach the turn", async (t) => {
  const w = new World({ maxSteps: 2, toolResultMaxBytes: 20 });
  await w.create();
  w.script = [answer("", [call("x1", "no_such_tool")]), answer("", [call("x2", "no_such_tool")])];
  await w.invoke("postMessage", { ...caller, content: "hi" });
  t.equal(w.requests.length, 2);
  t.equal(w.data.messages.at(-1)?.content, "I stopped after 2 model steps in this turn without reaching a final answer. Send another message to continue.");
  const unbounded = JSON.stringify({ error: "no tool named no_such_tool is available" });
  t.equal(w.data.messages[2]?.content, boundToolResult(unbounded, 20));
  t.not(boundToolResult(unbounded, 20), unbounded);

  const plain = new World();
  await plain.create();
  plain.script = Array.from({ length: 8 }, (_, i) => answer("", [call(`x${i}`, "no_such_tool")]));
  await plain.invoke("postMessage", { ...caller, content: "hi" });
  t.equal(plain.requests.length, 8, "no bound given: the turn's own 8");
  t.equal(plain.data.messages[2]?.content, unbounded);
});

t.test("tool outputs are accepted only in requires_action", async (t) => {
  const w = new World();
  await w.create();
  const refused = await w.refused("submitToolOutputs", { ...caller, outputs: [{ tool_call_id: "c1", output: "x" }] });
  const error = troupe(refused.error);
  t.equal(error.code, "conflict");
  t.equal(error.message, "the conversation is idle; tool outputs are accepted only in requires_action");
  t.equal(error.details, undefined);
});

t.test("each pending call must be answered exactly once: a 400 names every bad output", async (t) => {
  const w = new World();
  await w.create();
  w.script = [answer("", [call("c1", "lookup_order"), call("c2", "lookup_order"), call("c3", "lookup_order")])];
  await w.invoke("postMessage", { ...caller, content: "go" });
  const refused = await w.refused("submitToolOutputs", {
    ...caller,
    outputs: [
      { tool_call_id: "c1", output: "a" },
      { tool_call_id: "zz", output: "b" },
      { tool_call_id: "c1", output: "c" },
    ],
  });
  const error = troupe(refused.error);
  t.equal(error.code, "invalid_request");
  const issues = [
    { path: "body.outputs.1.tool_call_id", message: "zz is not a pending tool call" },
    { path: "body.outputs.2.tool_call_id", message: "c1 is answered twice" },
    { path: "body.outputs", message: "missing outputs for pending tool calls: c2, c3" },
  ];
  t.strictSame(error.details, issues);
  t.equal(error.message, issues.map((i) => `${i.path}: ${i.message}`).join("; "));
  t.equal(refused.queued, 0);

  const twiceUnknown = await w.refused("submitToolOutputs", {
    ...caller,
    outputs: [
      { tool_call_id: "zz", output: "b" },
      { tool_call_id: "zz", output: "b" },
      { tool_call_id: "c1", output: "" },
      { tool_call_id: "c2", output: "" },
      { tool_call_id: "c3", output: "" },
    ],
  });
  t.strictSame(troupe(twiceUnknown.error).details, [
    { path: "body.outputs.0.tool_call_id", message: "zz is not a pending tool call" },
    { path: "body.outputs.1.tool_call_id", message: "zz is not a pending tool call" },
  ], "an unknown id is reported as unknown each time, never as answered twice");
  t.equal(w.data.status, "requires_action");
});

t.test("tool outputs answer the pending calls in their order, then the model's turn goes on", async (t) => {
  const w = new World();
  await w.create();
  w.script = [answer("", [call("c1", "lookup_order"), call("c2", "lookup_order")]), answer("both found")];
  await w.invoke("postMessage", { ...caller, content: "go" });
  w.trail.length = 0;
  w.published.length = 0;
  w.clock.ms = start + 30_000;
  const { ctx, queued, commit } = w.turn();
  const result = await w.actor.methods.submitToolOutputs.run(
    ctx,
    w.actor.methods.submitToolOutputs.input.parse({
      ...caller,
      outputs: [
        { tool_call_id: "c2", output: "second" },
        { tool_call_id: "c1", output: "first" },
      ],
      payer,
      request_id: "req-2",
    }),
  );
  t.strictSame(w.trail, ["usage:agents:0"]);
  t.equal(queued.length, 5);
  await commit();
  const data = w.data;
  t.strictSame(data.messages.slice(2), [tool("id-0003", "c1", "first"), tool("id-0004", "c2", "second"), assistant("id-0005", "both found")]);
  t.strictSame(data.pending_tool_call_ids, []);
  t.equal(data.status, "idle");
  t.equal(data.updated_at, at(31));
  t.strictSame(result, publicOf(data));
  t.strictSame(w.requests[1]?.messages.slice(2), [
    { role: "tool", content: "first", tool_calls: null, tool_call_id: "c1" },
    { role: "tool", content: "second", tool_calls: null, tool_call_id: "c2" },
  ], "the model reads the answers");
  t.strictSame(w.trail.slice(1), ["commit", "event:message.appended", "event:message.appended", "event:message.appended", "event:status.changed", "summary:idle:5"]);
  t.strictSame(w.published.slice(0, 2).map((e) => (e.type === "message.appended" ? e.message.content : e.type)), ["first", "second"]);
  t.strictSame(w.published[3], { type: "status.changed", conversation_id: conversationId, status: "idle" });
  t.strictSame(w.usage.map((u) => [u.requestId, u.call]), [["req-2", 0]]);
});

t.test("tool outputs past the cap are refused before anything is appended", async (t) => {
  const probe = new World();
  await probe.create();
  probe.script = [answer("", [call("c1", "lookup_order")])];
  await probe.invoke("postMessage", { ...caller, content: "go" });
  const output = "y".repeat(300);
  const size = conversationBytes(probe.data);
  const answers = [tool(probe.nextId(), "c1", output)];
  const adding = Buffer.byteLength(JSON.stringify(answers));
  const cap = size + adding + closingReserveBytes - 1;

  const w = new World({ conversationMaxBytes: cap });
  await w.create();
  w.script = [answer("", [call("c1", "lookup_order")])];
  await w.invoke("postMessage", { ...caller, content: "go" });
  t.equal(conversationBytes(w.data), size);
  const refused = await w.refused("submitToolOutputs", { ...caller, outputs: [{ tool_call_id: "c1", output }] });
  const error = troupe(refused.error);
  t.equal(error.code, "conflict");
  t.strictSame(error.details, [{ path: "body.outputs", message: `the conversation has room for ${adding - 1} more bytes`, conversation_bytes: size, limit_bytes: cap }]);
  t.equal(refused.queued, 0, "nothing announced");

  const fits = new World({ conversationMaxBytes: cap + 1 });
  await fits.create();
  fits.script = [answer("", [call("c1", "lookup_order")])];
  await fits.invoke("postMessage", { ...caller, content: "go" });
  await fits.invoke("submitToolOutputs", { ...caller, outputs: [{ tool_call_id: "c1", output }] });
  t.strictSame(fits.data.messages[2], tool("id-0003", "c1", output), "one byte more and it is taken");
});

t.test("generate_video starts one JobActor with the payer and a callback, and parks the conversation in generating_media", async (t) => {
  const w = new World();
  await w.create();
  w.script = [answer("", [call("cv", "generate_video", { prompt: "a cat", narration_text: "meow" })])];
  await w.invoke("postMessage", { ...caller, content: "make a cat video", payer, request_id: "req-v" });
  t.strictSame(w.jobCalls, [
    {
      type: "JobActor",
      id: "id-0003",
      method: "create",
      input: {
        owner,
        payer,
        prompt: "a cat",
        duration_seconds: 5,
        narration_text: "meow",
        scenes: null,
        model: null,
        routing_strategy: "auto",
        image: null,
        callback: { conversation_id: conversationId, tool_call_id: "cv" },
      },
    },
  ]);
  const data = w.data;
  t.equal(data.status, "generating_media");
  t.strictSame(data.pending_tool_call_ids, ["cv"]);
  t.strictSame(data.pending_video, { job_id: "id-0003", tool_call_id: "cv", payer, request_id: "req-v", result_recorded: false }, "who pays for the turn it resumes");
  t.equal(data.messages.length, 2, "the call is answered by the job's result");
  t.ok(w.trail.indexOf("call:JobActor.create") < w.trail.indexOf("commit"), "the job is created inside the turn");
  t.strictSame(w.published.at(-1), { type: "status.changed", conversation_id: conversationId, status: "generating_media" });
  t.strictSame(w.summaries.at(-1)?.status, "generating_media");
});

t.test("generate_video tells the model why no video started", async (t) => {
  const videoAnswer = async (args: Record<string, unknown>, withPayer: boolean, failure?: unknown) => {
    const w = new World();
    await w.create();
    w.jobFailure = failure;
    w.script = [answer("", [call("cv", "generate_video", args)]), answer("sorry")];
    await w.invoke("postMessage", { ...caller, content: "video please", ...(withPayer ? { payer } : {}) });
    t.equal(w.data.status, "idle");
    t.equal(w.data.pending_video, null);
    return { content: JSON.parse(w.data.messages[2]?.content ?? "null") as unknown, jobCalls: w.jobCalls.length };
  };
  t.strictSame(await videoAnswer({ prompt: "a cat" }, false), { content: { error: "video generation needs a calling API key" }, jobCalls: 0 });
  const bad = generateVideoArgs.safeParse({ prompt: "" });
  t.notOk(bad.success);
  t.strictSame(await videoAnswer({ prompt: "" }, true), { content: { error: `invalid arguments: ${bad.success ? "" : z.prettifyError(bad.error)}` }, jobCalls: 0 });
  for (const error of [
    new TroupeError("conflict", "too many videos at once"),
    new TroupeError("no_provider_available", "no video model is available"),
    new TroupeError("capability_unavailable", "ffmpeg is not installed"),
  ]) {
    t.strictSame(await videoAnswer({ prompt: "a cat" }, true, error), { content: { error: error.message }, jobCalls: 1 }, error.code);
  }
});

t.test("generate_video fails the turn on any other error starting the job", async (t) => {
  const failures: unknown[] = [
    new TroupeError("service_unavailable", "the job store is down"),
    new TroupeError("internal_error", "job actor broke"),
    Object.assign(new Error("not a TroupeError"), { status: 400, code: "conflict" }),
  ];
  for (const failure of failures) {
    const w = new World();
    await w.create();
    w.jobFailure = failure;
    w.script = [answer("", [call("cv", "generate_video", { prompt: "a cat" })]), answer("sorry")];
    const refused = await w.refused("postMessage", { ...caller, content: "video please", payer });
    t.equal(refused.error, failure);
    t.equal(w.published.at(-1)?.type, "turn.failed");
  }
});

t.test("videoFinished ignores a call for no conversation, another state or another job", async (t) => {
  const fresh = new World();
  t.equal(await fresh.invoke("videoFinished", { job_id: "job-1", tool_call_id: "cv", result_url: "https://v/1.mp4", error: null }), null);

  const idle = new World();
  await idle.create();
  idle.data.pending_video = { job_id: "job-1", tool_call_id: "cv", payer, request_id: "r", result_recorded: false };
  t.equal(await idle.invoke("videoFinished", { job_id: "job-1", tool_call_id: "cv", result_url: "https://v/1.mp4", error: null }), null, "idle");

  const w = new World();
  await w.create();
  w.seedGenerating();
  const before = structuredClone(w.committed);
  t.equal(await w.invoke("videoFinished", { job_id: "job-2", tool_call_id: "cv", result_url: "https://v/2.mp4", error: null }), null, "another job");
  w.data.pending_video = null;
  t.equal(await w.invoke("videoFinished", { job_id: "job-1", tool_call_id: "cv", result_url: "https://v/1.mp4", error: null }), null, "no pending video");
  w.committed = before;
  t.strictSame(w.reminders, []);
  t.strictSame(w.trail, ["commit", "commit"]);
});

t.test("videoFinished records the job's result once, announces it after the commit, and sets the resume reminder", async (t) => {
  const w = new World();
  await w.create();
  w.seedGenerating();
  w.clock.ms = start + 60_000;
  const { ctx, queued, commit } = w.turn();
  const result = await w.actor.methods.videoFinished.run(
    ctx,
    w.actor.methods.videoFinished.input.parse({ job_id: "job-1", tool_call_id: "cv", result_url: "https://v/1.mp4", error: null }),
  );
  t.strictSame(w.trail, ["setReminder:resume-after-video"], "the reminder is set inside the turn, the message waits");
  t.equal(queued.length, 1);
  t.strictSame(w.reminders, [{ op: "set", name: "resume-after-video", dueMs: 0, periodMs: 60_000, method: "resumeAfterVideo", input: { job_id: "job-1" } }]);
  await commit();
  const data = w.data;
  const message = tool("id-0001", "cv", JSON.stringify({ job_id: "job-1", status: "completed", result_url: "https://v/1.mp4" }));
  t.strictSame(data.messages.at(-1), message);
  t.equal(data.status, "generating_media", "until the model has answered");
  t.strictSame(data.pending_video, { job_id: "job-1", tool_call_id: "cv", payer, request_id: "req-v", result_recorded: true });
  t.strictSame(data.pending_tool_call_ids, []);
  t.equal(data.updated_at, at(60));
  t.strictSame(result, publicOf(data));
  t.strictSame(w.published, [{ type: "message.appended", conversation_id: conversationId, message }]);
  t.equal(w.requests.length, 0, "the model answers in a turn of its own");

  w.trail.length = 0;
  t.strictSame(await w.invoke("videoFinished", { job_id: "job-1", tool_call_id: "cv", result_url: "https://v/other.mp4", error: null }), publicOf(data), "called back again");
  t.equal(w.data.messages.length, 3, "recorded once");
  t.strictSame(w.trail, ["commit"], "no second reminder or message");
});

t.test("a failed job's error answers the call", async (t) => {
  const w = new World();
  await w.create();
  w.seedGenerating();
  await w.invoke("videoFinished", { job_id: "job-1", tool_call_id: "cv", result_url: null, error: { code: "provider_error", message: "the clip failed" } });
  t.equal(w.data.messages.at(-1)?.content, JSON.stringify({ job_id: "job-1", status: "failed", error: { code: "provider_error", message: "the clip failed" } }));
});

t.test("a job's result too long for the conversation's room is answered as not added", async (t) => {
  const url = `https://v/${"u".repeat(400)}.mp4`;
  const probe = new World();
  await probe.create();
  probe.seedGenerating();
  const size = conversationBytes(probe.data);
  const adding = appendedBytes(tool("id-0001", "cv", JSON.stringify({ job_id: "job-1", status: "completed", result_url: url })));
  const cap = size + adding + closingReserveBytes;
  for (const [max, content] of [
    [cap, JSON.stringify({ job_id: "job-1", status: "completed", result_url: url })],
    [cap - 1, notAddedAnswer(cap - 1)],
  ] as const) {
    const w = new World({ conversationMaxBytes: max });
    await w.create();
    w.seedGenerating();
    await w.invoke("videoFinished", { job_id: "job-1", tool_call_id: "cv", result_url: url, error: null });
    t.equal(w.data.messages.at(-1)?.content, content, `cap ${max}`);
    t.equal(w.data.pending_video?.result_recorded, true);
  }
});

t.test("resumeAfterVideo clears the reminder after the commit when there is nothing to answer", async (t) => {
  const fresh = new World();
  const { ctx, commit } = fresh.turn();
  await fresh.actor.methods.resumeAfterVideo.run(ctx, { job_id: "job-1" });
  t.strictSame(fresh.reminders, [], "not before the commit");
  await commit();
  t.strictSame(fresh.reminders, [{ op: "clear", name: "resume-after-video" }], "no conversation");

  const idle = new World();
  await idle.create();
  idle.data.pending_video = { job_id: "job-1", tool_call_id: "cv", payer, request_id: "r", result_recorded: true };
  await idle.invoke("resumeAfterVideo", { job_id: "job-1" });
  t.strictSame(idle.reminders, [{ op: "clear", name: "resume-after-video" }], "answered already: idle");
  t.equal(idle.requests.length, 0);

  const noPending = new World();
  await noPending.create();
  noPending.seedGenerating();
  noPending.data.pending_video = null;
  await noPending.invoke("resumeAfterVideo", { job_id: "job-1" });
  t.strictSame(noPending.reminders, [{ op: "clear", name: "resume-after-video" }], "no pending video");
  t.equal(noPending.requests.length, 0);
});

t.test("resumeAfterVideo waits, reminder kept, until the job's result is recorded", async (t) => {
  for (const [recorded, jobId] of [
    [false, "job-1"],
    [true, "job-2"],
  ] as const) {
    const w = new World();
    await w.create();
    w.seedGenerating({ result_recorded: recorded });
    const before = structuredClone(w.committed);
    await w.invoke("resumeAfterVideo", { job_id: jobId });
    t.strictSame(w.committed, before, `recorded ${recorded}, job ${jobId}: unchanged`);
    t.strictSame(w.reminders, []);
    t.equal(w.requests.length, 0);
  }
});

t.test("resumeAfterVideo runs the model's answer under the video's payer and its own request id, then clears the reminder", async (t) => {
  const w = new World();
  await w.create();
  w.seedGenerating({ result_recorded: true });
  w.data.messages.push(tool("m-result", "cv", JSON.stringify({ job_id: "job-1", status: "completed", result_url: "https://v/1.mp4" })));
  w.data.pending_tool_call_ids = [];
  w.script = [answer("Here is your video")];
  const { ctx, commit } = w.turn();
  await w.actor.methods.resumeAfterVideo.run(ctx, { job_id: "job-1" });
  t.strictSame(w.trail, ["usage:agents:0"]);
  await commit();
  t.strictSame(w.payers, [payer]);
  t.strictSame(w.usage.map((u) => [u.requestId, u.category, u.call]), [["req-v:after-video", "agents", 0]]);
  const data = w.data;
  t.equal(data.status, "idle");
  t.equal(data.pending_video, null);
  t.strictSame(data.messages.at(-1), assistant("id-0001", "Here is your video"));
  t.strictSame(w.trail.slice(1), ["commit", "event:message.appended", "event:status.changed", "summary:idle:4", "clearReminder:resume-after-video"]);
  t.strictSame(w.published[1], { type: "status.changed", conversation_id: conversationId, status: "idle" });
  t.strictSame(w.summaries, [summary(data)]);

  const unpaid = new World();
  await unpaid.create();
  unpaid.seedGenerating({ result_recorded: true, payer: null });
  await unpaid.invoke("resumeAfterVideo", { job_id: "job-1" });
  t.strictSame(unpaid.payers, [undefined], "no payer recorded: none given");
  t.strictSame(unpaid.usage, []);
});

t.test("a video started while resuming keeps the conversation in generating_media under the resumed request id", async (t) => {
  const w = new World();
  await w.create();
  w.seedGenerating({ result_recorded: true });
  w.data.pending_tool_call_ids = [];
  w.script = [answer("", [call("cv2", "generate_video", { prompt: "another cat" })])];
  await w.invoke("resumeAfterVideo", { job_id: "job-1" });
  t.equal(w.data.status, "generating_media");
  t.strictSame(w.data.pending_video, { job_id: "id-0002", tool_call_id: "cv2", payer, request_id: "req-v:after-video", result_recorded: false });
  t.notOk(w.published.some((e) => e.type === "status.changed"), "generating_media to generating_media is no change");
  t.strictSame(w.trail.slice(-2), ["summary:generating_media:3", "clearReminder:resume-after-video"]);
});

t.test("a model failing to answer the video leaves the result and the conversation idle, and clears the reminder", async (t) => {
  const w = new World();
  await w.create();
  w.seedGenerating({ result_recorded: true });
  w.data.messages.push(tool("m-result", "cv", "{}"));
  w.data.pending_tool_call_ids = [];
  const failure = new TroupeError("provider_error", "no answer");
  w.script = [failure];
  const { ctx, commit } = w.turn();
  await w.actor.methods.resumeAfterVideo.run(ctx, { job_id: "job-1" });
  t.strictSame(w.published, [{ type: "turn.failed", conversation_id: conversationId, error: { code: "provider_error", message: "no answer" } }], "announced at once");
  await commit();
  const data = w.data;
  t.equal(data.status, "idle");
  t.equal(data.pending_video, null);
  t.equal(data.messages.length, 3, "the result stays in the history");
  t.strictSame(w.trail, ["event:turn.failed", "commit", "event:status.changed", "summary:idle:3", "clearReminder:resume-after-video"]);
  t.strictSame(w.published[1], { type: "status.changed", conversation_id: conversationId, status: "idle" });
  t.strictSame(w.summaries, [summary(data)]);
  t.strictSame(w.log.lines, [{ level: "warn", msg: "conversation turn after a video failed", fields: { conversation_id: conversationId, error: failure } }]);
});
