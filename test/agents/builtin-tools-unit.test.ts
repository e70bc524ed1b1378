// The built-in tools run inside a turn (actors/conversation/builtin-tools.ts),
// on a recording memory double:
// - search_memory and remember with bad arguments answer an error naming the
//   argument, and touch no memory; an unknown built-in name is an error;
// - a 4xx from the index is the model's to read (499 too); a 5xx or any
//   other error fails the turn;
// - a memory's record id is stable across versions (a golden value: a turn
//   run again after an upgrade replaces its memory) and differs by
//   conversation, position and call;
// - the tools as offered: names, what they say they do, the reserved names.
import t from "tap";
import { builtinToolNames, builtinTools, memoryRecordId, offeredBuiltinTools, reservedToolNames, runBuiltinTool, type BuiltinToolContext } from "../../actors/conversation/builtin-tools.ts";
import { TroupeError } from "../../core/errors.ts";
import type { OrgIndex, RecordDraft } from "../../vectors/org-index.ts";
import type { VectorRecord } from "../../vectors/vector-index.ts";

/** The two OrgIndex methods the tools use; counts calls, and fails as told. */
class Memory {
  calls = 0;
  failure: unknown = undefined;
  search = async () => {
    this.calls++;
    if (this.failure !== undefined) throw this.failure;
    return [];
  };
  prepare = async (draft: RecordDraft): Promise<VectorRecord> => {
    this.calls++;
    if (this.failure !== undefined) throw this.failure;
    return { id: draft.id, organization_id: draft.organizationId, content: draft.content, metadata: draft.metadata, model: "m", vector: [1], created_at: "" };
  };
  asIndex(): OrgIndex {
    return this as unknown as OrgIndex;
  }
}

function context(memory: Memory): BuiltinToolContext {
  return { memory: memory.asIndex(), organizationId: "org_1", conversationId: "conv_1", call: { id: "call_1", position: 1 }, unstored: [] };
}

const parsed = (text: string) => JSON.parse(text) as { error?: string; stored?: boolean; id?: string; results?: unknown[] };

t.test("bad arguments are an error naming the argument, and touch no memory", async (t) => {
  const memory = new Memory();
  const search = parsed(await runBuiltinTool("search_memory", { query: "" }, context(memory)));
  t.match(search.error, /^invalid arguments: .*query/s);
  const topK = parsed(await runBuiltinTool("search_memory", { query: "q", top_k: 0 }, context(memory)));
  t.match(topK.error, /^invalid arguments: .*top_k/s);
  const remember = parsed(await runBuiltinTool("remember", { content: 7 }, context(memory)));
  t.match(remember.error, /^invalid arguments: .*content/s);
  t.equal(memory.calls, 0);
  t.same(parsed(await runBuiltinTool("forget", {}, context(memory))), { error: "unknown built-in tool forget" });
  t.same(parsed(await runBuiltinTool("search_memory", { query: "q" }, context(memory))), { results: [] }, "good arguments search");
  const ctx = context(memory);
  t.match(parsed(await runBuiltinTool("remember", { content: "likes tea" }, ctx)), { stored: true, id: memoryRecordId("conv_1", 1, "call_1") });
  t.equal(ctx.unstored.length, 1, "the memory is handed to the turn, not stored");
});

t.test("a 4xx from the index is the model's to read; a 5xx or another error fails the turn", async (t) => {
  for (const tool of ["search_memory", "remember"]) {
    const args = tool === "search_memory" ? { query: "q" } : { content: "c" };
    const memory = new Memory();
    memory.failure = new TroupeError("quota_exceeded", "the organization's vector quota is used up");
    t.same(parsed(await runBuiltinTool(tool, args, context(memory))), { error: "the organization's vector quota is used up" }, `${tool}: 403`);
    memory.failure = new TroupeError("payload_too_large");
    t.match(parsed(await runBuiltinTool(tool, args, context(memory))), { error: String }, `${tool}: 413`);
    memory.failure = new TroupeError("service_unavailable", "Elasticsearch is down");
    await t.rejects(runBuiltinTool(tool, args, context(memory)), { message: "Elasticsearch is down" }, `${tool}: 503 fails the turn`);
    memory.failure = new Error("socket hang up");
    await t.rejects(runBuiltinTool(tool, args, context(memory)), { message: "socket hang up" }, `${tool}: not a TroupeError`);
  }
  // The boundary itself: 499 is read, 500 fails.
  const at = (status: number) => Object.assign(new TroupeError("quota_exceeded", `status ${status}`), { status });
  const memory = new Memory();
  memory.failure = at(499);
  t.same(parsed(await runBuiltinTool("search_memory", { query: "q" }, context(memory))), { error: "status 499" });
  memory.failure = at(500);
  await t.rejects(runBuiltinTool("search_memory", { query: "q" }, context(memory)), { message: "status 500" });
});

t.test("a memory's record id: stable across versions, and its own per conversation, position and call", async (t) => {
  t.equal(memoryRecordId("0193c6f0-0000-7000-8000-000000000000", 3, "call_1"), "4b2e71cf-955c-5118-a33f-8ef6746b1851", "the golden value");
  const ids = new Set([memoryRecordId("a", 1, "c"), memoryRecordId("b", 1, "c"), memoryRecordId("a", 2, "c"), memoryRecordId("a", 1, "d")]);
  t.equal(ids.size, 4);
});

t.test("the tools as offered", async (t) => {
  t.same(builtinTools.map((tool) => tool.name), ["search_memory", "remember"]);
  t.same([...builtinToolNames], ["search_memory", "remember"]);
  t.same(offeredBuiltinTools.map((tool) => tool.name), ["search_memory", "remember", "generate_video"]);
  t.same([...reservedToolNames].sort(), ["generate_video", "remember", "search_memory"]);
  t.match(builtinTools[0]?.description, /long-term memory .*cosine distance/);
  t.match(builtinTools[1]?.description, /Store a fact .*search_memory/);
});
