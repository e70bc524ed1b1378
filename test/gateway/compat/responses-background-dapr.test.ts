// Background responses on two Dapr replicas (each a Troupe with its own
// daprd, sharing Redis, placement and scheduler): 50 created through both,
// then replica 1 and its daprd are killed -9 while they stream. Every one
// ends completed or failed with an `error` (the runs of the lost replica are
// failed once their heartbeat is stale; the survivor's finish), none is
// billed twice, every completed one is billed, each is announced once (one
// event id; a delivery cut short by the kill may be sent again under it).
import t from "tap";
import { startWebhookReceiver } from "../../fakes/webhook-receiver.ts";
import { projectWithLiveKey } from "../../support/billing.ts";
import { startDaprOpenAICluster } from "../../support/dapr-openai-cluster.ts";
import { waitFor } from "../../support/net.ts";
import { request, signup, str, type RequestOptions } from "../../support/troupe.ts";
import { projectUsage } from "../../jobs/usage-reader.ts";

t.setTimeout(300_000);
const { openai, cluster, ledger, urls } = await startDaprOpenAICluster({ label: "responses-cluster", replicas: 2, appEnv: { WEBHOOK_RETRY_SCALE: "0.0002" } });
const receiver = await startWebhookReceiver();
t.teardown(() => receiver.close());
const at = (i: number) => (method: string, path: string, options?: RequestOptions) => request(urls[i % urls.length] ?? "", method, path, options);
const count = 50;

interface Seen {
  id: string;
  status: string;
  error: { code: string; message: string } | null;
}

t.test(`${count} background responses on 2 replicas, one killed -9 with its daprd: each ends once, billed at most once, announced once`, async (t) => {
  const user = await signup({ request: at(0) }, "responses-cluster");
  const p = await projectWithLiveKey({ request: at(0) }, user.token, user.orgId);
  const hook = await at(0)("POST", "/v1/webhooks", { token: p.liveKey, body: { url: `${receiver.url}/hook`, events: ["response.completed", "response.failed", "response.cancelled", "response.incomplete"] } });
  t.equal(hook.status, 201, hook.text);
  receiver.secret = str(hook.body, "secret");
  const headers = { authorization: `Bearer ${p.liveKey}`, "content-type": "application/json" };
  const retrieve = async (id: string): Promise<Seen> => (await (await fetch(`${urls[0]}/openai/v1/responses/${id}`, { headers })).json()) as Seen;

  openai.faults.eventDelayMs = 100;
  const queued: Seen[] = [];
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${urls[i % 2]}/openai/v1/responses`, { method: "POST", headers, body: JSON.stringify({ model: "gpt-4.1-mini", input: "tell me a story about the sea and the birds of the cliffs at dawn", background: true }) });
    t.equal(res.status, 200, `create ${i}`);
    queued.push((await res.json()) as Seen);
    await new Promise((resolve) => setTimeout(resolve, 40));
  }
  const completed = async () => (await Promise.all(queued.slice(0, 10).map((q) => retrieve(q.id)))).filter((r) => r.status === "completed").length;
  await waitFor(async () => (await completed()) >= 5, 60_000, "the first ones completed");
  await cluster.killReplica(1);
  openai.faults.eventDelayMs = 0;

  const ended: Seen[] = [];
  for (const q of queued) {
    let seen: Seen = q;
    await waitFor(async () => ((seen = await retrieve(q.id)), seen.status !== "queued" && seen.status !== "in_progress"), 90_000, `${q.id} to end`);
    ended.push(seen);
  }
  const statuses = new Map<string, number>();
  for (const e of ended) statuses.set(e.status, (statuses.get(e.status) ?? 0) + 1);
  t.comment(`after the kill: ${JSON.stringify(Object.fromEntries(statuses))}; ${openai.requests.length} provider calls`);
  t.same(ended.filter((e) => e.status !== "completed" && e.status !== "failed").map((e) => e.status), [], "every one completed or failed");
  t.same(ended.filter((e) => e.status === "failed" && !(e.error && e.error.message.length > 0)).map((e) => e.id), [], "every failed one says why");
  t.ok(openai.requests.length <= count, "no response called its provider twice");

  await waitFor(async () => new Set(receiver.received.map((d) => d.eventId)).size >= count, 90_000, `every response.* webhook (${new Set(receiver.received.map((d) => d.eventId)).size} so far)`);
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  // Delivery is at least once with the same event id (docs/api/webhooks.md): an attempt out when its
  // replica died is sent again by the survivor. What must hold is one event per response, of its end.
  const events = new Map<string, { response: string; type: string }>();
  for (const d of receiver.received) events.set(d.eventId, { response: (d.body.data as { response: { id: string } }).response.id, type: d.type });
  t.comment(`${receiver.received.length} deliveries of ${events.size} events`);
  const byResponse = new Map<string, string[]>();
  for (const { response, type } of events.values()) byResponse.set(response, [...(byResponse.get(response) ?? []), type]);
  t.same(ended.filter((e) => JSON.stringify(byResponse.get(e.id)) !== JSON.stringify([`response.${e.status}`])).map((e) => [e.id, e.status, byResponse.get(e.id)]), [], "one event each, of its end");

  const records = await projectUsage(ledger, p.projectId);
  const keys = new Map<string, number>();
  for (const record of records) keys.set(record.usage_key, (keys.get(record.usage_key) ?? 0) + 1);
  t.same([...keys].filter(([, n]) => n > 1), [], "none billed twice");
  t.same(ended.filter((e) => e.status === "completed" && !keys.has(e.id)).map((e) => e.id), [], "every completed one billed");
});
