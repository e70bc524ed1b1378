// A batch's final events through the webhook pipeline, end to end (embedded
// host, simulated provider, the official `openai` SDK): batch.completed,
// batch.failed, batch.cancelled and batch.expired each reach the
// organization's subscribed webhook, signed (verified by the independent
// receiver), answered 2xx exactly once per event id even when the first
// attempt is refused, with the OpenAI batch object as `data.batch`. Another
// organization's webhook receives none. Expiry comes from the injected clock
// moved past the 24 h window, not from waiting.
import OpenAI, { toFile } from "openai";
import t from "tap";
import { startWebhookReceiver, troupeSignatureValid } from "../../fakes/webhook-receiver.ts";
import { waitFor } from "../../support/net.ts";
import { signup, startTestTroupe, str, type TestTroupe } from "../../support/troupe.ts";

t.setTimeout(120_000);
let offsetMs = 0;
const troupe: TestTroupe = await startTestTroupe(
  { OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost", WEBHOOK_RETRY_SCALE: "0.0002", BATCH_CONCURRENCY: "1", BATCH_WATCHDOG_MS: "300", SIMULATED_LATENCY_MS: "150" },
  { clock: { now: () => Date.now() + offsetMs } },
);
const receiver = await startWebhookReceiver();
t.teardown(async () => {
  await troupe.stop();
  await receiver.close();
});
const a = await signup(troupe, "batchhooks-a");
const b = await signup(troupe, "batchhooks-b");
const events = ["batch.completed", "batch.failed", "batch.cancelled", "batch.expired"];
for (const [user, path] of [[a, "/a"], [b, "/b"]] as const) {
  const res = await troupe.request("POST", "/v1/webhooks", { token: user.testKey, body: { url: `${receiver.url}${path}`, events } });
  if (res.status !== 201) throw new Error(`webhook creation: ${res.status} ${res.text}`);
  receiver.secrets.set(new URL(`${receiver.url}${path}`).pathname, str(res.body, "secret"));
}
// Each event's first attempt is refused: the retry must still make it exactly one accepted delivery.
receiver.answerFor = (_eventId, nth) => (nth === 1 ? { status: 503 } : { status: 200 });

const sdk = new OpenAI({ baseURL: `http://127.0.0.1:${troupe.port}/openai/v1`, apiKey: a.testKey, maxRetries: 0 });
const chatLines = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => JSON.stringify({ custom_id: `${tag}-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "simulated-chat", messages: [{ role: "user", content: `${tag} ${i}` }], max_tokens: 8 } })).join("\n");
const upload = async (text: string) => sdk.files.create({ file: await toFile(Buffer.from(text), "in.jsonl"), purpose: "batch" });
const create = async (text: string, endpoint: "/v1/chat/completions" | "/v1/embeddings" = "/v1/chat/completions") => sdk.batches.create({ input_file_id: (await upload(text)).id, endpoint, completion_window: "24h" });
const pathOf = (path: string) => new URL(`${receiver.url}${path}`).pathname;
const accepted = (type: string) => receiver.received.filter((d) => d.type === type && d.answered === 200);

t.test("batch.completed / failed / cancelled / expired: signed, accepted once each, the owner's webhook only", async (t) => {
  const completed = await create(chatLines(2, "done"));
  const failed = await create(chatLines(1, "mismatch"), "/v1/embeddings");
  t.equal(failed.status, "failed");
  const cancelled = await create(chatLines(200, "cancel"));
  t.equal((await sdk.batches.cancel(cancelled.id)).status, "cancelling");
  await waitFor(async () => accepted("batch.completed").length > 0 && accepted("batch.failed").length > 0 && accepted("batch.cancelled").length > 0, 30_000, "completed, failed and cancelled events");

  const expiring = await create(chatLines(200, "expire"));
  // Past the 24 h completion window: the next lease (or the watchdog) expires the batch.
  offsetMs = 25 * 3600_000;
  await waitFor(async () => accepted("batch.expired").length > 0, 30_000, "batch.expired");
  // Give a duplicate (a second publish of an event) the time to show up.
  await new Promise((resolve) => setTimeout(resolve, 800));

  const expected = new Map([["batch.completed", completed.id], ["batch.failed", failed.id], ["batch.cancelled", cancelled.id], ["batch.expired", expiring.id]]);
  for (const [type, id] of expected) {
    const ok = accepted(type);
    t.equal(ok.length, 1, `${type}: accepted once`);
    const all = receiver.received.filter((d) => d.type === type);
    t.equal(all.length, 2, `${type}: refused once, retried once, never again`);
    t.equal(new Set(all.map((d) => d.eventId)).size, 1, `${type}: one event id`);
    const d = ok[0]!;
    if (type === "batch.expired") {
      // Sent at the moved clock (25 h ahead), so the Standard Webhooks check refuses its timestamp as too far off;
      // the HMAC over the body is checked instead (JSON.stringify of the parsed body is the body sent: compact JSON, key order kept).
      t.ok(troupeSignatureValid(receiver.secrets.get(pathOf("/a"))!, JSON.stringify(d.body), d.headers["x-troupe-signature"] as string | undefined), `${type}: X-Troupe-Signature verifies`);
      t.ok(Number(d.headers["webhook-timestamp"]) * 1000 > Date.now() + 24 * 3600_000, `${type}: stamped by the injected clock`);
    } else t.ok(d.verified, `${type}: both signatures verify`);
    t.equal(d.path, pathOf("/a"), `${type}: the owning organization's webhook`);
    const batch = (d.body["data"] as { batch: { id: string; object: string; status: string; request_counts: { total: number } } }).batch;
    t.equal(batch.id, id, `${type}: data.batch is the batch`);
    t.equal(batch.object, "batch");
    t.equal(`batch.${batch.status}`, type, `${type}: its status`);
  }
  const final = await sdk.batches.retrieve(expiring.id);
  t.equal(final.status, "expired");
  t.ok(final.request_counts!.completed < 200, "the expired batch stopped before its last line");
  t.notOk(receiver.received.some((d) => d.path === pathOf("/b")), "organization B's webhook received nothing");
});
