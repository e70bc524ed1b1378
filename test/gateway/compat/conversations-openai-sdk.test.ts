// The official `openai` SDK, unmodified, against /openai/v1/conversations:
// conversations.create / retrieve / update / delete and conversations.items
// create / list / retrieve / delete, pages in both orders (across the item
// pages the actors keep), OpenAI's limits (20 items a call, 16 metadata
// pairs) and the configured bounds of a conversation, as 400s naming the field.
import t from "tap";
import OpenAI from "openai";
import { startCompatHarness } from "./openai-harness.ts";
import { ITEMS_PER_PAGE } from "../../../actors/conversation-items/conversation-items-actor.ts";

t.setTimeout(90_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client();

/** The SDK's APIError status and param, or "resolved". */
const refusal = (call: Promise<unknown>) =>
  call.then(
    () => "resolved" as const,
    (e: unknown) => (e instanceof OpenAI.APIError ? { status: e.status, param: e.param ?? null } : String(e)),
  );
const say = (text: string, role: "user" | "assistant" = "user") => ({ type: "message" as const, role, content: text });
const textOf = (item: OpenAI.Conversations.ConversationItem) => (item.type === "message" ? item.content.map((p) => ("text" in p ? p.text : "")).join("") : "");

t.test("create with items and metadata, retrieve, update, delete", async (t) => {
  const conv = await client.conversations.create({ items: [say("hello"), { type: "message", role: "developer", content: [{ type: "input_text", text: "be brief" }] }], metadata: { topic: "demo" } });
  t.match(conv.id, /^conv_[0-9a-z]{26}$/);
  t.equal(conv.object, "conversation");
  t.same(conv.metadata, { topic: "demo" });
  t.ok(Math.abs(conv.created_at - Date.now() / 1000) < 60, "created_at in Unix seconds");
  t.same(await client.conversations.retrieve(conv.id), conv, "retrieve answers the same conversation");
  const updated = await client.conversations.update(conv.id, { metadata: { topic: "changed", more: "yes" } });
  t.same(updated.metadata, { topic: "changed", more: "yes" });
  t.same((await client.conversations.retrieve(conv.id)).metadata, { topic: "changed", more: "yes" }, "the update is stored");

  const items = await client.conversations.items.list(conv.id, { order: "asc" });
  t.same(items.data.map((i) => i.type), ["message", "message"]);
  t.match(items.data[0], { type: "message", role: "user", status: "completed", id: /^msg_/, content: [{ type: "input_text", text: "hello" }] });
  t.match(items.data[1], { role: "developer", content: [{ type: "input_text", text: "be brief" }] });

  const gone = await client.conversations.delete(conv.id);
  t.same(gone, { id: conv.id, object: "conversation.deleted", deleted: true });
  t.match(await refusal(client.conversations.retrieve(conv.id)), { status: 404 }, "gone after delete");
  t.match(await refusal(client.conversations.items.list(conv.id)), { status: 404 }, "its items too");
  t.match(await refusal(client.conversations.delete(conv.id)), { status: 404 }, "a second delete is 404");
  t.match(await refusal(client.conversations.retrieve("conv_nosuchconversation")), { status: 404 });
});

t.test("items: create, retrieve, delete (answers the conversation); every item type", async (t) => {
  const conv = await client.conversations.create({});
  const created = await client.conversations.items.create(conv.id, {
    items: [
      say("Weather in Paris?"),
      { type: "function_call", call_id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
      { type: "function_call_output", call_id: "call_1", output: "sunny" },
      { type: "reasoning", id: "rs_given", summary: [{ type: "summary_text", text: "thought" }], encrypted_content: "opaque" },
      say("It is sunny.", "assistant"),
    ],
  });
  t.equal(created.object, "list");
  t.same(created.data.map((i) => i.type), ["message", "function_call", "function_call_output", "reasoning", "message"]);
  t.match(created.data.map((i) => i.id), [/^msg_/, /^fc_/, /^fco_/, "rs_given", /^msg_/]);
  t.match(created.data[4], { role: "assistant", content: [{ type: "output_text", text: "It is sunny.", annotations: [] }] });
  t.equal(created.first_id, created.data[0]!.id);
  t.equal(created.last_id, created.data[4]!.id);
  t.equal(created.has_more, false);

  const call = await client.conversations.items.retrieve(created.data[1]!.id!, { conversation_id: conv.id });
  t.match(call, { type: "function_call", call_id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}', status: "completed" });
  const after = await client.conversations.items.delete(created.data[1]!.id!, { conversation_id: conv.id });
  t.match(after, { id: conv.id, object: "conversation" }, "delete answers the conversation");
  t.match(await refusal(client.conversations.items.retrieve(created.data[1]!.id!, { conversation_id: conv.id })), { status: 404 }, "the item is gone");
  t.match(await refusal(client.conversations.items.delete(created.data[1]!.id!, { conversation_id: conv.id })), { status: 404 }, "a second delete is 404");
  const left = await client.conversations.items.list(conv.id, { order: "asc" });
  t.same(left.data.map((i) => i.type), ["message", "function_call_output", "reasoning", "message"], "the others stay in order");
  t.match(await refusal(client.conversations.items.create(conv.id, { items: [{ type: "reasoning", id: "rs_given", summary: [] }] })), { status: 400, param: "items[0].id" }, "an id already in the conversation");
});

t.test(`pages in both orders, across the actors' item pages (${ITEMS_PER_PAGE} items each)`, async (t) => {
  const conv = await client.conversations.create({ items: Array.from({ length: 20 }, (_, i) => say(`m${i}`)) });
  await client.conversations.items.create(conv.id, { items: Array.from({ length: 20 }, (_, i) => say(`m${20 + i}`)) });
  await client.conversations.items.create(conv.id, { items: Array.from({ length: 5 }, (_, i) => say(`m${40 + i}`)) });
  const all = Array.from({ length: 45 }, (_, i) => `m${i}`);

  const asc: string[] = [];
  for await (const item of client.conversations.items.list(conv.id, { order: "asc", limit: 7 })) asc.push(textOf(item));
  t.same(asc, all, "asc, 7 a page, the SDK following after=last_id");
  const desc: string[] = [];
  for await (const item of client.conversations.items.list(conv.id, { limit: 10 })) desc.push(textOf(item));
  t.same(desc, [...all].reverse(), "desc is the default");

  const first = await client.conversations.items.list(conv.id, { order: "asc", limit: 32 });
  t.equal(first.data.length, 32);
  t.equal(first.has_more, true);
  t.equal(first.last_id, first.data[31]!.id);
  const second = await client.conversations.items.list(conv.id, { order: "asc", limit: 100, after: first.last_id });
  t.same(second.data.map(textOf), all.slice(32));
  t.equal(second.has_more, false);
  const exact = await client.conversations.items.list(conv.id, { order: "asc", limit: 13, after: first.last_id });
  t.same([exact.data.length, exact.has_more], [13, false], "a page holding exactly what is left has no more");
  const back = await client.conversations.items.list(conv.id, { order: "desc", limit: 3, after: second.data[0]!.id });
  t.same(back.data.map(textOf), ["m31", "m30", "m29"], "desc after an item: the older ones");
  t.match(await refusal(client.conversations.items.list(conv.id, { limit: 101 })), { status: 400 });
  t.match(await refusal(client.conversations.items.list(conv.id, { limit: 0 })), { status: 400 });
  t.match(await refusal(client.conversations.items.list(conv.id, { after: "msg_notinthisconversation" })), { status: 404 });
  const withInclude = await client.conversations.items.list(conv.id, { limit: 1, include: ["message.input_image.image_url"] });
  t.equal(withInclude.data.length, 1, "include is taken");
});

t.test("OpenAI's limits: 20 items a call, 16 metadata pairs, key and value lengths", async (t) => {
  const items21 = Array.from({ length: 21 }, (_, i) => say(`x${i}`));
  t.match(await refusal(client.conversations.create({ items: items21 })), { status: 400, param: "items" });
  const conv = await client.conversations.create({ items: items21.slice(0, 20) });
  t.match(await refusal(client.conversations.items.create(conv.id, { items: items21 })), { status: 400, param: "items" });
  t.match(await refusal(client.conversations.items.create(conv.id, { items: [] })), { status: 400, param: "items" });
  const pairs = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, "v"]));
  t.match(await refusal(client.conversations.create({ metadata: pairs(17) })), { status: 400, param: "metadata" });
  t.equal((await client.conversations.create({ metadata: pairs(16) })).object, "conversation", "16 pairs are fine");
  t.match(await refusal(client.conversations.create({ metadata: { ["k".repeat(65)]: "v" } })), { status: 400 });
  t.match(await refusal(client.conversations.update(conv.id, { metadata: { k: "v".repeat(513) } })), { status: 400 });
  t.match(await refusal(client.conversations.items.create(conv.id, { items: [{ type: "message", role: "critic", content: "no" } as never] })), { status: 400 });
  t.match(await refusal(client.conversations.items.create(conv.id, { items: [{ type: "item_reference", id: "msg_x" }] })), { status: 400 });
  t.equal((await client.conversations.items.list(conv.id, { limit: 100 })).data.length, 20, "nothing refused was stored");
});

t.test("the configured bounds of a conversation: items and bytes, 400 naming the items", async (t) => {
  const { startTestTroupe, signup } = await import("../../support/troupe.ts");
  const { startFakeProviders, allFakeProviders } = await import("../../support/fake-providers.ts");
  const providers = await startFakeProviders(allFakeProviders);
  const small = await startTestTroupe({ OPENAI_CONVERSATION_MAX_ITEMS: "5", OPENAI_CONVERSATION_MAX_BYTES: "2048" }, { router: providers.router, usage: { record: () => undefined } });
  t.teardown(async () => (await small.stop(), await providers.close()));
  const user = await signup(small, "conversation-bounds");
  const c = new OpenAI({ baseURL: `http://127.0.0.1:${small.port}/openai/v1`, apiKey: user.testKey, maxRetries: 0 });
  const listed = async () => (await small.services.store.page(`org-openai-conversations:${user.orgId}`, 100)).members.length;
  t.match(await refusal(c.conversations.create({ items: Array.from({ length: 6 }, (_, i) => say(`i${i}`)) })), { status: 400, param: "items" }, "initial items past the bound");
  t.equal(await listed(), 0, "a refused create leaves nothing listed for the organization's erasure");
  const conv = await c.conversations.create({ items: [say("a"), say("b"), say("c")] });
  t.equal(await listed(), 1);
  const refused = await refusal(c.conversations.items.create(conv.id, { items: [say("d"), say("e"), say("f")] }));
  t.match(refused, { status: 400, param: "items" }, "a sixth item");
  t.equal((await c.conversations.items.list(conv.id)).data.length, 3, "nothing of the refused append is stored");
  await c.conversations.items.create(conv.id, { items: [say("d"), say("e")] });
  t.equal((await c.conversations.items.list(conv.id)).data.length, 5, "up to the bound");
  const big = await c.conversations.create({});
  t.match(await refusal(c.conversations.items.create(big.id, { items: [say("x".repeat(2100))] })), { status: 400, param: "items" }, "past the byte bound");
  const calls = providers.fakes.openai.requests.length;
  t.match(await refusal(c.responses.create({ model: "gpt-4.1-mini", input: "one more", conversation: conv.id })), { status: 400, param: "conversation" }, "a response continuing a full conversation");
  t.equal(providers.fakes.openai.requests.length, calls, "refused before any provider call");
  t.equal((await c.conversations.items.list(conv.id)).data.length, 5, "and nothing appended");
  const first = await c.conversations.items.list(conv.id, { order: "asc" });
  await c.conversations.items.delete(first.data[0]!.id!, { conversation_id: conv.id });
  t.equal((await c.conversations.items.create(conv.id, { items: [say("g")] })).data.length, 1, "a deleted item frees its place");
});
