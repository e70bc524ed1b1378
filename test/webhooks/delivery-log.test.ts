// The WebhookActor's delivery records and finished events' payloads live in
// the data store, not in the actor state (actors/webhooks/delivery-log.ts):
// on both stores (lmdb embedded, Redis as the cluster uses), the records are
// documents listed newest first and trimmed to WEBHOOK_MAX_DELIVERIES (the
// trimmed ones deleted), a pending attempt is derived from its outbox entry
// (only outcomes are written), finished payloads are trimmed to the last 50 and
// serve "retry a delivery", the committed state holds only ids, and a turn
// whose store write fails sends nothing (the write comes before the send).
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { systemClock } from "../../core/clock.ts";
import { prefixedId } from "../../core/ids.ts";
import { createLogger } from "../../core/log.ts";
import { eraseDefinition } from "../../actors/actor.ts";
import { callActor } from "../../actors/host.ts";
import { EmbeddedActorHost } from "../../actors/hosts/embedded/embedded-host.ts";
import { ActorStore } from "../../actors/hosts/embedded/store.ts";
import { DeliveryLog } from "../../actors/webhooks/delivery-log.ts";
import { WebhookDirectory } from "../../actors/webhooks/directory.ts";
import type { DispatchedAttempt, EventPayload } from "../../actors/webhooks/types.ts";
import { createSecretBox } from "../../actors/webhooks/secret-box.ts";
import { createWebhookActor, MAX_RECENT_EVENTS, WEBHOOK_ACTOR } from "../../actors/webhooks/webhook-actor.ts";
import type { DataStore } from "../../core/data-store.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { RedisDataStore } from "../../tenancy/redis-data-store.ts";
import { waitFor } from "../support/net.ts";
import { startTestRedis } from "../support/redis.ts";

const redis = await startTestRedis();
t.teardown(() => redis.stop());

const org = "org_delivery_log";
const maxDeliveries = 3;

function event(n: number): EventPayload {
  return { id: `evt_log_${n}_${process.pid}`, type: "job.completed", created_at: new Date().toISOString(), data: { n } };
}

/** The store, with its writes refused while `refuse.writes` is set (a store outage mid-turn). */
function refusable(store: DataStore): { store: DataStore; refuse: { writes: boolean } } {
  const refuse = { writes: false };
  const wrapped = new Proxy(store, {
    get(target, name) {
      if (name === "apply" && refuse.writes) return async () => Promise.reject(new Error("store unavailable"));
      const value: unknown = Reflect.get(target, name);
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: wrapped, refuse };
}

async function suite(t: Test, kind: string, store: DataStore): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), `troupe-delivery-log-${kind}-`));
  const { store: faulty, refuse } = refusable(store);
  const sent: DispatchedAttempt[] = [];
  const actor = createWebhookActor({
    dispatch: (_id, attempts) => sent.push(...attempts),
    directory: new WebhookDirectory(faulty),
    log: new DeliveryLog(faulty),
    config: { timeoutMs: 1000, retryScale: 0.0001, maxDeliveries, endpointsPerOrganization: 20, secretKey: undefined },
    secrets: createSecretBox(randomBytes(32)),
  });
  const host = new EmbeddedActorHost({ dataDir, idleTimeoutMs: 60_000, clock: systemClock, log: createLogger("silent") });
  host.register([eraseDefinition(actor)]);
  await host.start();
  let stopped = false;
  t.teardown(async () => {
    if (!stopped) await host.stop();
  });
  const id = prefixedId("whk");
  await callActor(host, actor, id, "create", { organization_id: org, url: "http://127.0.0.1:9/hook", events: ["job.completed"], secret: "whsec_test" });
  const deliver = async (events: EventPayload[]) => {
    sent.length = 0;
    await callActor(host, actor, id, "accept", { organization_id: org, events, results: [] });
    const attempts = [...sent];
    await callActor(host, actor, id, "settle", {
      results: attempts.map((a) => ({ delivery_id: a.delivery_id, status: 200, error: null, retry_after: null, duration_ms: 1 })),
    });
    return attempts;
  };
  const list = async () => (await callActor(host, actor, id, "deliveries", { organization_id: org, limit: 100, cursor: null })).data;

  t.test("records are store documents, newest first, trimmed to WEBHOOK_MAX_DELIVERIES", async (t) => {
    const attempts = await deliver([1, 2, 3, 4, 5].map(event));
    t.equal(attempts.length, 5, "five attempts sent");
    const listed = await list();
    t.same(listed.map((d) => d.event_id), [5, 4, 3].map((n) => event(n).id), "the newest three");
    t.ok(listed.every((d) => d.status === "succeeded" && d.response_status === 200 && d.attempt === 1), "each settled as succeeded");
    const stored = await store.get(`webhook-delivery:${id}:${listed[0]!.id}`);
    t.same(stored, listed[0], "the listed record is the store's document");
    for (const a of attempts.slice(0, 2)) t.equal(await store.get(`webhook-delivery:${id}:${a.delivery_id}`), undefined, "a trimmed record is deleted");
    const one = await callActor(host, actor, id, "delivery", { organization_id: org, delivery_id: listed[1]!.id });
    t.same(one, listed[1], "one record by id");
    await t.rejects(callActor(host, actor, id, "delivery", { organization_id: org, delivery_id: attempts[0]!.delivery_id }), { code: "not_found" }, "a trimmed record is 404");
  });

  t.test("finished payloads: the last 50 kept, retry sends the same event id again, re-publish is idempotent", async (t) => {
    await deliver(Array.from({ length: MAX_RECENT_EVENTS + 2 }, (_, i) => event(100 + i)));
    t.equal(await store.get(`webhook-event:${id}:${event(100).id}`), undefined, "the oldest finished payload is deleted");
    const newest = event(100 + MAX_RECENT_EVENTS + 1);
    t.match(await store.get(`webhook-event:${id}:${newest.id}`), { event: { id: newest.id, data: { n: newest.data["n"] } }, attempts: 1 }, "the newest one is kept");
    sent.length = 0;
    await callActor(host, actor, id, "accept", { organization_id: org, events: [newest], results: [] });
    t.equal(sent.length, 0, "a re-published finished event is not sent again");
    const [record] = await list();
    const retried = await callActor(host, actor, id, "retry", { organization_id: org, delivery_id: record!.id });
    t.match(retried, { event_id: newest.id, attempt: 2, status: "pending" }, "a new attempt record");
    t.same(sent.map((a) => a.event.id), [newest.id], "the same event id goes again");
    t.same((await list())[0], retried, "listed first");
  });

  t.test("an attempt out is listed as pending from its outbox entry; its outcome is the one document written", async (t) => {
    sent.length = 0;
    await callActor(host, actor, id, "accept", { organization_id: org, events: [event(700)], results: [] });
    const [attempt] = sent;
    t.equal(await store.get(`webhook-delivery:${id}:${attempt!.delivery_id}`), undefined, "nothing stored while pending");
    t.match((await list())[0], { id: attempt!.delivery_id, event_id: event(700).id, attempt: 1, status: "pending", response_status: null }, "listed as pending");
    t.match(await callActor(host, actor, id, "delivery", { organization_id: org, delivery_id: attempt!.delivery_id }), { status: "pending" }, "and by id");
    sent.length = 0; // from here: the retry attempt, sent by the reminder or by the retry call below
    await callActor(host, actor, id, "settle", { results: [{ delivery_id: attempt!.delivery_id, status: 500, error: "the receiver answered HTTP 500", retry_after: null, duration_ms: 3 }] });
    t.match(await store.get(`webhook-delivery:${id}:${attempt!.delivery_id}`), { status: "failed", response_status: 500 }, "the failed attempt is stored");
    const [retry, failed] = await list();
    t.match(failed, { id: attempt!.delivery_id, status: "failed", response_status: 500 });
    t.match(retry, { event_id: event(700).id, attempt: 2, status: "pending" }, "its retry is listed first, pending");
    await callActor(host, actor, id, "retry", { organization_id: org, delivery_id: failed!.id });
    // The retry is due at once at this WEBHOOK_RETRY_SCALE, so the reminder may have sent it before the retry call did.
    await waitFor(async () => sent.length === 1, 5000, "the retry attempt to go out");
    await callActor(host, actor, id, "settle", { results: sent.map((a) => ({ delivery_id: a.delivery_id, status: 200, error: null, retry_after: null, duration_ms: 1 })) });
    t.match((await list())[0], { id: retry!.id, attempt: 2, status: "succeeded" }, "the retry sent now succeeded");
  });

  t.test("a turn whose store write fails sends nothing and changes nothing", async (t) => {
    const before = await list();
    sent.length = 0;
    refuse.writes = true;
    await t.rejects(callActor(host, actor, id, "accept", { organization_id: org, events: [event(900)], results: [] }), /store unavailable/);
    refuse.writes = false;
    t.equal(sent.length, 0, "nothing was sent");
    t.same(await list(), before, "no record listed");
    await callActor(host, actor, id, "accept", { organization_id: org, events: [event(900)], results: [] });
    t.same(sent.map((a) => a.event.id), [event(900).id], "accepted again: sent once");
  });

  t.test("the committed actor state holds ids, not records or payloads", async (t) => {
    await host.stop();
    stopped = true;
    const actors = new ActorStore(dataDir);
    const state = actors.readState(WEBHOOK_ACTOR, id) as Record<string, unknown>;
    await actors.close();
    t.same(Object.keys(state).sort(), ["delivery_ids", "outbox", "recent_event_ids", "reminder_due_ms", "webhook"]);
    t.equal((state["delivery_ids"] as string[]).length, maxDeliveries);
    const recent = state["recent_event_ids"] as string[];
    t.equal(recent[0], event(700).id, "the newest finished event is listed by id");
    const json = JSON.stringify(state);
    t.notMatch(json, /response_status/, "no delivery record in the state");
    t.notOk(json.includes('"n":700'), "no finished event's payload in the state (only the outbox's events are)");
  });
}

t.test("on the embedded (lmdb) store", async (t) => {
  const store = new EmbeddedDataStore(mkdtempSync(join(tmpdir(), "troupe-delivery-log-store-")), systemClock);
  t.teardown(() => store.close());
  await suite(t, "embedded", store);
});

t.test("on the Redis store", async (t) => {
  const store = new RedisDataStore(redis.url, `test:delivery-log:${process.pid}:${Date.now()}:`);
  t.teardown(() => store.close());
  await suite(t, "redis", store);
});
