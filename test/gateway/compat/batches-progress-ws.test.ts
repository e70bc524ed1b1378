// A batch's live progress over a real WebSocket (embedded host, simulated
// provider): the first frame is the batch, then batch.progress frames whose
// request_counts only grow, throttled (fewer frames than lines), the last one
// the completed batch, then a 1000 close. Another organization's key is
// refused with 4404, as GET /openai/v1/batches/{id} answers it 404.
import OpenAI, { toFile } from "openai";
import t from "tap";
import { openEventSocket } from "../../support/event-socket.ts";
import { signup, startTestTroupe } from "../../support/troupe.ts";

t.setTimeout(90_000);
const troupe = await startTestTroupe({ BATCH_CONCURRENCY: "2", BATCH_WATCHDOG_MS: "500", SIMULATED_LATENCY_MS: "40" });
t.teardown(() => troupe.stop());
const a = await signup(troupe, "batchws-a");
const b = await signup(troupe, "batchws-b");
const sdk = new OpenAI({ baseURL: `http://127.0.0.1:${troupe.port}/openai/v1`, apiKey: a.testKey, maxRetries: 0 });
const url = (id: string) => `ws://127.0.0.1:${troupe.port}/openai/v1/batches/${id}/events`;

type Counts = { total: number; completed: number; failed: number };
type Frame = { type: "batch"; batch_id: string; batch: { status: string; request_counts: Counts } } | { type: "batch.progress"; batch_id: string; status: string; request_counts: Counts; batch: { id: string; request_counts: Counts } };

t.test("batch.progress frames with growing request_counts until the batch completes", async (t) => {
  const n = 40;
  const text = Array.from({ length: n }, (_, i) => JSON.stringify({ custom_id: `p-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "simulated-chat", messages: [{ role: "user", content: `progress ${i}` }], max_tokens: 8 } })).join("\n");
  const file = await sdk.files.create({ file: await toFile(Buffer.from(text), "p.jsonl"), purpose: "batch" });
  const created = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  const socket = await openEventSocket<Frame>(url(created.id), ["troupe.v1", `bearer.${a.testKey}`]);
  const close = await socket.closing;
  t.equal(close.code, 1000, `closed normally: ${close.reason}`);
  t.equal(close.reason, "the batch is finished");
  const [first, ...rest] = socket.frames;
  t.equal(first?.type, "batch", "the first frame is the batch");
  t.equal(first?.batch_id, created.id);
  t.ok(rest.length >= 2, `progress frames arrived (${rest.length})`);
  t.ok(rest.length < n, `throttled: ${rest.length} frames for ${n} lines`);
  let settled = first!.type === "batch" ? first!.batch.request_counts.completed : 0;
  for (const f of rest) {
    t.equal(f.type, "batch.progress");
    if (f.type !== "batch.progress") continue;
    t.equal(f.batch_id, created.id);
    t.same(f.request_counts, f.batch.request_counts, "request_counts at the top are the batch's");
    t.ok(f.request_counts.completed >= settled, `counts never go back (${f.request_counts.completed} after ${settled})`);
    settled = f.request_counts.completed;
  }
  const last = rest.at(-1);
  t.equal(last?.type === "batch.progress" ? last.status : undefined, "completed");
  t.same(last?.type === "batch.progress" ? last.request_counts : undefined, { total: n, completed: n, failed: 0 });
});

t.test("another organization's key: 4404", async (t) => {
  const file = await sdk.files.create({ file: await toFile(Buffer.from(JSON.stringify({ custom_id: "x", method: "POST", url: "/v1/chat/completions", body: { model: "simulated-chat", messages: [{ role: "user", content: "x" }] } })), "x.jsonl"), purpose: "batch" });
  const created = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  const socket = await openEventSocket<Frame>(url(created.id), ["troupe.v1", `bearer.${b.testKey}`]);
  t.equal(await socket.closed, 4404);
  t.equal(socket.frames.length, 0, "nothing of the batch was sent");
});
