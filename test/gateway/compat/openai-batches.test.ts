// OpenAI's Files and Batch APIs through the official `openai` SDK,
// unmodified but for baseURL and apiKey: a 1,000-line batch on a fake
// provider (counted at the fake: exactly 1,000 calls, each line billed once)
// and on the simulated provider, cancel mid-batch, list paging, JSONL
// validation with line numbers, environment isolation, and a batch paused on
// its project's hard budget.
import OpenAI, { toFile } from "openai";
import t from "tap";
import type { UsageRecord } from "../../../providers/usage.ts";
import { eventually, projectWithLiveKey } from "../../support/billing.ts";
import { startFakeProviders } from "../../support/fake-providers.ts";
import { signup, startTestTroupe } from "../../support/troupe.ts";

t.setTimeout(240_000);
const providers = await startFakeProviders(["openai"]);
const usage: UsageRecord[] = [];
// The key's per-minute limit raised far above the 2,600 lines this file runs
// on one key: a batch is held to its key's limits (the default 600 a minute
// made the two 1,000-line batches take a minute each and the second miss its
// deadline); those limits are tested in openai-batches-key-limits.test.ts.
const troupe = await startTestTroupe(
  { BATCH_CONCURRENCY: "16", BATCH_WATCHDOG_MS: "500", DEFAULT_RATE_LIMIT_PER_MINUTE: "100000" },
  { router: providers.router, usage: { record: (u) => void usage.push(u) } },
);
t.teardown(async () => {
  await troupe.stop();
  await providers.close();
});
const user = await signup(troupe, "batches");
const baseURL = `http://127.0.0.1:${troupe.port}/openai/v1`;
const client = (apiKey = user.testKey) => new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const fake = providers.fakes.openai;
const chatCalls = () => fake.requests.filter((r) => r.path.endsWith("/chat/completions")).length;

const chatLines = (n: number, model: string, tag: string) =>
  Array.from({ length: n }, (_, i) => JSON.stringify({ custom_id: `${tag}-${i}`, method: "POST", url: "/v1/chat/completions", body: { model, messages: [{ role: "user", content: `line ${i} of ${tag}` }], max_tokens: 20 } })).join("\n") + "\n";

async function upload(sdk: OpenAI, text: string) {
  return sdk.files.create({ file: await toFile(Buffer.from(text), "input.jsonl"), purpose: "batch" });
}

async function finished(sdk: OpenAI, id: string, ms = 120_000) {
  const until = Date.now() + ms;
  for (;;) {
    const b = await sdk.batches.retrieve(id);
    if (["completed", "failed", "cancelled", "expired"].includes(b.status) || Date.now() > until) return b;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function outputLines(sdk: OpenAI, fileId: string | null | undefined) {
  if (!fileId) return [];
  const text = await (await sdk.files.content(fileId)).text();
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as { id: string; custom_id: string; response: { status_code: number; request_id: string; body: { object?: string; choices?: unknown[] } }; error: unknown });
}

t.test("a 1,000-line batch on a fake provider: 1,000 calls at the fake, every line answered and billed once", async (t) => {
  const sdk = client();
  const file = await upload(sdk, chatLines(1000, "gpt-4.1-mini", "fake"));
  t.equal(file.purpose, "batch");
  t.equal((await sdk.files.retrieve(file.id)).bytes, file.bytes);
  const before = chatCalls();
  const created = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h", metadata: { run: "fake" } });
  t.equal(created.status, "in_progress");
  t.same(created.request_counts, { total: 1000, completed: 0, failed: 0 });
  const done = await finished(sdk, created.id);
  t.equal(done.status, "completed");
  t.same(done.request_counts, { total: 1000, completed: 1000, failed: 0 });
  t.same(done.metadata, { run: "fake" });
  t.ok(done.completed_at && done.in_progress_at && done.finalizing_at, "timestamps set");
  t.ok(done.created_at <= done.in_progress_at! && done.in_progress_at! <= done.finalizing_at! && done.finalizing_at! <= done.completed_at!, "in status order");
  t.equal(done.expires_at, done.created_at + 24 * 3600, "expires at the end of the completion window");
  t.strictSame(
    { failed_at: done.failed_at, expired_at: done.expired_at, cancelling_at: done.cancelling_at, cancelled_at: done.cancelled_at },
    { failed_at: null, expired_at: null, cancelling_at: null, cancelled_at: null },
    "the statuses it never entered are null, and every timestamp is shown",
  );
  t.equal(done.error_file_id, null, "no error file");
  t.equal(chatCalls() - before, 1000, "exactly 1,000 calls reached the fake");
  const lines = await outputLines(sdk, done.output_file_id);
  t.equal(lines.length, 1000);
  t.same(new Set(lines.map((l) => l.custom_id)).size, 1000, "each custom_id once");
  t.ok(lines.every((l) => l.response.status_code === 200 && l.response.body.object === "chat.completion" && l.error === null), "each a chat.completion");
  t.equal(lines[0]!.response.request_id, `batch:${created.id}:line:${lines[0]!.custom_id.split("-")[1]}`);
  const billed = await eventually(
    async () => usage.filter((u) => u.request_id.startsWith(`batch:${created.id}:line:`)),
    (u) => u.length >= 1000,
  );
  t.equal(billed.length, 1000, "1,000 usage records");
  t.equal(new Set(billed.map((u) => u.request_id)).size, 1000, "one per line");
});

t.test("a 1,000-line batch on the simulated provider", async (t) => {
  const sdk = client();
  const file = await upload(sdk, chatLines(1000, "simulated-chat", "sim"));
  const created = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  const done = await finished(sdk, created.id);
  t.equal(done.status, "completed");
  t.same(done.request_counts, { total: 1000, completed: 1000, failed: 0 });
  const lines = await outputLines(sdk, done.output_file_id);
  t.equal(lines.length, 1000);
  t.same(lines.map((l) => l.custom_id).sort(), Array.from({ length: 1000 }, (_, i) => `sim-${i}`).sort());
});

t.test("cancel mid-batch: the finished lines are kept, no new line starts", async (t) => {
  const sdk = client();
  fake.faults.delayMs = 40;
  t.teardown(() => void (fake.faults.delayMs = 0));
  const file = await upload(sdk, chatLines(400, "gpt-4.1-mini", "cancel"));
  const before = chatCalls();
  const created = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  await eventually(
    () => sdk.batches.retrieve(created.id),
    (b) => b.request_counts!.completed >= 30,
  );
  const cancelling = await sdk.batches.cancel(created.id);
  t.equal(cancelling.status, "cancelling");
  const startedAtCancel = chatCalls() - before;
  const done = await finished(sdk, created.id);
  t.equal(done.status, "cancelled");
  t.ok(done.cancelled_at, "cancelled_at");
  const completed = done.request_counts!.completed;
  t.ok(completed >= 30 && completed < 400, `${completed} lines finished before the cancel`);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const calls = chatCalls() - before;
  t.ok(calls <= startedAtCancel + 16, `no new line started after the cancel (${startedAtCancel} at the cancel, ${calls} in all)`);
  t.equal(calls, completed, "every call that started is a kept answer");
  const lines = await outputLines(sdk, done.output_file_id);
  t.equal(lines.length, completed, "the output file keeps the finished lines");
});

t.test("batches.list pages with after/limit", async (t) => {
  const other = await projectWithLiveKey(troupe, user.token, user.orgId, "paging");
  const sdk = client(other.testKey);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const file = await upload(sdk, chatLines(1, "simulated-chat", `page${i}`));
    ids.push((await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" })).id);
  }
  const first = await sdk.batches.list({ limit: 2 });
  t.equal(first.data.length, 2);
  t.ok(first.has_more, "has_more on the first page");
  t.same(first.data.map((b) => b.id), [ids[4], ids[3]], "newest first");
  const seen: string[] = [];
  for await (const b of sdk.batches.list({ limit: 2 })) seen.push(b.id);
  t.same(seen, [...ids].reverse(), "the SDK's auto-pagination walks every page once");
});

t.test("JSONL validation names the lines", async (t) => {
  const sdk = client();
  const text = [
    JSON.stringify({ custom_id: "a", method: "POST", url: "/v1/chat/completions", body: { model: "simulated-chat", messages: [] } }),
    "{not json",
    JSON.stringify({ custom_id: "a", method: "POST", url: "/v1/chat/completions", body: {} }),
    JSON.stringify({ custom_id: "d", method: "GET", url: "/v1/chat/completions", body: {} }),
  ].join("\n");
  const error = await upload(sdk, text).catch((e: unknown) => e);
  t.ok(error instanceof OpenAI.BadRequestError, "400");
  const message = (error as InstanceType<typeof OpenAI.BadRequestError>).message;
  t.match(message, /line 2: not valid JSON/);
  t.match(message, /line 3\.custom_id: "a" is used by an earlier line/);
  t.match(message, /line 4\.method/);
  t.notMatch(message, /line 1[.:]/, "line 1 is fine");
  const list = await sdk.files.list();
  t.notOk(list.data.some((f) => f.filename === "input.jsonl" && f.bytes === Buffer.byteLength(text)), "nothing stored");
});

t.test("another environment's files and batches are 404", async (t) => {
  const sdk = client();
  const file = await upload(sdk, chatLines(2, "simulated-chat", "iso"));
  const batch = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  const other = await projectWithLiveKey(troupe, user.token, user.orgId, "isolation");
  const stranger = client(other.testKey);
  for (const call of [() => stranger.files.retrieve(file.id), () => stranger.files.content(file.id), () => stranger.files.delete(file.id), () => stranger.batches.retrieve(batch.id), () => stranger.batches.cancel(batch.id)]) {
    t.ok((await call().catch((e: unknown) => e)) instanceof OpenAI.NotFoundError, "404");
  }
  t.ok((await stranger.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" }).catch((e: unknown) => e)) instanceof OpenAI.NotFoundError, "another environment's file cannot start a batch");
  t.notOk((await stranger.batches.list()).data.some((b) => b.id === batch.id), "not listed");
  t.equal((await finished(sdk, batch.id)).status, "completed", "the owner's batch is untouched");
  t.same(await sdk.files.delete(file.id), { id: file.id, object: "file", deleted: true });
});

t.test("a batch needs the scope of its endpoint's category", async (t) => {
  const created = await troupe.request("POST", `/v1/environments/${user.developmentEnvId}/api-keys`, { token: user.token, body: { name: "embeddings only", scopes: ["embeddings"] } });
  t.equal(created.status, 201, created.text);
  const sdk = client((created.body as { key: string }).key);
  const file = await upload(sdk, chatLines(1, "simulated-chat", "scope"));
  const error = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" }).catch((e: unknown) => e);
  t.ok(error instanceof OpenAI.PermissionDeniedError, "403 without the chat scope");
});

t.test("a hard budget pauses the batch (troupe_paused) instead of overrunning it", async (t) => {
  const p = await projectWithLiveKey(troupe, user.token, user.orgId, "budget");
  // About 3 lines' reservation: gpt-4.1-mini with max_tokens 20.
  t.equal((await troupe.request("PUT", `/v1/projects/${p.projectId}/budget`, { token: user.token, body: { monthly_limit_usd: 0.0001, hard_limit: true } })).status, 200);
  const sdk = client(p.liveKey);
  const file = await upload(sdk, chatLines(200, "gpt-4.1-mini", "budget"));
  const created = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  const paused = await eventually(
    async () => (await sdk.batches.retrieve(created.id)) as OpenAI.Batch & { troupe_paused: string | null },
    (b) => b.troupe_paused === "budget_exceeded",
  );
  t.equal(paused.status, "in_progress", "still in progress");
  t.equal(paused.troupe_paused, "budget_exceeded");
  t.ok(paused.request_counts!.completed < 200, `${paused.request_counts!.completed} lines ran before the budget stopped it`);
  // The watchdog (500 ms here) resumes it now and then; each time a reservation fails it pauses again.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const later = await sdk.batches.retrieve(created.id);
  t.ok(later.request_counts!.completed < 200, "still short of the end");
  const spentNanos = usage.filter((u) => u.project_id === p.projectId).reduce((n, u) => n + u.cost_nanos, 0);
  t.ok(spentNanos <= 100_000, `spent ${spentNanos} nano-dollars, within the 100,000 limit`);
  t.ok(spentNanos > 0, "some lines ran inside the budget");
  await sdk.batches.cancel(created.id);
  t.equal((await finished(sdk, created.id)).status, "cancelled", "a paused batch can be cancelled");
});
