// OpenAI batches for `/v1/responses` through the official `openai` SDK: each
// line a Responses API body, run stateless unless it says `store: true`
// (docs/api/batches.md, "Responses lines"), its output line OpenAI's batch
// output shape with a `response` object as the body; a background line and
// a malformed one are answered in the error file, naming the field.
import OpenAI, { toFile } from "openai";
import t from "tap";
import type { UsageRecord } from "../../../providers/usage.ts";
import { eventually } from "../../support/billing.ts";
import { startFakeProviders } from "../../support/fake-providers.ts";
import { signup, startTestTroupe } from "../../support/troupe.ts";

t.setTimeout(120_000);
const providers = await startFakeProviders(["openai"]);
const usage: UsageRecord[] = [];
const troupe = await startTestTroupe({ BATCH_CONCURRENCY: "8", BATCH_WATCHDOG_MS: "500" }, { router: providers.router, usage: { record: (u) => void usage.push(u) } });
t.teardown(async () => {
  await troupe.stop();
  await providers.close();
});
const user = await signup(troupe, "batches-responses");
const sdk = new OpenAI({ baseURL: `http://127.0.0.1:${troupe.port}/openai/v1`, apiKey: user.testKey, maxRetries: 0 });
const fake = providers.fakes.openai;

type OutputLine = { id: string; custom_id: string; response: { status_code: number; request_id: string; body: { id?: string; object?: string; status?: string; store?: boolean; output?: Array<{ type: string; content?: Array<{ type: string; text?: string }> }>; error?: { message: string; param?: string | null } } }; error: unknown };

async function lines(fileId: string | null | undefined): Promise<OutputLine[]> {
  if (!fileId) return [];
  return (await (await sdk.files.content(fileId)).text())
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as OutputLine);
}

async function finished(id: string) {
  const until = Date.now() + 60_000;
  for (;;) {
    const b = await sdk.batches.retrieve(id);
    if (["completed", "failed", "cancelled", "expired"].includes(b.status) || Date.now() > until) return b;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const line = (custom_id: string, body: Record<string, unknown>) => JSON.stringify({ custom_id, method: "POST", url: "/v1/responses", body });

t.test("a /v1/responses batch: response objects in OpenAI's output lines, stateless unless a line says store", async (t) => {
  const n = 20;
  const text = [
    ...Array.from({ length: n }, (_, i) => line(`r-${i}`, { model: "gpt-4.1-mini", input: `responses line ${i}`, max_output_tokens: 20 })),
    line("stored", { model: "gpt-4.1-mini", input: [{ role: "user", content: "keep this one" }], store: true }),
    line("background", { model: "gpt-4.1-mini", input: "not in a batch", background: true }),
    line("bad", { model: "gpt-4.1-mini", input: "x", temperature: "hot" }),
  ].join("\n");
  const file = await sdk.files.create({ file: await toFile(Buffer.from(text), "responses.jsonl"), purpose: "batch" });
  const before = fake.requests.length;
  const created = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/responses", completion_window: "24h" });
  t.equal(created.endpoint, "/v1/responses");
  t.equal(created.status, "in_progress");
  const done = await finished(created.id);
  t.equal(done.status, "completed");
  t.same(done.request_counts, { total: n + 3, completed: n + 1, failed: 2 });
  t.equal(fake.requests.length - before, n + 1, "only the valid lines reached the provider, each once");

  const output = await lines(done.output_file_id);
  t.equal(output.length, n + 1);
  for (const o of output) {
    t.match(o.id, /^batch_req_/, "OpenAI's output line id");
    t.equal(o.error, null);
    t.equal(o.response.status_code, 200);
    t.equal(o.response.body.object, "response");
    t.equal(o.response.body.status, "completed");
    t.ok(o.response.body.output?.some((item) => item.type === "message" && item.content?.some((c) => c.type === "output_text" && typeof c.text === "string")), `${o.custom_id}: an output_text message`);
  }
  const byId = new Map(output.map((o) => [o.custom_id, o]));
  t.equal(byId.get("r-0")!.response.body.store, false, "a line without store runs stateless");
  t.equal(byId.get("stored")!.response.body.store, true, "a line with store: true is stored");
  const storedId = byId.get("stored")!.response.body.id!;
  t.equal((await sdk.responses.retrieve(storedId)).id, storedId, "the stored one is readable by its id");
  const statelessId = byId.get("r-0")!.response.body.id!;
  const missing = await sdk.responses.retrieve(statelessId).then(() => 200, (error: unknown) => (error instanceof OpenAI.APIError ? error.status : -1));
  t.equal(missing, 404, "a stateless one was never stored");

  const errors = new Map((await lines(done.error_file_id)).map((o) => [o.custom_id, o]));
  t.same([...errors.keys()].sort(), ["background", "bad"]);
  t.equal(errors.get("background")!.response.status_code, 400);
  t.match(errors.get("background")!.response.body.error!.message, /background/);
  t.equal(errors.get("bad")!.response.status_code, 400);
  t.match(JSON.stringify(errors.get("bad")!.response.body.error), /temperature/);

  const billed = await eventually(
    async () => usage.filter((u) => u.request_id.startsWith(`batch:${created.id}:line:`)),
    (u) => u.length >= n + 1,
  );
  t.equal(new Set(billed.map((u) => u.request_id)).size, n + 1, "each answered line billed once");
});

t.test("a file of /v1/responses lines under another endpoint makes a failed batch", async (t) => {
  const file = await sdk.files.create({ file: await toFile(Buffer.from(line("a", { model: "gpt-4.1-mini", input: "hi" })), "r.jsonl"), purpose: "batch" });
  const created = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  t.equal(created.status, "failed");
  t.equal(created.errors?.data?.[0]?.code, "invalid_url");
});
