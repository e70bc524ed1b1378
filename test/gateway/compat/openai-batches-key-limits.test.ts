// A batch's lines are held to the limits of the key that created it
// (docs/api/batches.md, "The key's limits"): requests per minute, tokens per
// minute and max_concurrent, counted in windows of the key's batch lines,
// apart from its interactive calls'. A line the key's limit refuses is not
// answered with a 429: it waits for the window to turn, so the batch slows
// to the key's rate and every line still ends answered, while the key's own
// calls keep their window.
// The windows follow Troupe's injected clock, which the test moves a minute
// on to turn them (each phase takes seconds: a window of 60 s does not turn
// by itself meanwhile).
import OpenAI, { toFile } from "openai";
import t from "tap";
import { startFakeProviders } from "../../support/fake-providers.ts";
import { waitFor } from "../../support/net.ts";
import { signup, str, startTestTroupe } from "../../support/troupe.ts";

t.setTimeout(120_000);
const providers = await startFakeProviders(["openai"]);
// Real time plus what the test adds: a minute's window turns when the test says so.
let addedMs = 0;
const clock = { now: () => Date.now() + addedMs };
// The yield to interactive traffic is lifted (10 s of event-loop delay): on a loaded machine it would hold lines back at times, and this test counts what the key's limits let through.
const troupe = await startTestTroupe({ BATCH_CONCURRENCY: "8", BATCH_WATCHDOG_MS: "500", BATCH_YIELD_LAG_MS: "10000" }, { router: providers.router, clock });
t.teardown(async () => {
  await troupe.stop();
  await providers.close();
});
const fake = providers.fakes.openai;
const chatCalls = () => fake.requests.filter((r) => r.path.endsWith("/chat/completions"));
const baseURL = `http://127.0.0.1:${troupe.port}/openai/v1`;

const lines = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => JSON.stringify({ custom_id: `${tag}-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "gpt-4.1-mini", messages: [{ role: "user", content: `line ${i}` }], max_tokens: 20 } })).join("\n") + "\n";

/** A key of a new account's development environment with `limits`, and a second key of the same environment that reads the batch without spending the first one's window. */
async function keys(tag: string, limits: Record<string, number>) {
  const user = await signup(troupe, tag);
  const make = async (body: Record<string, unknown>) => {
    const res = await troupe.request("POST", `/v1/environments/${user.developmentEnvId}/api-keys`, { token: user.token, body });
    if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
    return new OpenAI({ baseURL, apiKey: str(res.body, "key"), maxRetries: 0 });
  };
  return { limited: await make({ name: "limited", ...limits }), reader: await make({ name: "reader", rate_limit_per_minute: 1_000_000 }) };
}

async function start(sdk: OpenAI, n: number, tag: string) {
  const file = await sdk.files.create({ file: await toFile(Buffer.from(lines(n, tag)), "input.jsonl"), purpose: "batch" });
  return sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
}

const answered = (b: OpenAI.Batches.Batch) => (b.request_counts?.completed ?? 0) + (b.request_counts?.failed ?? 0);

async function settledAt(reader: OpenAI, id: string, count: number) {
  await waitFor(async () => answered(await reader.batches.retrieve(id)) >= count, 60_000, `${count} lines of ${id} answered`);
  // Held there: the lines past the window wait for it (the runner asks again every second).
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  return reader.batches.retrieve(id);
}

async function outputStatuses(reader: OpenAI, b: OpenAI.Batches.Batch) {
  const text = b.output_file_id ? await (await reader.files.content(b.output_file_id)).text() : "";
  const errors = b.error_file_id ? await (await reader.files.content(b.error_file_id)).text() : "";
  return (text + errors)
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => (JSON.parse(l) as { response: { status_code: number } }).response.status_code);
}

t.test("requests per minute: the lines run at the key's rate, none is answered 429", async (t) => {
  const { limited, reader } = await keys("batch-rpm", { rate_limit_per_minute: 10 });
  const before = chatCalls().length;
  const created = await start(limited, 25, "rpm");
  const first = await settledAt(reader, created.id, 10);
  t.equal(answered(first), 10, "ten lines in the first minute, then the lines' window is full");
  t.equal(first.status, "in_progress");
  t.equal(chatCalls().length - before, 10, "only those reached the provider");
  // The upload and the create were two of the key's own ten; eight more of its calls fit beside the waiting batch, the ninth is refused.
  const own: number[] = [];
  for (let i = 0; i < 9; i++) own.push(await limited.batches.retrieve(created.id).then(() => 200, (error: unknown) => (error instanceof OpenAI.APIError ? error.status : 0)));
  t.same(own, [...Array(8).fill(200), 429], "the key's own calls keep their window");

  addedMs += 61_000;
  const second = await settledAt(reader, created.id, 20);
  t.equal(answered(second), 20, "ten more in the next minute");
  addedMs += 61_000;
  await waitFor(async () => (await reader.batches.retrieve(created.id)).status === "completed", 60_000, "the batch to complete");
  const done = await reader.batches.retrieve(created.id);
  t.same(done.request_counts, { total: 25, completed: 25, failed: 0 });
  t.equal(chatCalls().length - before, 25, "each line reached the provider once");
  t.same(await outputStatuses(reader, done), Array(25).fill(200), "every line answered 200, none 429");
});

t.test("tokens per minute: lines reserve their estimate; past the window they wait", async (t) => {
  // Each line reserves about 34 tokens (its ~55 bytes / 4 + max_tokens 20) and is billed its real count: a 100-token window holds a few.
  const { limited, reader } = await keys("batch-tpm", { token_limit_per_minute: 100 });
  const created = await start(limited, 12, "tpm");
  const first = await settledAt(reader, created.id, 1);
  t.ok(answered(first) >= 1 && answered(first) < 12, `some lines, not all, in the first minute (${answered(first)})`);
  t.equal(first.status, "in_progress");
  for (let minute = 0; minute < 12; minute++) {
    const b = await reader.batches.retrieve(created.id);
    if (b.status === "completed") break;
    addedMs += 61_000;
    await settledAt(reader, created.id, answered(b) + 1);
  }
  const done = await reader.batches.retrieve(created.id);
  t.equal(done.status, "completed");
  t.same(await outputStatuses(reader, done), Array(12).fill(200), "every line answered 200, none 429");
});

t.test("max_concurrent: no more of the key's lines in flight at once than it allows", async (t) => {
  const { limited, reader } = await keys("batch-concurrent", { max_concurrent: 2 });
  fake.faults.delayMs = 150;
  t.teardown(() => void (fake.faults.delayMs = 0));
  const before = chatCalls().length;
  let ended = 0;
  let most = 0;
  const watched = new Set<object>();
  const poll = setInterval(() => {
    for (const r of chatCalls().slice(before)) {
      if (watched.has(r)) continue;
      watched.add(r);
      void fake.outcome(r).then(() => void (ended += 1));
    }
    most = Math.max(most, watched.size - ended);
  }, 5);
  t.teardown(() => clearInterval(poll));
  const created = await start(limited, 10, "concurrent");
  await waitFor(async () => (await reader.batches.retrieve(created.id)).status === "completed", 60_000, "the batch to complete");
  clearInterval(poll);
  t.equal(chatCalls().length - before, 10, "each line once");
  t.ok(most >= 1 && most <= 2, `at most 2 calls in flight at the provider (saw ${most}, the runner allows 8)`);
  t.same(await outputStatuses(reader, await reader.batches.retrieve(created.id)), Array(10).fill(200), "every line answered 200, none 429");
});
