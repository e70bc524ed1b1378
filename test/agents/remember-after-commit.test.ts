// The `remember` tool stores its memory only once the conversation's turn
// commits, under an id from the conversation, the turn and the tool call.
// Run on the turn machinery both hosts share (actors/hosts/activation.ts),
// with a state write the test controls, a scripted chat double and a real
// embedded vector index read directly:
// - a committed turn stores the memory once, after its state write;
// - a turn that fails after `remember` (the model, or its state write) stores
//   none; retried, it stores one;
// - the same turn delivered twice from the same committed state (Dapr retrying
//   a call it lost track of while the first delivery still ran) stores one;
// - the turn's own later search_memory finds the memory before it is stored.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { systemClock } from "../../core/clock.ts";
import { TroupeError } from "../../core/errors.ts";
import { eraseDefinition } from "../../actors/actor.ts";
import { Activation } from "../../actors/hosts/activation.ts";
import { createConversationActor } from "../../actors/conversation/conversation-actor.ts";
import { ConversationDirectory } from "../../actors/conversation/directory.ts";
import type { Conversation, ConversationState } from "../../actors/conversation/types.ts";
import type { ChatRequest } from "../../providers/chat-request.ts";
import type { ChatResult } from "../../providers/types.ts";
import { answer } from "../support/double-chat-answer.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { EmbeddedVectorIndex } from "../../vectors/embedded-vector-index.ts";
import { OrgIndex } from "../../vectors/org-index.ts";
import { waitFor } from "../support/net.ts";
import { offlineActorServices } from "../support/offline-actor-services.ts";

const dataDir = mkdtempSync(join(tmpdir(), "troupe-remember-after-commit-"));
const store = new EmbeddedDataStore(dataDir, systemClock);
const index = new EmbeddedVectorIndex({ directory: join(dataDir, "vectors"), model: "m", dimensions: 4, kernel: "js" });
await index.open();
t.teardown(async () => {
  await index.close();
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
});
/** One direction per text, so a search for a memory's own text finds it first. */
const embed = async (texts: string[]) =>
  texts.map((text) => {
    const v = [1, 0, 0, 0];
    for (let i = 0; i < text.length; i++) v[1 + (i % 3)]! += (text.charCodeAt(i) * (i + 1)) % 31;
    return v;
  });
const memory = new OrgIndex({ index, embed, clock: systemClock });

const org = "org_1";
/** Model steps that fail, left for the "remember, then the model fails" script. */
let modelFailures = 0;

/** Scripted by the user message: remember its text, optionally search it, then answer (or fail). */
async function chat(request: ChatRequest): Promise<ChatResult> {
  const script = request.messages.findLast((m) => m.role === "user")?.content ?? "";
  const sinceUser = request.messages.slice(request.messages.findLastIndex((m) => m.role === "user") + 1);
  const toolResults = sinceUser.filter((m) => m.role === "tool").length;
  const fact = `fact of ${script}`;
  if (toolResults === 0) return answer("", [{ id: "call-remember", name: "remember", arguments: { content: fact } }]);
  if (script.startsWith("search") && toolResults === 1) return answer("", [{ id: "call-search", name: "search_memory", arguments: { query: fact } }]);
  if (modelFailures > 0) {
    modelFailures -= 1;
    throw new TroupeError("provider_error", "the model provider failed after remember");
  }
  return answer("noted");
}

const conversation = createConversationActor({
  chat,
  memory,
  directory: new ConversationDirectory(store, () => undefined),
  events: { publish: () => undefined, listen: async () => async () => undefined },
});
const services = offlineActorServices();

/** What the state writes saw: the memories of `org` in the index as each state was written. */
const atWrite: number[] = [];
let refuseWrites = false;
const persist = async (): Promise<void> => {
  atWrite.push(index.count(org));
  if (refuseWrites) throw new Error("store unavailable");
};

const owner = { organization_id: org, project_id: "prj_1", environment_id: "env_1" };
let n = 0;
/** A created conversation's committed state, and an activation of it. */
async function newConversation(): Promise<{ id: string; committed: string; activation: Activation }> {
  const id = `00000000-0000-4000-8000-${String(++n).padStart(12, "0")}`;
  const initial: ConversationState = { conversation: null };
  const creating = new Activation(eraseDefinition(conversation), id, JSON.stringify(initial), services, persist);
  await creating.invoke("create", { owner, model: null, routing_strategy: "auto", system_prompt: "", tools: [] });
  const committed = creating.committedStateJson;
  return { id, committed, activation: new Activation(eraseDefinition(conversation), id, committed, services, persist) };
}
const post = (activation: Activation, content: string, requestId: string) =>
  activation.invoke("postMessage", { organization_id: org, content, request_id: requestId }) as Promise<Conversation>;

/** The memories of one conversation, read from the index itself. */
async function stored(conversationId: string): Promise<Array<{ id: string; content: string }>> {
  const all = await index.search(org, [1, 0, 0, 1], 100, { metadataKind: "memory" });
  return all.filter((r) => r.metadata["conversation_id"] === conversationId).map((r) => ({ id: r.id, content: r.content }));
}
/** A memory stored after the turn answered has had time to land; a second one too. */
const settled = () => new Promise((resolve) => setTimeout(resolve, 150));
/** The id the turn's (latest) remember call answered. */
const rememberedId = (result: Conversation): string => (JSON.parse(result.messages.findLast((m) => m.tool_call_id === "call-remember")?.content ?? "{}") as { id?: string }).id ?? "";

t.test("a committed turn stores its memory once, after its state was written", async (t) => {
  const { id, activation } = await newConversation();
  atWrite.length = 0;
  const before = index.count(org);
  const result = await post(activation, "a", "req-a");
  t.same(result.messages.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
  t.same(atWrite, [before], "nothing was in the index when the turn's state was written");
  await waitFor(async () => (await stored(id)).length > 0, 5_000, "the memory");
  await settled();
  t.same(await stored(id), [{ id: rememberedId(result), content: "fact of a" }], "one memory, under the id the tool answered");
});

t.test("a turn that fails after remember stores nothing; retried, it stores one memory", async (t) => {
  const { id, activation } = await newConversation();
  modelFailures = 1;
  await t.rejects(post(activation, "b", "req-b"), { code: "provider_error" });
  await settled();
  t.same(await stored(id), [], "the failed turn stored no memory");

  const retried = await post(activation, "b", "req-b");
  t.equal(retried.status, "idle");
  await waitFor(async () => (await stored(id)).length > 0, 5_000, "the memory");
  await settled();
  t.same(await stored(id), [{ id: rememberedId(retried), content: "fact of b" }], "exactly one memory for the retried turn");
});

t.test("a turn whose state write fails after remember stores nothing", async (t) => {
  const { id, activation } = await newConversation();
  refuseWrites = true;
  try {
    await t.rejects(post(activation, "c", "req-c"), /store unavailable/);
  } finally {
    refuseWrites = false;
  }
  await settled();
  t.same(await stored(id), [], "no memory for a turn that did not commit");
});

t.test("the same turn delivered twice from the same committed state stores one memory", async (t) => {
  const { id, committed, activation } = await newConversation();
  // A second activation of the same committed state: the copy another replica runs while the first delivery is still running.
  const elsewhere = new Activation(eraseDefinition(conversation), id, committed, services, persist);
  const [first, second] = await Promise.all([post(activation, "d", "req-d"), post(elsewhere, "d", "req-d")]);
  t.equal(rememberedId(first), rememberedId(second), "both deliveries answered the same memory id");
  await waitFor(async () => (await stored(id)).length > 0, 5_000, "the memory");
  await settled();
  t.same(await stored(id), [{ id: rememberedId(first), content: "fact of d" }], "one memory, not one per delivery");

  // A later turn of the same conversation is a new memory, though the model reuses its call ids.
  const later = await post(activation, "e", "req-e");
  await waitFor(async () => (await stored(id)).length > 1, 5_000, "the later memory");
  t.not(rememberedId(later), rememberedId(first), "another turn, another id");
});

t.test("search_memory later in the same turn finds the memory before it is stored", async (t) => {
  const { id, activation } = await newConversation();
  atWrite.length = 0;
  const before = index.count(org);
  const result = await post(activation, "search f", "req-f");
  const search = JSON.parse(result.messages.filter((m) => m.role === "tool")[1]?.content ?? "{}") as { results?: Array<{ id: string; content: string; metadata: Record<string, unknown> }> };
  t.match(search.results?.[0], { id: rememberedId(result), content: "fact of search f", metadata: { kind: "memory", conversation_id: id } }, "the turn's own memory comes back first");
  t.same(atWrite, [before], "it was not in the index yet");
  await waitFor(async () => (await stored(id)).length > 0, 5_000, "the memory");
});
