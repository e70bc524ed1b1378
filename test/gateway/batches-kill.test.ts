// kill -9 mid-batch on the embedded host: after a restart on the same data
// directory the batch resumes at its first unanswered lines and completes;
// every line is answered exactly once (the output file) and billed exactly
// once (the ledger, read after a graceful stop). The OpenAI fake lives in
// this test process and outlives the killed gateway: at most the lines in
// their model call at the kill (BATCH_CONCURRENCY) and the answers waiting
// to be stored with their group (as many again) reach it twice.
import OpenAI, { toFile } from "openai";
import t from "tap";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import { startOpenAIFake } from "../fakes/openai-fake.ts";
import { gatewayProcess, killAndWait } from "../support/gateway-process.ts";
import { request, signup } from "../support/troupe.ts";
import { projectUsage } from "../jobs/usage-reader.ts";

t.setTimeout(180_000);
const fake = await startOpenAIFake({ apiKey: "sk-fake" });
// Slow enough that the kill lands mid-batch.
fake.faults.delayMs = 15;
const { base, dataDir, start } = await gatewayProcess("troupe-kill-batches-", {
  OPENAI_API_KEY: "sk-fake",
  OPENAI_BASE_URL: `${fake.url}/v1`,
  BATCH_CONCURRENCY: "8",
  BATCH_WATCHDOG_MS: "500",
});
let child = await start();
t.teardown(async () => {
  child.kill("SIGKILL");
  await fake.close();
});

const lines = 300;
const chatCalls = () => fake.requests.filter((r) => r.path.endsWith("/chat/completions")).length;

t.test("a batch killed mid-way completes after a restart: every line answered once, billed once", async (t) => {
  const r = (m: string, p: string, o?: Parameters<typeof request>[3]) => request(base, m, p, o);
  const user = await signup({ request: r }, "kill-batches");
  const sdk = new OpenAI({ baseURL: `${base}/openai/v1`, apiKey: user.testKey, maxRetries: 3 });
  const text = Array.from({ length: lines }, (_, i) => JSON.stringify({ custom_id: `k-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "gpt-4.1-mini", messages: [{ role: "user", content: `line ${i}` }], max_tokens: 10 } })).join("\n");
  const file = await sdk.files.create({ file: await toFile(Buffer.from(text), "kill.jsonl"), purpose: "batch" });
  const batch = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  for (;;) {
    const b = await sdk.batches.retrieve(batch.id);
    if (b.request_counts!.completed >= 40) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await killAndWait(child, "SIGKILL");
  const atKill = chatCalls();
  t.ok(atKill < lines, `killed mid-batch: ${atKill} of ${lines} calls made`);

  child = await start();
  let done = await sdk.batches.retrieve(batch.id);
  const until = Date.now() + 120_000;
  while (done.status !== "completed" && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    done = await sdk.batches.retrieve(batch.id);
  }
  t.equal(done.status, "completed");
  t.same(done.request_counts, { total: lines, completed: lines, failed: 0 });
  const output = (await (await sdk.files.content(done.output_file_id!)).text()).split("\n").filter((l) => l !== "");
  const ids = output.map((l) => (JSON.parse(l) as { custom_id: string }).custom_id);
  t.equal(ids.length, lines, "one output line per input line");
  t.same([...new Set(ids)].sort(), Array.from({ length: lines }, (_, i) => `k-${i}`).sort(), "each line answered exactly once");
  const calls = chatCalls();
  t.ok(calls >= lines && calls <= lines + 16, `${calls} calls at the fake: at most the 8 lines in their model call and the 8 answers waiting for their group at the kill ran twice`);

  await killAndWait(child, "SIGTERM");
  const store = new EmbeddedLedgerStore(dataDir);
  try {
    const billed = (await projectUsage(store, user.projectId)).filter((u) => u.request_id.startsWith(`batch:${batch.id}:line:`)).map((u) => u.request_id);
    t.equal(billed.length, lines, "one usage record per line in the ledger");
    t.same([...billed].sort(), Array.from({ length: lines }, (_, i) => `batch:${batch.id}:line:${i}`).sort(), "each line billed exactly once");
  } finally {
    await store.close();
  }
});
