// Background responses (`background: true`) with the `openai` Node SDK,
// unmodified but for baseURL and apiKey, against an embedded Troupe and the
// OpenAI fake streaming slowly: create answers queued at once, retrieve
// polls it to completed, a resumed stream (`starting_after`) gets exactly
// the events after N while it runs and after it ended, cancel mid-run closes
// the upstream connection and ends it cancelled, and the response.* events
// reach the organization's webhook signed, once each.
import t from "tap";
import OpenAI from "openai";
import { startWebhookReceiver } from "../../fakes/webhook-receiver.ts";
import { startFakeProviders } from "../../support/fake-providers.ts";
import { modelsByProvider } from "./openai-harness.ts";
import { waitFor } from "../../support/net.ts";
import { signup, startTestTroupe, str } from "../../support/troupe.ts";

t.setTimeout(120_000);
const providers = await startFakeProviders(["openai", "anthropic", "gemini"]);
const openai = providers.fakes.openai;
const troupe = await startTestTroupe({ OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost", WEBHOOK_RETRY_SCALE: "0.0002" }, { router: providers.router, usage: { record: () => undefined } });
t.teardown(async () => {
  await troupe.stop();
  await providers.close();
});
const receiver = await startWebhookReceiver();
t.teardown(() => receiver.close());
const user = await signup(troupe, "responses-background");
const hook = await troupe.request("POST", "/v1/webhooks", {
  token: user.testKey,
  body: { url: `${receiver.url}/hook`, events: ["response.completed", "response.failed", "response.cancelled", "response.incomplete"] },
});
if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${hook.text}`);
receiver.secret = str(hook.body, "secret");
const client = new OpenAI({ baseURL: `http://127.0.0.1:${troupe.port}/openai/v1`, apiKey: user.testKey, maxRetries: 0 });
const model = "gpt-4.1-mini";
const longAsk = "tell me a long story about a lighthouse keeper and the sea birds that visit every morning at dawn";

type Event = { type: string; sequence_number: number };
async function collect(stream: AsyncIterable<Event>): Promise<Event[]> {
  const events: Event[] = [];
  for await (const e of stream) events.push(e);
  return events;
}

t.test("create answers queued at once; retrieve polls it to completed; streams resume after N, live and after the end", async (t) => {
  openai.faults.eventDelayMs = 60;
  t.teardown(() => void (openai.faults.eventDelayMs = 0));
  const started = Date.now();
  const queued = await client.responses.create({ model, input: longAsk, background: true });
  t.equal(queued.status, "queued");
  t.equal(queued.background, true);
  t.ok(Date.now() - started < 1_000, "answered before the provider finished");

  // While it runs: a stream from the start, and one resumed after event 3.
  const whole = collect(await client.responses.retrieve(queued.id, { stream: true }));
  const resumed = collect(await client.responses.retrieve(queued.id, { stream: true, starting_after: 3 }));
  let seen = queued;
  const statuses = new Set<string>();
  while (seen.status === "queued" || seen.status === "in_progress") {
    statuses.add(seen.status);
    await new Promise((r) => setTimeout(r, 50));
    seen = await client.responses.retrieve(queued.id);
  }
  t.ok(statuses.has("in_progress"), "seen in progress while it ran");
  t.equal(seen.status, "completed");
  t.ok(seen.output_text.length > 0, "it has text");
  t.ok(seen.usage && seen.usage.output_tokens > 0, "usage counted");

  const all = await whole;
  t.same(all.map((e) => e.sequence_number), all.map((_, i) => i), "every event once, in order from 0");
  t.equal(all[0]?.type, "response.created");
  t.equal(all.at(-1)?.type, "response.completed");
  const deltas = all.filter((e) => e.type === "response.output_text.delta").length;
  t.ok(deltas > 3, `the deltas as the provider sent them (${deltas})`);
  t.same((await resumed).map((e) => e.sequence_number), all.slice(4).map((e) => e.sequence_number), "resumed live: exactly the events after 3");
  const after = await collect(await client.responses.retrieve(queued.id, { stream: true, starting_after: all.length - 3 }));
  t.same(after, all.slice(-2), "resumed after the end: the same last events");

  await waitFor(async () => receiver.received.some((d) => d.type === "response.completed" && (d.body.data as { response: { id: string } }).response.id === queued.id), 10_000, "response.completed");
});

t.test("cancel mid-run stops the provider call, ends cancelled, is idempotent; a response not run in the background is a 400", async (t) => {
  openai.faults.eventDelayMs = 300;
  t.teardown(() => void (openai.faults.eventDelayMs = 0));
  const before = openai.requests.length;
  const queued = await client.responses.create({ model, input: longAsk, background: true });
  await waitFor(async () => (await client.responses.retrieve(queued.id)).status === "in_progress" && openai.requests.length > before, 5_000, "in progress");
  const upstream = openai.requests[before]!;
  const cancelledAt = Date.now();
  const cancelled = await client.responses.cancel(queued.id);
  t.equal(cancelled.status, "cancelled");
  t.equal(await openai.outcome(upstream), "closed early", "the upstream connection was closed");
  const closedMs = Date.now() - cancelledAt;
  t.comment(`cancel → upstream connection closed: ${closedMs} ms`);
  t.ok(closedMs < 1_000, "within a second");
  t.equal((await client.responses.cancel(queued.id)).status, "cancelled", "cancelling again answers it cancelled");
  // The run's own end (if its last events were on their way) does not overwrite the cancel.
  await new Promise((r) => setTimeout(r, 500));
  t.equal((await client.responses.retrieve(queued.id)).status, "cancelled");
  const events = await collect(await client.responses.retrieve(queued.id, { stream: true }));
  t.equal(events.at(-1)?.type, "response.cancelled", "its stream ends with response.cancelled");

  const plain = await client.responses.create({ model, input: "hi" });
  const refused = await client.responses.cancel(plain.id).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(refused instanceof OpenAI.APIError && refused.status === 400, "a plain response cannot be cancelled");
  t.match(JSON.stringify((refused as InstanceType<typeof OpenAI.APIError>).error), /background/);

  // A finished background response is answered as it is.
  openai.faults.eventDelayMs = 0;
  const quick = await client.responses.create({ model, input: "hi", background: true });
  await waitFor(async () => (await client.responses.retrieve(quick.id)).status === "completed", 5_000, "completed");
  t.equal((await client.responses.cancel(quick.id)).status, "completed");

  await waitFor(async () => receiver.received.some((d) => d.type === "response.cancelled"), 10_000, "response.cancelled");
});

t.test("every provider, and background with stream: true", async (t) => {
  for (const [provider, name] of Object.entries({ ...modelsByProvider, simulated: "simulated-chat" })) {
    const queued = await client.responses.create({ model: name, input: "hello there", background: true });
    let seen = queued;
    await waitFor(async () => ((seen = await client.responses.retrieve(queued.id)), seen.status === "completed"), 10_000, `${provider} completed`);
    t.match(seen.output_text, provider === "simulated" ? /\S/ : "Echo: hello there", `${provider}: its answer`);
  }
  const events = await collect(await client.responses.create({ model, input: "hello stream", background: true, stream: true }));
  t.equal(events[0]?.type, "response.created");
  t.equal(events.at(-1)?.type, "response.completed");
  const id = (events.at(-1) as unknown as { response: { id: string } }).response.id;
  const stored = await client.responses.retrieve(id);
  t.match(stored, { status: "completed", background: true, output_text: "Echo: hello stream" }, "the streamed one is retrievable, background");
});

t.test("another organization's key: a background response is 404 to retrieve, stream and cancel", async (t) => {
  openai.faults.eventDelayMs = 100;
  t.teardown(() => void (openai.faults.eventDelayMs = 0));
  const mine = await client.responses.create({ model, input: longAsk, background: true });
  const stranger = await signup(troupe, "responses-background-stranger");
  const other = new OpenAI({ baseURL: `http://127.0.0.1:${troupe.port}/openai/v1`, apiKey: stranger.testKey, maxRetries: 0 });
  const status = (p: Promise<unknown>) => p.then(() => 200, (e: unknown) => (e instanceof OpenAI.APIError ? e.status : String(e)));
  t.equal(await status(other.responses.retrieve(mine.id)), 404, "retrieve");
  t.equal(await status(other.responses.retrieve(mine.id, { stream: true }).then(collect)), 404, "stream");
  t.equal(await status(other.responses.cancel(mine.id)), 404, "cancel");
  t.not((await client.responses.retrieve(mine.id)).status, "cancelled", "still running for its owner");
  await client.responses.cancel(mine.id);
});

t.test("ends incomplete (max_output_tokens) and failed (the provider's error), each announced", async (t) => {
  const short = await client.responses.create({ model, input: longAsk, max_output_tokens: 3, background: true });
  let seen = short;
  await waitFor(async () => ((seen = await client.responses.retrieve(short.id)), seen.status !== "queued" && seen.status !== "in_progress"), 10_000, "ended");
  t.match(seen, { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } });
  openai.faults.queue.push({ kind: "status", status: 400, message: "the fake refuses this one" });
  const refused = await client.responses.create({ model, input: "hi", background: true });
  await waitFor(async () => ((seen = await client.responses.retrieve(refused.id)), seen.status !== "queued" && seen.status !== "in_progress"), 10_000, "ended");
  t.equal(seen.status, "failed");
  t.match(seen.error, { message: /refuses/ }, "the provider's error, in error");
  const events = await collect(await client.responses.retrieve(refused.id, { stream: true }));
  t.equal(events.at(-1)?.type, "response.failed", "its stream ends with response.failed");
  const announced = (type: string, id: string) => receiver.received.some((d) => d.type === type && (d.body.data as { response: { id: string } }).response.id === id);
  await waitFor(async () => announced("response.incomplete", short.id) && announced("response.failed", refused.id), 10_000, "response.incomplete and response.failed");
});

t.test("a background response naming a conversation reads its items and appends its own", async (t) => {
  const conversation = await client.conversations.create({ items: [{ type: "message", role: "user", content: "my name is Ada" }] });
  const queued = await client.responses.create({ model, input: "what is my name?", conversation: conversation.id, background: true });
  let seen = queued;
  await waitFor(async () => ((seen = await client.responses.retrieve(queued.id)), seen.status === "completed"), 10_000, "completed");
  t.ok(JSON.stringify(openai.requests.at(-1)?.body).includes("my name is Ada"), "the conversation's items were sent");
  await waitFor(async () => (await client.conversations.items.list(conversation.id)).data.length === 3, 5_000, "three items");
  const items = (await client.conversations.items.list(conversation.id, { order: "asc" })).data;
  t.same(items.map((i) => i.type), ["message", "message", "message"]);
  t.match(items.at(-1), { role: "assistant" }, "its answer appended last");
});

t.test("deleting a running background response stops its provider call", async (t) => {
  openai.faults.eventDelayMs = 300;
  t.teardown(() => void (openai.faults.eventDelayMs = 0));
  const before = openai.requests.length;
  const queued = await client.responses.create({ model, input: longAsk, background: true });
  await waitFor(async () => openai.requests.length > before, 5_000, "the provider call");
  const deletedAt = Date.now();
  t.match(await client.responses.delete(queued.id), { id: queued.id, deleted: true });
  t.equal(await openai.outcome(openai.requests[before]!), "closed early", "the upstream connection was closed");
  // Sooner than the provider timeout (5 s) would close it.
  t.ok(Date.now() - deletedAt < 1_000, `within a second (${Date.now() - deletedAt} ms)`);
  const gone = await client.responses.retrieve(queued.id).then(
    () => 200,
    (e: unknown) => (e instanceof OpenAI.APIError ? e.status : 0),
  );
  t.equal(gone, 404);
});

t.test("the webhooks: signed, once per response and type, only for background responses", async (t) => {
  await new Promise((r) => setTimeout(r, 500));
  const response = receiver.received.filter((d) => d.type.startsWith("response."));
  t.ok(response.length >= 3, `${response.length} response.* deliveries`);
  t.same(response.filter((d) => !d.verified).map((d) => d.eventId), [], "every one verified");
  const ids = response.map((d) => d.eventId);
  t.same(ids.filter((id, i) => ids.indexOf(id) !== i), [], "none delivered twice");
  for (const d of response) t.equal((d.body.data as { response: { background: boolean } }).response.background, true);
});
