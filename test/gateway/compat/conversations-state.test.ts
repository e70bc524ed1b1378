// Where Conversations API conversations live and who sees them: environment
// and organization isolation (404 to every other key), the items kept in
// bounded pages and found through their refs, the organization's deletion
// leaving nothing in any of the three actors or the index, retention, and
// POST /openai/v1/responses with `conversation` reading and appending the
// same items the Conversations API shows.
import t from "tap";
import OpenAI from "openai";
import { actorRef } from "../../../actors/actor.ts";
import { callActor } from "../../../actors/host.ts";
import {
  CONVERSATION_ITEMS_ACTOR,
  ITEMS_PER_PAGE,
  pageActorId,
  refActorId,
  type ConversationItemsActorDefinition,
} from "../../../actors/conversation-items/conversation-items-actor.ts";
import { CONVERSATION_ITEM_PAGE_ACTOR, type ConversationItemPageActorDefinition } from "../../../actors/conversation-items/item-page-actor.ts";
import { CONVERSATION_ITEM_REF_ACTOR, type ConversationItemRefActorDefinition } from "../../../actors/conversation-items/item-ref-actor.ts";
import { field, signup, startTestTroupe } from "../../support/troupe.ts";
import { modelsByProvider, startCompatHarness } from "./openai-harness.ts";

t.setTimeout(90_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client();
const actors = h.troupe.services.actors;
const head = actorRef<ConversationItemsActorDefinition>(CONVERSATION_ITEMS_ACTOR);
const page = actorRef<ConversationItemPageActorDefinition>(CONVERSATION_ITEM_PAGE_ACTOR);
const ref = actorRef<ConversationItemRefActorDefinition>(CONVERSATION_ITEM_REF_ACTOR);
const everything = { below_seq: Number.MAX_SAFE_INTEGER };

const refusal = (call: Promise<unknown>) => call.then(() => "resolved" as const, (e: unknown) => (e instanceof OpenAI.APIError ? e.status : String(e)));
const say = (text: string) => ({ type: "message" as const, role: "user" as const, content: text });
const many = (n: number, from = 0) => Array.from({ length: n }, (_, i) => say(`m${from + i}`));

async function keyIn(token: string, environmentId: string): Promise<string> {
  const res = await h.troupe.request("POST", `/v1/environments/${environmentId}/api-keys`, { token, body: { name: "other-env" } });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
  return String(field(res.body, "key"));
}

t.test("a conversation is 404 to every other environment's and organization's key", async (t) => {
  const mine = await client.conversations.create({ items: [say("private")], metadata: { a: "b" } });
  const item = (await client.conversations.items.list(mine.id)).data[0]!;
  const otherEnv = h.client(await keyIn(h.user.token, h.user.productionEnvId));
  const otherOrg = h.client((await signup(h.troupe, "conversations-other")).testKey);
  for (const [name, other] of [["another environment", otherEnv], ["another organization", otherOrg]] as const) {
    t.equal(await refusal(other.conversations.retrieve(mine.id)), 404, `${name}: retrieve`);
    t.equal(await refusal(other.conversations.update(mine.id, { metadata: { x: "y" } })), 404, `${name}: update`);
    t.equal(await refusal(other.conversations.items.list(mine.id)), 404, `${name}: items list`);
    t.equal(await refusal(other.conversations.items.create(mine.id, { items: [say("injected")] })), 404, `${name}: items create`);
    t.equal(await refusal(other.conversations.items.retrieve(item.id!, { conversation_id: mine.id })), 404, `${name}: item retrieve`);
    t.equal(await refusal(other.conversations.items.delete(item.id!, { conversation_id: mine.id })), 404, `${name}: item delete`);
    t.equal(await refusal(other.conversations.delete(mine.id)), 404, `${name}: delete`);
    t.equal(await refusal(other.responses.create({ model: "gpt-4.1-mini", input: "read it", conversation: mine.id })), 404, `${name}: a response continuing it`);
  }
  t.same((await client.conversations.retrieve(mine.id)).metadata, { a: "b" }, "unchanged for its own environment");
  t.same((await client.conversations.items.list(mine.id)).data.map((i) => i.id), [item.id], "its items too");
});

t.test(`items live in pages of ${ITEMS_PER_PAGE}, each found through its ref; an append writes only the last page`, async (t) => {
  const conv = await client.conversations.create({ items: many(20) });
  await client.conversations.items.create(conv.id, { items: many(20, 20) });
  const pages = await Promise.all([0, 1, 2].map((n) => callActor(actors, page, pageActorId(conv.id, n), "read", everything)));
  t.same(pages.map((p) => p.length), [ITEMS_PER_PAGE, 40 - ITEMS_PER_PAGE, 0], "the first page closed at its size, the rest on the next");
  const firstPage = JSON.stringify(pages[0]);
  await client.conversations.items.create(conv.id, { items: many(3, 40) });
  t.equal(JSON.stringify(await callActor(actors, page, pageActorId(conv.id, 0), "read", everything)), firstPage, "the closed page is untouched by the append");
  t.equal((await callActor(actors, page, pageActorId(conv.id, 1), "read", everything)).length, 40 - ITEMS_PER_PAGE + 3);
  const last = pages[1]!.at(-1)!;
  t.same(await callActor(actors, ref, refActorId(conv.id, last.id), "get", {}), { seq: 39, page: 1 }, "the item's ref names its place");
  const owner = { organization_id: h.user.orgId, environment_id: h.user.developmentEnvId };
  t.match(await callActor(actors, head, conv.id, "read", owner), { next_seq: 43, item_count: 43, last_page: 1 }, "the head holds counters, not items");
});

t.test("deleting the organization leaves nothing: head, pages, refs, index", async (t) => {
  const owner = await signup(h.troupe, "conversations-erased");
  const theirs = h.client(owner.testKey);
  const conv = await theirs.conversations.create({ items: many(20) });
  await theirs.conversations.items.create(conv.id, { items: many(20, 20) });
  const ids = (await theirs.conversations.items.list(conv.id, { limit: 100 })).data.map((i) => i.id!);
  const reader = { organization_id: owner.orgId, environment_id: owner.developmentEnvId };
  t.ok(await callActor(actors, head, conv.id, "read", reader), "stored");
  const orgName = String(field((await h.troupe.request("GET", `/v1/orgs/${owner.orgId}`, { token: owner.token })).body, "name"));
  const res = await h.troupe.request("DELETE", `/v1/orgs/${owner.orgId}`, { token: owner.token, body: { confirm: orgName } });
  t.equal(res.status, 200, res.text);
  t.equal(await callActor(actors, head, conv.id, "read", reader), null, "the head holds nothing");
  for (const n of [0, 1]) t.same(await callActor(actors, page, pageActorId(conv.id, n), "read", everything), [], `page ${n} holds nothing`);
  const refs = await Promise.all(ids.map((id) => callActor(actors, ref, refActorId(conv.id, id), "get", {})));
  t.same(refs.filter((r) => r !== null), [], "no ref is left");
  t.same((await h.troupe.services.store.page(`org-openai-conversations:${owner.orgId}`, 10)).members, [], "nor is the index entry");
});

t.test("deleting a conversation empties its pages and refs too", async (t) => {
  const conv = await client.conversations.create({ items: many(5) });
  const ids = (await client.conversations.items.list(conv.id)).data.map((i) => i.id!);
  await client.conversations.delete(conv.id);
  t.same(await callActor(actors, page, pageActorId(conv.id, 0), "read", everything), []);
  t.same((await Promise.all(ids.map((id) => callActor(actors, ref, refActorId(conv.id, id), "get", {})))).filter((r) => r !== null), []);
});

for (const [provider, model] of Object.entries(modelsByProvider)) {
  t.test(`${provider} (${model}): POST /openai/v1/responses with conversation reads its items and appends its input and output`, async (t) => {
    const fake = h.fakes[provider as keyof typeof modelsByProvider];
    const conv = await client.conversations.create({ items: [say("my name is Ada")] });
    const first = await client.responses.create({ model, input: "what is my name?", conversation: conv.id });
    t.same(first.conversation, { id: conv.id });
    t.match(JSON.stringify(fake.requests.at(-1)!.body), /my name is Ada/, "the conversation's item reached the provider");
    const items = (await client.conversations.items.list(conv.id, { order: "asc" })).data;
    t.same(items.length, 3, "the initial item, the response's input, its output");
    t.match(items[1], { type: "message", role: "user" });
    t.same(items[2]!.id, first.output[0]!.id, "the output item keeps the id the response shows");
    await client.responses.create({ model, input: "and again?", conversation: { id: conv.id } });
    const sent = JSON.stringify(fake.requests.at(-1)!.body);
    t.match(sent, /what is my name\?/, "the second response saw the first's input");
    t.ok(sent.includes(JSON.stringify(first.output_text).slice(1, -1)), "and its output");
    t.equal((await client.conversations.items.list(conv.id)).data.length, 5);
    t.equal(await refusal(client.responses.create({ model, input: "x", conversation: "conv_doesnotexist000" })), 404, "an unknown conversation");
  });
}

t.test("a function tool round trip through a conversation (its function_call item answers the next input's output)", async (t) => {
  const weather = { type: "function" as const, name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { input: { type: "string" } }, required: ["input"] }, strict: false };
  const conv = await client.conversations.create({});
  const first = await client.responses.create({ model: "claude-haiku-4-5", input: "Weather in Paris?", tools: [weather], conversation: conv.id });
  const call = first.output.find((i) => i.type === "function_call");
  if (!call || call.type !== "function_call") return t.fail(`no function call: ${JSON.stringify(first.output)}`);
  const stored = await client.conversations.items.retrieve(call.id!, { conversation_id: conv.id });
  t.match(stored, { type: "function_call", call_id: call.call_id, name: "get_weather" }, "the call is a conversation item");
  const second = await client.responses.create({ model: "claude-haiku-4-5", input: [{ type: "function_call_output", call_id: call.call_id, output: "sunny, 21C" }], tools: [weather], conversation: conv.id });
  t.equal(second.status, "completed");
  t.match(JSON.stringify(h.fakes.anthropic.requests.at(-1)!.body), /tool_result[^]*sunny, 21C/, "the output went to the provider as the call's result");
  const types = (await client.conversations.items.list(conv.id, { order: "asc" })).data.map((i) => i.type);
  t.same(types.slice(0, first.output.length + 1), ["message", ...first.output.map((i) => i.type)], "the first response's input and output");
  t.equal(types[first.output.length + 1], "function_call_output", "then the second's input");
});

t.test("retention: past OPENAI_CONVERSATION_RETENTION_DAYS after the last change a conversation is gone", async (t) => {
  let offsetMs = 0;
  const troupe = await startTestTroupe({ OPENAI_CONVERSATION_RETENTION_DAYS: "1" }, { clock: { now: () => Date.now() + offsetMs } });
  t.teardown(() => troupe.stop());
  const user = await signup(troupe, "conversation-retention");
  const c = new OpenAI({ baseURL: `http://127.0.0.1:${troupe.port}/openai/v1`, apiKey: user.testKey, maxRetries: 0 });
  const conv = await c.conversations.create({ items: many(2) });
  offsetMs = 20 * 3600_000;
  await c.conversations.items.create(conv.id, { items: many(1, 2) });
  offsetMs = 40 * 3600_000;
  t.equal((await c.conversations.items.list(conv.id)).data.length, 3, "a change counts the day again");
  offsetMs = 45 * 3600_000;
  t.equal(await refusal(c.conversations.retrieve(conv.id)), 404, "a day after its last change it is gone");
  t.match(await callActor(troupe.services.actors, head, conv.id, "expire", {}), { expired: true }, "the reminder's turn erases it");
  t.same(await callActor(troupe.services.actors, page, pageActorId(conv.id, 0), "read", everything), [], "with its items");
});
