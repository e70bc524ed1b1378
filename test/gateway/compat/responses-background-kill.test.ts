// Background responses through a kill -9 of the embedded host: 50 are
// queued against the OpenAI fake streaming slowly, the process is killed
// while they run, and a restart on the same data directory ends every one:
// completed, or failed with an `error` (one found running when the process
// died is failed, never run twice: its provider call may have answered).
// None is billed twice, every completed one is billed (the ledger, keyed by
// the response id), and each one's terminal webhook is one event (delivered at least once).
import t from "tap";
import { startOpenAIFake } from "../../fakes/openai-fake.ts";
import { startWebhookReceiver } from "../../fakes/webhook-receiver.ts";
import { projectWithLiveKey } from "../../support/billing.ts";
import { gatewayProcess, killAndWait } from "../../support/gateway-process.ts";
import { waitFor } from "../../support/net.ts";
import { request, signup, str } from "../../support/troupe.ts";
import { EmbeddedLedgerStore } from "../../../tenancy/embedded-ledger-store.ts";
import { projectUsage } from "../../jobs/usage-reader.ts";

t.setTimeout(180_000);
const openai = await startOpenAIFake({ apiKey: "sk-fake" });
t.teardown(() => openai.close());
const receiver = await startWebhookReceiver();
t.teardown(() => receiver.close());
const { base, dataDir, start } = await gatewayProcess("troupe-kill-responses-", {
  OPENAI_API_KEY: "sk-fake",
  OPENAI_BASE_URL: `${openai.url}/v1`,
  OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost",
  WEBHOOK_RETRY_SCALE: "0.0002",
});
let child = await start();
t.teardown(() => void child.kill("SIGKILL"));
const r = { request: (m: string, p: string, o?: Parameters<typeof request>[3]) => request(base, m, p, o) };
const count = 50;

interface Seen {
  id: string;
  status: string;
  error: { code: string; message: string } | null;
}

async function retrieve(key: string, id: string): Promise<Seen> {
  const res = await fetch(`${base}/openai/v1/responses/${id}`, { headers: { authorization: `Bearer ${key}` } });
  if (res.status !== 200) throw new Error(`retrieve ${id}: ${res.status}`);
  return (await res.json()) as Seen;
}

t.test(`${count} background responses in flight through a kill -9: each ends once, billed at most once, announced once`, async (t) => {
  const user = await signup(r, "kill-responses");
  const p = await projectWithLiveKey(r, user.token, user.orgId);
  const hook = await r.request("POST", "/v1/webhooks", { token: p.liveKey, body: { url: `${receiver.url}/hook`, events: ["response.completed", "response.failed", "response.cancelled", "response.incomplete"] } });
  t.equal(hook.status, 201, hook.text);
  receiver.secret = str(hook.body, "secret");

  // About 2 s per answer: the kill lands while most of them stream.
  openai.faults.eventDelayMs = 100;
  const create = () =>
    fetch(`${base}/openai/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${p.liveKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4.1-mini", input: "tell me a story about the sea and the birds of the cliffs at dawn", background: true }),
    }).then(async (res) => (res.status === 200 ? ((await res.json()) as Seen) : Promise.reject(new Error(`create: ${res.status} ${await res.text()}`))));
  // Staggered: the first ones have completed (and been announced) when the kill lands, the others are streaming.
  const queued: Seen[] = [];
  for (let i = 0; i < count; i++) {
    queued.push(await create());
    await new Promise((resolve) => setTimeout(resolve, 40));
  }
  t.ok(queued.every((q) => q.status === "queued"), "all queued");
  await waitFor(async () => receiver.received.filter((d) => d.type === "response.completed").length >= 5, 20_000, "the first ones completed");
  await killAndWait(child, "SIGKILL");
  const upstreamAtKill = openai.requests.length;
  openai.faults.eventDelayMs = 0;

  child = await start();
  const ended: Seen[] = [];
  for (const q of queued) {
    let seen: Seen = q;
    await waitFor(async () => ((seen = await retrieve(p.liveKey, q.id)), seen.status !== "queued" && seen.status !== "in_progress"), 60_000, `${q.id} to end`);
    ended.push(seen);
  }
  const statuses = new Map<string, number>();
  for (const e of ended) statuses.set(e.status, (statuses.get(e.status) ?? 0) + 1);
  t.comment(`after the restart: ${JSON.stringify(Object.fromEntries(statuses))}; ${upstreamAtKill} provider calls before the kill, ${openai.requests.length} in all`);
  t.same(ended.filter((e) => e.status !== "completed" && e.status !== "failed").map((e) => e.status), [], "every one completed or failed");
  t.same(ended.filter((e) => e.status === "failed" && !(e.error && e.error.message.length > 0)).map((e) => e.id), [], "every failed one says why");
  t.ok((statuses.get("failed") ?? 0) > 0, "some were caught running by the kill (the test exercises the restart)");
  t.ok((statuses.get("completed") ?? 0) >= 5, "some had completed before it");
  t.ok(openai.requests.length <= count, "no response called its provider twice");

  // Each announced once: one terminal event per response, of the status it ended with. Delivery is at
  // least once with the same event id (docs/api/webhooks.md): an attempt out when the process died is
  // sent again after the restart, so events are counted, not deliveries.
  await waitFor(async () => new Set(receiver.received.map((d) => d.eventId)).size >= count, 30_000, "every response.* webhook");
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const events = new Map<string, { response: string; type: string }>();
  for (const d of receiver.received) events.set(d.eventId, { response: (d.body.data as { response: { id: string } }).response.id, type: d.type });
  t.comment(`${receiver.received.length} deliveries of ${events.size} events`);
  const byResponse = new Map<string, string[]>();
  for (const { response, type } of events.values()) byResponse.set(response, [...(byResponse.get(response) ?? []), type]);
  t.same(ended.filter((e) => JSON.stringify(byResponse.get(e.id)) !== JSON.stringify([`response.${e.status}`])).map((e) => [e.id, e.status, byResponse.get(e.id)]), [], "one event each, of its end");
  t.same(receiver.received.filter((d) => !d.verified).map((d) => d.eventId), [], "all signed");

  // The ledger, read after a clean stop.
  await killAndWait(child, "SIGTERM");
  const ledger = new EmbeddedLedgerStore(dataDir);
  const records = await projectUsage(ledger, p.projectId);
  await ledger.close();
  const keys = new Map<string, number>();
  for (const record of records) keys.set(record.usage_key, (keys.get(record.usage_key) ?? 0) + 1);
  t.same([...keys].filter(([, n]) => n > 1), [], "none billed twice");
  t.same(ended.filter((e) => e.status === "completed" && !keys.has(e.id)).map((e) => e.id), [], "every completed one billed");
});
