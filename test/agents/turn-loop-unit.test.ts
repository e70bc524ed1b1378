// The agent loop of one turn (actors/conversation/turn-loop.ts), run in
// process with a scripted model, a recording memory double and an injected
// clock and id source:
// - the model sees the history (after the system prompt, when there is one)
//   and every built-in tool beside the caller's, with the turn's signal;
// - an answer without tool calls ends the turn idle; a caller's tool parks it
//   in requires_action; an undeclared tool is answered with an error and the
//   model is asked again; a turn stops after exactly 8 model steps (or its
//   own bound), idle, saying so;
// - the memory tools run inside the turn with the conversation's ids, and
//   each memory `remember` accepts is handed to the caller once;
// - generate_video parks the turn in generating_media for one job per step,
//   answering the step's other calls;
// - at the conversation's cap the turn stops exactly where the next message
//   would pass it, answering every call of the step.
import t from "tap";
import { agentMessage, conversationData, testConversationId } from "../support/conversation-data.ts";
import { memoryRecordId } from "../../actors/conversation/builtin-tools.ts";
import { appendedBytes, conversationBytes } from "../../actors/conversation/conversation-size.ts";
import { MAX_MODEL_STEPS_PER_TURN, runTurn, type TurnDeps } from "../../actors/conversation/turn-loop.ts";
import { capNotice, closingReserveBytes, ConversationRoom, notAddedAnswer } from "../../actors/conversation/turn-room.ts";
import type { AgentMessage, AgentToolCall, ConversationData } from "../../actors/conversation/types.ts";
import type { ChatRequest } from "../../providers/chat-request.ts";
import type { ChatResult } from "../../providers/types.ts";
import type { OnEmbedded, OrgIndex, RecordDraft } from "../../vectors/org-index.ts";
import type { VectorRecord } from "../../vectors/vector-index.ts";
import { answer } from "../support/double-chat-answer.ts";

const conversationId = testConversationId;
const customTool = { name: "lookup_order", description: "Looks an order up", parameters: { type: "object", properties: {} } };

function conversation(over: Partial<ConversationData> = {}): ConversationData {
  return conversationData({
    model: "gpt-test",
    routing_strategy: "cost",
    system_prompt: "",
    tools: [customTool],
    // A turn runs from wherever the actor left it: these must be replaced by what the turn ends in.
    status: "requires_action",
    messages: [agentMessage("go", { id: "msg-user" })],
    pending_tool_call_ids: ["stale"],
    created_at: "2026-12-03T00:00:00.000Z",
    updated_at: "2026-12-03T00:00:00.000Z",
    ...over,
  });
}

const call = (id: string, name: string, args: Record<string, unknown> = {}): AgentToolCall => ({ id, name, arguments: args });

/** A model that answers from a script, one entry per step; records what it was asked. */
class Model {
  readonly requests: ChatRequest[] = [];
  readonly signals: Array<AbortSignal | undefined> = [];
  private readonly script: (step: number, request: ChatRequest) => ChatResult;
  constructor(script: ChatResult[] | ((step: number, request: ChatRequest) => ChatResult)) {
    this.script = Array.isArray(script) ? (step) => script[step] ?? answer("done") : script;
  }
  chat = async (request: ChatRequest, signal?: AbortSignal): Promise<ChatResult> => {
    this.requests.push(structuredClone(request));
    this.signals.push(signal);
    return this.script(this.requests.length - 1, request);
  };
}

interface SearchCall {
  organizationId: string;
  query: string;
  topK: number;
  signal: AbortSignal | undefined;
  onUsage: OnEmbedded | undefined;
  unstored: readonly VectorRecord[];
}

/** The two OrgIndex methods the memory tools use, recording their arguments. */
class Memory {
  readonly searches: SearchCall[] = [];
  readonly drafts: RecordDraft[] = [];
  results: Array<{ id: string; content: string; metadata: Record<string, unknown>; distance: number }> = [];
  search = async (
    organizationId: string,
    query: string,
    topK: number,
    _filter: unknown,
    signal: AbortSignal | undefined,
    onUsage: OnEmbedded | undefined,
    unstored: readonly VectorRecord[] = [],
  ) => {
    this.searches.push({ organizationId, query, topK, signal, onUsage, unstored: [...unstored] });
    return this.results.map((r) => ({ ...r, organization_id: organizationId, model: "m", created_at: "" }));
  };
  prepare = async (draft: RecordDraft): Promise<VectorRecord> => {
    this.drafts.push(draft);
    return { id: draft.id, organization_id: draft.organizationId, content: draft.content, metadata: draft.metadata, model: "m", vector: [1], created_at: "" };
  };
  asIndex(): OrgIndex {
    return this as unknown as OrgIndex;
  }
}

/** Ids of one width, so a message's size is known before its id is made; and a clock that ticks once per read. */
function harness(model: Model, extra: Partial<TurnDeps> = {}) {
  let ids = 0;
  let ticks = 0;
  const memory = new Memory();
  const appended: AgentMessage[] = [];
  const remembered: VectorRecord[] = [];
  const deps: TurnDeps = {
    chat: model.chat,
    memory: memory.asIndex(),
    newId: () => `msg-${String(++ids).padStart(4, "0")}`,
    now: () => `2026-12-03T00:00:${String(++ticks).padStart(2, "0")}.000Z`,
    onMessage: (m) => void appended.push(structuredClone(m)),
    onRemembered: (r) => void remembered.push(r),
    ...extra,
  };
  return { deps, memory, appended, remembered, ticks: () => ticks };
}

const idSized = "msg-0000";
const errorOf = (m: AgentMessage | undefined): unknown => JSON.parse(m?.content ?? "null");
const stepLimitText = (n: number) => `I stopped after ${n} model steps in this turn without reaching a final answer. Send another message to continue.`;

t.test("the model is asked with the conversation's model, routing, history and every tool, with the turn's signal", async (t) => {
  const model = new Model([answer("looking", [call("c1", "no_such_tool")]), answer("done")]);
  const signal = new AbortController().signal;
  const { deps } = harness(model, { signal });
  const data = conversation({ system_prompt: "Be terse." });
  await runTurn(data, deps);
  t.equal(model.requests.length, 2);
  const [first, second] = model.requests;
  t.equal(first?.model, "gpt-test");
  t.equal(first?.routing_strategy, "cost");
  t.same(
    first?.tools?.map((tool) => tool.name),
    ["search_memory", "remember", "generate_video", "lookup_order"],
    "the built-in tools, then the caller's",
  );
  t.strictSame(first?.messages, [
    { role: "system", content: "Be terse." },
    { role: "user", content: "go", tool_calls: null, tool_call_id: null },
  ]);
  t.strictSame(second?.messages.slice(2), [
    { role: "assistant", content: "looking", tool_calls: [call("c1", "no_such_tool")], tool_call_id: null },
    { role: "tool", content: JSON.stringify({ error: "no tool named no_such_tool is available" }), tool_calls: null, tool_call_id: "c1" },
  ], "the second step sees the first's call and its answer");
  t.equal(model.signals[0], signal);
  t.equal(model.signals[1], signal);
});

t.test("without a system prompt the history goes as it is", async (t) => {
  const model = new Model([answer("hi")]);
  await runTurn(conversation(), harness(model).deps);
  t.strictSame(model.requests[0]?.messages, [{ role: "user", content: "go", tool_calls: null, tool_call_id: null }]);
});

t.test("an answer without tool calls ends the turn idle, stamped and announced", async (t) => {
  const model = new Model([{ ...answer("Hello"), tool_calls: [] }]);
  const h = harness(model);
  const data = conversation();
  await runTurn(data, h.deps);
  t.equal(data.status, "idle");
  t.strictSame(data.pending_tool_call_ids, []);
  t.strictSame(data.messages.at(-1), { id: "msg-0001", role: "assistant", content: "Hello", tool_calls: null, tool_call_id: null }, "an empty tool_calls list is kept as null");
  t.equal(data.messages.length, 2);
  t.strictSame(h.appended, data.messages.slice(1), "each appended message is announced");
  t.equal(data.updated_at, "2026-12-03T00:00:01.000Z", "stamped when the message was appended");
  t.equal(model.requests.length, 1);
});

t.test("a caller's tool parks the turn in requires_action with the call kept", async (t) => {
  const model = new Model([answer("", [call("c1", "lookup_order", { id: 7 }), call("c2", "lookup_order")])]);
  const data = conversation({ status: "idle", pending_tool_call_ids: [] });
  await runTurn(data, harness(model).deps);
  t.equal(data.status, "requires_action");
  t.strictSame(data.pending_tool_call_ids, ["c1", "c2"]);
  t.equal(data.messages.length, 2, "no answer is written for them");
  t.strictSame(data.messages[1]?.tool_calls, [call("c1", "lookup_order", { id: 7 }), call("c2", "lookup_order")]);
  t.equal(model.requests.length, 1, "the model is not asked again");
});

t.test("a turn stops after exactly 8 model steps, idle, saying so", async (t) => {
  t.equal(MAX_MODEL_STEPS_PER_TURN, 8);
  const model = new Model((step) => answer("still looking", [call(`c${step}`, "no_such_tool")]));
  const h = harness(model);
  const data = conversation();
  await runTurn(data, h.deps);
  // 8 as docs/api/agents.md says, not the constant: step 8 runs, step 9 does not.
  t.equal(model.requests.length, 8, "the model was asked 8 times");
  t.equal(data.messages.length, 1 + 8 * 2 + 1);
  t.strictSame(data.messages.at(-1), { id: "msg-0017", role: "assistant", content: stepLimitText(8), tool_calls: null, tool_call_id: null });
  t.equal(data.status, "idle");
  t.strictSame(data.pending_tool_call_ids, []);
  t.strictSame(h.appended.at(-1), data.messages.at(-1), "the closing message is announced");
  t.equal(data.updated_at, `2026-12-03T00:00:${String(h.ticks()).padStart(2, "0")}.000Z`);
  t.equal(h.ticks(), 17, "stamped at each message");
});

t.test("a model answering at step 8 ends the turn with that answer", async (t) => {
  const model = new Model((step) => (step < 7 ? answer("", [call(`c${step}`, "no_such_tool")]) : answer("found it")));
  const data = conversation();
  await runTurn(data, harness(model).deps);
  t.equal(model.requests.length, 8);
  t.equal(data.messages.at(-1)?.content, "found it");
  t.equal(data.status, "idle");
});

t.test("a turn's own step bound replaces the default", async (t) => {
  const model = new Model((step) => answer("", [call(`c${step}`, "no_such_tool")]));
  const data = conversation();
  await runTurn(data, harness(model, { maxSteps: 2 }).deps);
  t.equal(model.requests.length, 2);
  t.equal(data.messages.at(-1)?.content, stepLimitText(2));

  const none = new Model([answer("hi")]);
  const idle = conversation();
  await runTurn(idle, harness(none, { maxSteps: 0 }).deps);
  t.equal(none.requests.length, 0, "a bound of 0 asks nothing");
  t.same(idle.messages.map((m) => m.content), ["go", stepLimitText(0)]);
  t.equal(idle.status, "idle");
});

t.test("an undeclared tool's answer is an error, held to the tool result bound", async (t) => {
  const name = `tool_${"x".repeat(200)}`;
  const model = new Model([answer("", [call("c1", name)]), answer("ok")]);
  const data = conversation();
  await runTurn(data, harness(model, { toolResultMaxBytes: 120 }).deps);
  const tool = data.messages[2];
  t.equal(tool?.role, "tool");
  t.equal(tool?.tool_call_id, "c1");
  t.equal(tool?.tool_calls, null);
  t.ok(Buffer.byteLength(tool?.content ?? "") <= 120, "within the bound");
  t.match(errorOf(tool), { truncated: { limit_bytes: 120 } });
});

t.test("search_memory runs inside the turn on the conversation's organization, with the turn's signal and billing", async (t) => {
  const model = new Model([answer("", [call("c1", "search_memory", { query: "cats", top_k: 3 })]), answer("done")]);
  const signal = new AbortController().signal;
  const onEmbedded: OnEmbedded = () => undefined;
  const h = harness(model, { signal, onEmbedded, toolResultMaxBytes: 400 });
  h.memory.results = [{ id: "r1", content: "c".repeat(1000), metadata: {}, distance: 0.1 }];
  const data = conversation();
  await runTurn(data, h.deps);
  t.equal(h.memory.searches.length, 1);
  t.match(h.memory.searches[0], { organizationId: "org_1", query: "cats", topK: 3 });
  t.equal(h.memory.searches[0]?.signal, signal);
  t.equal(h.memory.searches[0]?.onUsage, onEmbedded);
  const result = data.messages[2];
  t.equal(result?.tool_call_id, "c1");
  t.ok(Buffer.byteLength(result?.content ?? "") <= 400, "the result is held to AGENT_MESSAGE_MAX_BYTES");
  t.match(errorOf(result), { results: [{ id: "r1", content_truncated: true }], truncated: {} });
  t.equal(data.status, "idle");
});

t.test("each memory remember accepts is handed over once, under the id of its call's position, and found by later searches", async (t) => {
  const model = new Model([
    answer("", [call("c1", "remember", { content: "likes tea" }), call("c2", "remember", { content: "lives in Oslo" })]),
    answer("", [call("c3", "remember", { content: "has a cat" }), call("c4", "search_memory", { query: "tea" })]),
    answer("noted"),
  ]);
  const h = harness(model);
  const data = conversation();
  await runTurn(data, h.deps);
  // The first step's assistant message sits at 1 (after the user's); the second's at 4 (after two answers).
  t.same(
    h.remembered.map((r) => r.id),
    [memoryRecordId(conversationId, 1, "c1"), memoryRecordId(conversationId, 1, "c2"), memoryRecordId(conversationId, 4, "c3")],
  );
  t.same(h.memory.drafts.map((d) => [d.organizationId, d.unstoredHeld, d.metadata]), [
    ["org_1", 0, { kind: "memory", conversation_id: conversationId }],
    ["org_1", 1, { kind: "memory", conversation_id: conversationId }],
    ["org_1", 2, { kind: "memory", conversation_id: conversationId }],
  ]);
  t.same(h.memory.searches[0]?.unstored.map((r) => r.content), ["likes tea", "lives in Oslo", "has a cat"], "the turn's search ranks its own memories");
  t.same(errorOf(data.messages[2]), { stored: true, id: memoryRecordId(conversationId, 1, "c1") });
  t.equal(data.messages.at(-1)?.content, "noted");
});

t.test("a turn runs without the message and memory callbacks", async (t) => {
  const model = new Model([answer("", [call("c1", "remember", { content: "likes tea" })]), answer("noted")]);
  const h = harness(model);
  const deps: TurnDeps = { ...h.deps, onMessage: undefined, onRemembered: undefined };
  const data = conversation();
  await runTurn(data, deps);
  t.same(data.messages.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
  t.equal(data.messages.at(-1)?.content, "noted");
  t.equal(h.memory.drafts.length, 1, "the memory was still accepted");
});

t.test("without a video starter generate_video is answered as unavailable and the model goes on", async (t) => {
  const model = new Model([answer("", [call("v1", "generate_video", { prompt: "a cat" })]), answer("sorry, no video")]);
  const data = conversation();
  await runTurn(data, harness(model).deps);
  t.same(errorOf(data.messages[2]), { error: "video generation is not available" });
  t.equal(data.messages[2]?.tool_call_id, "v1");
  t.equal(data.status, "idle");
  t.equal(data.pending_video, null);
  t.equal(model.requests.length, 2);
});

t.test("a video starter's error is the model's to read", async (t) => {
  const started: Array<[Record<string, unknown>, string]> = [];
  const model = new Model([answer("", [call("v1", "generate_video", { prompt: "a cat" })]), answer("it failed")]);
  const data = conversation();
  await runTurn(data, harness(model, { startVideo: async (args, id) => (started.push([args, id]), { error: "no video model" }) }).deps);
  t.same(started, [[{ prompt: "a cat" }, "v1"]]);
  t.same(errorOf(data.messages[2]), { error: "no video model" });
  t.equal(data.status, "idle");
  t.equal(data.pending_video, null);
});

t.test("a started video parks the turn in generating_media, one job per step, answering the step's other calls", async (t) => {
  const started: string[] = [];
  const model = new Model([
    answer("", [call("v1", "generate_video", { prompt: "a cat" }), call("c1", "lookup_order"), call("v2", "generate_video", { prompt: "a dog" }), call("u1", "no_such_tool")]),
  ]);
  const data = conversation();
  const h = harness(model, { startVideo: async (_args, id) => (started.push(id), { job_id: "job-1" }) });
  await runTurn(data, h.deps);
  t.same(started, ["v1"], "one job started");
  t.equal(data.status, "generating_media");
  t.strictSame(data.pending_tool_call_ids, ["v1"]);
  t.strictSame(data.pending_video, { job_id: "job-1", tool_call_id: "v1", payer: null, request_id: "", result_recorded: false });
  t.same(
    data.messages.slice(2).map((m) => [m.tool_call_id, errorOf(m)]),
    [
      ["v2", { error: "one video at a time: call generate_video again once this one is ready" }],
      ["u1", { error: "no tool named no_such_tool is available" }],
      ["c1", { error: "not run: a video is being generated; call this tool again afterwards" }],
    ],
    "the video's call waits for its job; the others are answered",
  );
  t.equal(model.requests.length, 1, "the model waits for the video");
});

/** The bytes a step's assistant message adds, with ids of the harness's width. */
const assistantBytes = (content: string, calls: AgentToolCall[]) =>
  appendedBytes({ id: idSized, role: "assistant", content, tool_calls: calls.length > 0 ? calls : null, tool_call_id: null });
const toolBytes = (callId: string, content: string) => appendedBytes({ id: idSized, role: "tool", content, tool_calls: null, tool_call_id: callId });
/** What a room of `maxBytes` holds back to answer these calls as not added (the answer names the cap, so its digits count). */
const reserveAt = (maxBytes: number, callIds: string[]) => {
  const room = new ConversationRoom(conversation(), maxBytes);
  return callIds.reduce((sum, id) => sum + room.answerBytes(id), 0);
};
/** The cap that leaves exactly `fixed` bytes plus the reserve for these calls' answers (settled: the reserve depends on the cap's digits). */
const capFor = (fixed: number, callIds: string[]) => {
  let max = fixed;
  for (let i = 0; i < 3; i++) max = fixed + reserveAt(max, callIds);
  return max;
};

t.test("at the cap a model answer that does not fit, with room to answer its calls, is not taken: the turn stops idle saying why", async (t) => {
  const calls = [call("c1", "lookup_order"), call("c2", "lookup_order")];
  const needed = capFor(conversationBytes(conversation()) + assistantBytes("hm", calls) + closingReserveBytes, ["c1", "c2"]);
  t.equal(reserveAt(needed - 1, ["c1", "c2"]), reserveAt(needed, ["c1", "c2"]), "one byte less holds the same reserve");

  const fits = conversation();
  await runTurn(fits, harness(new Model([answer("hm", calls)]), { maxBytes: needed }).deps);
  t.equal(fits.status, "requires_action", "taken with exactly the room for it and its answers");
  t.equal(fits.messages.length, 2);

  const short = conversation();
  const h = harness(new Model([answer("hm", calls)]), { maxBytes: needed - 1 });
  await runTurn(short, h.deps);
  t.equal(short.status, "idle");
  t.strictSame(short.pending_tool_call_ids, []);
  t.strictSame(short.messages.slice(1), [
    { id: "msg-0002", role: "assistant", content: capNotice(needed - 1, `the model's answer (${assistantBytes("hm", calls)} bytes)`), tool_calls: null, tool_call_id: null },
  ]);
  t.strictSame(h.appended, short.messages.slice(1));
});

t.test("the cap's notice uses the closing reserve, and is left out when even that is too little", async (t) => {
  const base = conversationBytes(conversation());
  const what = `the model's answer (${assistantBytes("hello", [])} bytes)`;
  // The notice's size depends on the digits of the cap: settle the cap that leaves exactly room for it.
  let max = base;
  for (let i = 0; i < 3; i++) max = base + appendedBytes({ id: idSized, role: "assistant", content: capNotice(max, what), tool_calls: null, tool_call_id: null });
  const exact = conversation();
  await runTurn(exact, harness(new Model([answer("hello")]), { maxBytes: max }).deps);
  t.same(exact.messages.map((m) => m.content), ["go", capNotice(max, what)], "the notice fits the cap exactly, in the reserve");
  t.equal(conversationBytes(exact), max);
  t.equal(exact.status, "idle");

  const full = conversation();
  const h = harness(new Model([answer("hello")]), { maxBytes: max - 1 });
  await runTurn(full, h.deps);
  t.same(full.messages.map((m) => m.content), ["go"], "nothing fits: nothing is added");
  t.equal(full.status, "idle");
  t.strictSame(full.pending_tool_call_ids, []);
  t.equal(h.appended.length, 0);
});

t.test("a tool result that does not fit is answered as not added, as are the step's other calls, and the turn stops", async (t) => {
  const bigName = `tool_${"x".repeat(600)}`;
  const calls = [call("c1", "lookup_order"), call("v1", "generate_video", { prompt: "a cat" }), call("u1", bigName), call("u2", "no_such_tool"), call("s1", "search_memory", { query: "q" })];
  // Room for the model's message and the not-added answers only.
  const max = capFor(conversationBytes(conversation()) + assistantBytes("", calls) + closingReserveBytes, calls.map((c) => c.id));
  const started: string[] = [];
  const h = harness(new Model([answer("", calls), answer("never")]), { maxBytes: max, startVideo: async (_a, id) => (started.push(id), { job_id: "job-1" }) });
  const data = conversation();
  await runTurn(data, h.deps);
  t.same(started, ["v1"], "the video was started before the cap was reached");
  t.equal(h.memory.searches.length, 0, "nothing more runs past the cap");
  const notAdded = notAddedAnswer(max);
  t.same(
    data.messages.slice(2, -1).map((m) => [m.tool_call_id, m.content]),
    [
      ["u1", notAdded],
      ["u2", notAdded],
      ["s1", notAdded],
      ["c1", notAdded],
      ["v1", notAdded],
    ],
    "every call of the step is answered",
  );
  const tooBig = toolBytes("u1", JSON.stringify({ error: `no tool named ${bigName} is available` }));
  t.equal(data.messages.at(-1)?.content, capNotice(max, `a tool result (${tooBig} bytes)`));
  t.equal(data.status, "idle");
  t.strictSame(data.pending_tool_call_ids, []);
  t.equal(data.pending_video, null, "the conversation does not wait for the video");
  t.ok(conversationBytes(data) <= max);
  t.equal(h.deps.chat === undefined, false);
});

t.test("a tool result that fits exactly is added; one byte less and it is not", async (t) => {
  const bigName = `tool_${"x".repeat(600)}`;
  const calls = [call("u1", bigName)];
  const base = conversationBytes(conversation());
  const result = toolBytes("u1", JSON.stringify({ error: `no tool named ${bigName} is available` }));
  const max = base + assistantBytes("", calls) + result + closingReserveBytes;

  const fits = conversation();
  await runTurn(fits, harness(new Model([answer("", calls), answer("ok")]), { maxBytes: max }).deps);
  t.same(errorOf(fits.messages[2]), { error: `no tool named ${bigName} is available` });
  // The room is then full: the model's next answer is what stops the turn.
  t.equal(fits.messages.at(-1)?.content, capNotice(max, `the model's answer (${assistantBytes("ok", [])} bytes)`));

  const short = conversation();
  await runTurn(short, harness(new Model([answer("", calls), answer("ok")]), { maxBytes: max - 1 }).deps);
  t.equal(short.messages[2]?.content, notAddedAnswer(max - 1));
  t.equal(short.messages.at(-1)?.content, capNotice(max - 1, `a tool result (${result} bytes)`));
});

t.test("a memory result past the cap is named in the notice", async (t) => {
  const calls = [call("s1", "search_memory", { query: "q" })];
  const max = capFor(conversationBytes(conversation()) + assistantBytes("", calls) + closingReserveBytes, ["s1"]);
  const h = harness(new Model([answer("", calls)]), { maxBytes: max });
  h.memory.results = [{ id: "r1", content: "m".repeat(2000), metadata: {}, distance: 0 }];
  const data = conversation();
  await runTurn(data, h.deps);
  t.equal(data.messages[2]?.content, notAddedAnswer(max));
  t.match(data.messages.at(-1)?.content, /: a search_memory result \(\d+ bytes\) did not fit\./);
});
