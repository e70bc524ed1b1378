// The response cache on /openai/v1/responses (docs/guides/caching.md): a
// whole Troupe over real sockets, its router at the OpenAI fake (whose
// request log counts provider calls), a project with the cache on, the
// official `openai` SDK. A stateless call (store: false, no chain, no
// conversation, not background) misses, then hits: a new resp_ id each
// time, the stored usage, the outcome headers, JSON and a replayed stream
// (`responses.create({stream})` and `responses.stream`) alike, the hit
// billed at the cache price with cache "hit". Everything that changes the
// answer is in the key, the stream flag is not. A call that reads or writes
// server-side state reaches the provider every time.
import OpenAI from "openai";
import t from "tap";
import type { Clock } from "../../../core/clock.ts";
import type { UsageRecord } from "../../../providers/usage.ts";
import { eventually, projectWithLiveKey, startFakeOpenAI } from "../../support/billing.ts";
import { midMonthClock } from "../../support/mid-month-clock.ts";
import { signup, startTestTroupe } from "../../support/troupe.ts";

t.setTimeout(90_000);
const base = midMonthClock();
let offsetMs = 0;
const clock: Clock = { now: () => base.now() + offsetMs };

const usage: UsageRecord[] = [];
const { fake, router } = await startFakeOpenAI();
const troupe = await startTestTroupe({}, { router: router(), clock, usage: { record: (u) => void usage.push(u) } });
t.teardown(async () => {
  await troupe.stop();
  await fake.close();
});
const user = await signup(troupe, "responses-cache");
const project = await projectWithLiveKey(troupe, user.token, user.orgId, "responses-cached");
const on = await troupe.request("PATCH", `/v1/projects/${project.projectId}/cache`, { token: user.token, body: { enabled: true } });
if (on.status !== 200) throw new Error(`cache settings: ${on.status} ${on.text}`);
/** Calls that reached the provider fake. */
const providerCalls = () => fake.requests.filter((r) => r.method === "POST").length;

/** The headers of the last answer the SDK received (`responses.stream` keeps none of its own). */
let lastHeaders: Headers | undefined;
const client = new OpenAI({
  baseURL: `${troupe.url}/openai/v1`,
  apiKey: project.liveKey,
  maxRetries: 0,
  fetch: async (url, init) => {
    const res = await fetch(url, init);
    lastHeaders = res.headers;
    return res;
  },
});
const model = "gpt-4.1-mini";
const textOf = (r: OpenAI.Responses.Response) => r.output.flatMap((i) => (i.type === "message" ? i.content.map((p) => (p.type === "output_text" ? p.text : "")) : [])).join("");
const hitOf = (r: { response: Response }) => r.response.headers.get("troupe-cache") === "hit";

t.test("stateless JSON: a miss, then a hit with a new id, the stored usage and no provider call", async (t) => {
  const ask = { model, input: "What is a haiku?", instructions: "be brief", store: false, max_output_tokens: 200 } as const;
  const before = providerCalls();
  const miss = await client.responses.create(ask).withResponse();
  t.equal(miss.response.headers.get("troupe-cache"), "miss");
  t.equal(miss.response.headers.get("troupe-cache-match"), null, "a miss names no match");
  t.equal(providerCalls() - before, 1);
  offsetMs += 4_000;
  const hit = await eventually(() => client.responses.create(ask).withResponse(), hitOf);
  t.equal(hit.response.headers.get("troupe-cache"), "hit");
  t.equal(hit.response.headers.get("troupe-cache-match"), "exact");
  t.equal(hit.response.headers.get("troupe-cache-age"), "4", "whole seconds on the injected clock");
  t.equal(providerCalls() - before, 1, "no second provider call");
  t.match(hit.data.id, /^resp_[0-9A-Z]{26}$/);
  t.not(hit.data.id, miss.data.id, "a response of its own");
  t.equal(hit.data.object, "response");
  t.equal(hit.data.status, "completed");
  t.match(hit.data, { store: false }, "a stateless response");
  t.equal(hit.data.instructions, "be brief");
  t.equal(hit.data.output_text, miss.data.output_text, "the SDK's output_text: the stored answer");
  t.ok(hit.data.output_text.length > 0);
  t.same(hit.data.usage, miss.data.usage, "usage as the stored answer reports it");
  t.not(hit.data.output[0]?.id, miss.data.output[0]?.id, "item ids of the new response");

  const billed = await eventually(
    async () => usage.filter((u) => u.request_id === hit.request_id),
    (records) => records.length > 0,
  );
  t.match(billed, [{ category: "chat", model, cache: "hit", cost_nanos: 0, output_tokens: miss.data.usage?.output_tokens }], "billed at the cache price (0 by default), cache: hit");
  const live = usage.filter((u) => u.request_id === miss.request_id);
  t.equal(live.length, 1);
  t.equal(live[0]?.cache, undefined, "the miss is a provider call");
  t.ok((live[0]?.cost_nanos ?? 0) > 0);
});

t.test("a stored JSON answer replays as a Responses stream the SDK parses: create({stream}) and responses.stream", async (t) => {
  const ask = { model, input: "Name three rivers.", store: false, max_output_tokens: 200 } as const;
  const before = providerCalls();
  const json = await client.responses.create(ask).withResponse();
  t.equal(json.response.headers.get("troupe-cache"), "miss");
  const stored = json.data.output_text;
  t.ok(stored.length > 0);

  const streamed = await eventually(() => client.responses.create({ ...ask, stream: true }).withResponse(), hitOf);
  t.equal(streamed.response.headers.get("troupe-cache"), "hit", "the SSE head says hit");
  t.equal(streamed.response.headers.get("troupe-cache-match"), "exact");
  t.ok(streamed.response.headers.get("troupe-cache-age") !== null);
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const e of streamed.data) events.push(e);
  t.same(events.map((e) => e.sequence_number), events.map((_, i) => i), "sequence_number counts from 0");
  t.equal(events[0]?.type, "response.created");
  t.equal(events[1]?.type, "response.in_progress");
  const deltas = events.flatMap((e) => (e.type === "response.output_text.delta" ? [e.delta] : []));
  t.ok(deltas.length > 1, `replayed as deltas (${deltas.length})`);
  t.equal(deltas.join(""), stored, "the deltas are the stored text");
  const last = events.at(-1);
  t.equal(last?.type, "response.completed");
  if (last?.type !== "response.completed") return;
  t.not(last.response.id, json.data.id, "a new response id");
  t.same(last.response.usage, json.data.usage, "the stored usage figures");

  const stream = client.responses.stream(ask);
  const final = await stream.finalResponse();
  t.equal(lastHeaders?.get("troupe-cache"), "hit", "responses.stream: a hit");
  t.equal(lastHeaders?.get("troupe-cache-match"), "exact");
  t.equal(final.status, "completed");
  t.equal(textOf(final), stored, "responses.stream's final response: the stored text");
  t.equal(providerCalls() - before, 1, "one provider call for all three");
});

t.test("a finished stream is stored and served as JSON", async (t) => {
  const ask = { model, input: "Describe the sea.", store: false, max_output_tokens: 300 } as const;
  const before = providerCalls();
  const live = await client.responses.create({ ...ask, stream: true }).withResponse();
  t.equal(live.response.headers.get("troupe-cache"), "miss", "the SSE head of a miss");
  let text = "";
  for await (const e of live.data) if (e.type === "response.output_text.delta") text += e.delta;
  const json = await eventually(() => client.responses.create(ask).withResponse(), hitOf);
  t.equal(json.response.headers.get("troupe-cache-match"), "exact");
  t.equal(json.data.output_text, text);
  t.equal(providerCalls() - before, 1);
});

t.test("the key: what changes the answer is in it; refresh and bypass as on the other mounts", async (t) => {
  const ask = { model, input: "Count to three.", store: false, temperature: 0.2 } as const;
  await client.responses.create(ask);
  await eventually(() => client.responses.create(ask).withResponse(), hitOf);
  const variants: [string, OpenAI.Responses.ResponseCreateParamsNonStreaming][] = [
    ["temperature", { ...ask, temperature: 0.3 }],
    ["instructions", { ...ask, instructions: "in French" }],
    ["input", { ...ask, input: "Count to four." }],
    ["max_output_tokens", { ...ask, max_output_tokens: 50 }],
    ["top_p", { ...ask, top_p: 0.5 }],
    ["text.format", { ...ask, text: { format: { type: "json_object" } } }],
    ["tools", { ...ask, tools: [{ type: "function", name: "count", parameters: { type: "object", properties: {} }, strict: false }] }],
  ];
  for (const [name, variant] of variants) {
    const r = await client.responses.create(variant).withResponse();
    t.equal(r.response.headers.get("troupe-cache"), "miss", `another ${name}: another key`);
  }
  const before = providerCalls();
  const refreshed = await client.responses.create(ask, { headers: { "troupe-cache": "refresh" } }).withResponse();
  t.equal(refreshed.response.headers.get("troupe-cache"), "refresh");
  const bypassed = await client.responses.create(ask, { headers: { "troupe-cache": "bypass" } }).withResponse();
  t.equal(bypassed.response.headers.get("troupe-cache"), "bypass");
  t.equal(bypassed.response.headers.get("troupe-cache-match"), null);
  t.equal(providerCalls() - before, 2, "refresh and bypass reach the provider");
});

t.test("anything stateful is never cached: each identical call reaches the provider", async (t) => {
  const twice = async (name: string, make: () => Promise<OpenAI.Responses.Response>) => {
    const before = providerCalls();
    await make();
    // Long enough for a stored answer to have landed (cache writes are off the answer's path).
    await new Promise((r) => setTimeout(r, 150));
    const second = await make().then(() => lastHeaders);
    t.equal(providerCalls() - before, 2, `${name}: the second call reached the provider`);
    t.equal(second?.get("troupe-cache"), null, `${name}: no cache outcome`);
  };
  await twice("store left out (stored by default)", () => client.responses.create({ model, input: "Stored by default." }));
  await twice("store: true", () => client.responses.create({ model, input: "Stored on purpose.", store: true }));
  await twice("store: true, streamed", async () => {
    const stream = client.responses.stream({ model, input: "Stored and streamed.", store: true });
    return stream.finalResponse();
  });
  const first = await client.responses.create({ model, input: "Remember the number 7." });
  await twice("previous_response_id", () => client.responses.create({ model, input: "Which number?", previous_response_id: first.id, store: false }));
  await twice("item_reference", () => client.responses.create({ model, input: [{ type: "item_reference", id: first.output[0]!.id! }, { role: "user", content: "Again." }], store: false }));
  const conversation = await troupe.request("POST", "/openai/v1/conversations", { token: project.liveKey, body: {} });
  t.equal(conversation.status, 200, conversation.text);
  const conversationId = (conversation.body as { id: string }).id;
  await twice("conversation", () => client.responses.create({ model, input: "In a conversation.", conversation: conversationId, store: false }));

  const before = providerCalls();
  for (let i = 0; i < 2; i++) {
    const queued = await client.responses.create({ model, input: "In the background.", background: true });
    const done = await eventually(() => client.responses.retrieve(queued.id), (r) => r.status === "completed");
    t.equal(done.status, "completed");
  }
  t.equal(providerCalls() - before, 2, "background: both runs reached the provider");
});
