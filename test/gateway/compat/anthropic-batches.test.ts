// Anthropic's Message Batches through the official `@anthropic-ai/sdk`,
// unmodified but for baseURL and apiKey: create, retrieve, list, cancel and
// results on a 1,000-request batch (counted at the Anthropic fake: exactly
// 1,000 calls), cancel with canceled results, and environment isolation.
import Anthropic from "@anthropic-ai/sdk";
import t from "tap";
import { startCompatHarness } from "./anthropic-harness.ts";

t.setTimeout(180_000);
// A batch is held to its key's per-minute limit (tested in
// openai-batches-key-limits.test.ts); at the default 600 the 1,000-request
// batch alone would take a minute.
const h = await startCompatHarness({ env: { DEFAULT_RATE_LIMIT_PER_MINUTE: "100000" } });
t.teardown(() => h.stop());
const messagesCalls = () => h.fakes.anthropic.requests.filter((r) => r.path.endsWith("/messages")).length;

const requests = (n: number, tag: string, model = "claude-haiku-4-5") =>
  Array.from({ length: n }, (_, i) => ({ custom_id: `${tag}-${i}`, params: { model, max_tokens: 16, messages: [{ role: "user" as const, content: `request ${i} of ${tag}` }] } }));

async function ended(sdk: Anthropic, id: string, ms = 120_000) {
  const until = Date.now() + ms;
  for (;;) {
    const b = await sdk.messages.batches.retrieve(id);
    if (b.processing_status === "ended" || Date.now() > until) return b;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

t.test("a 1,000-request batch: create, retrieve, list, results; exactly 1,000 calls at the fake", async (t) => {
  const sdk = h.client(h.testKey);
  const before = messagesCalls();
  const created = await sdk.messages.batches.create({ requests: requests(1000, "a") });
  t.equal(created.type, "message_batch");
  t.equal(created.processing_status, "in_progress");
  t.equal(created.request_counts.processing, 1000);
  t.equal(created.results_url, null, "no results before it ended");
  const done = await ended(sdk, created.id);
  t.equal(done.processing_status, "ended");
  t.same(done.request_counts, { processing: 0, succeeded: 1000, errored: 0, canceled: 0, expired: 0 });
  t.ok(done.ended_at, "ended_at");
  t.equal(messagesCalls() - before, 1000, "exactly 1,000 calls reached the Anthropic fake");
  const results: Anthropic.Messages.Batches.MessageBatchIndividualResponse[] = [];
  for await (const r of await sdk.messages.batches.results(created.id)) results.push(r);
  t.equal(results.length, 1000);
  t.same(results.map((r) => r.custom_id), requests(1000, "a").map((r) => r.custom_id), "in request order");
  t.ok(results.every((r) => r.result.type === "succeeded" && r.result.message.type === "message" && r.result.message.role === "assistant"), "each a message");
  const listed: string[] = [];
  for await (const b of sdk.messages.batches.list({ limit: 1 })) listed.push(b.id);
  t.ok(listed.includes(created.id), "listed");
});

t.test("cancel: finished requests kept, the rest canceled", async (t) => {
  const sdk = h.client(h.testKey);
  h.fakes.anthropic.faults.delayMs = 40;
  t.teardown(() => void (h.fakes.anthropic.faults.delayMs = 0));
  const created = await sdk.messages.batches.create({ requests: requests(300, "c") });
  for (;;) {
    const b = await sdk.messages.batches.retrieve(created.id);
    if (b.request_counts.succeeded >= 20) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const canceling = await sdk.messages.batches.cancel(created.id);
  t.equal(canceling.processing_status, "canceling");
  t.ok(canceling.cancel_initiated_at, "cancel_initiated_at");
  const done = await ended(sdk, created.id);
  const { succeeded, canceled } = done.request_counts;
  t.ok(succeeded >= 20 && canceled > 0 && succeeded + canceled === 300, `${succeeded} succeeded, ${canceled} canceled`);
  const types: Record<string, number> = {};
  const ids: string[] = [];
  for await (const r of await sdk.messages.batches.results(created.id)) {
    types[r.result.type] = (types[r.result.type] ?? 0) + 1;
    ids.push(r.custom_id);
  }
  t.same(types, { succeeded, canceled }, "results say which ran");
  t.same(ids, requests(300, "c").map((r) => r.custom_id), "one result per request, with its custom_id, in order");
});

t.test("an errored request is its error; another environment's batch is 404", async (t) => {
  const sdk = h.client(h.testKey);
  const created = await sdk.messages.batches.create({ requests: [...requests(1, "ok"), ...requests(1, "bad", "no-such-model")] });
  const done = await ended(sdk, created.id);
  t.same(done.request_counts, { processing: 0, succeeded: 1, errored: 1, canceled: 0, expired: 0 });
  const results: Anthropic.Messages.Batches.MessageBatchIndividualResponse[] = [];
  for await (const r of await sdk.messages.batches.results(created.id)) results.push(r);
  const bad = results.find((r) => r.custom_id === "bad-0")!;
  t.equal(bad.result.type, "errored");
  t.match(JSON.stringify(bad.result), /not_found_error|no-such-model/);
  const stranger = h.client(h.liveKey);
  t.ok((await stranger.messages.batches.retrieve(created.id).catch((e: unknown) => e)) instanceof Anthropic.NotFoundError, "404 to another environment's key");
  const bodyError = await sdk.messages.batches.create({ requests: [...requests(1, "dup"), ...requests(1, "dup")] }).catch((e: unknown) => e);
  t.ok(bodyError instanceof Anthropic.BadRequestError, "duplicate custom_id is 400");
});
