// Webhooks end to end over real sockets (embedded host): creation and its
// validation, signed deliveries verified by an independent receiver
// (standardwebhooks + a plain HMAC), retries with the same event id, one
// delivery record per attempt, 410 and an exhausted schedule disabling the
// webhook, Retry-After (capped at 24 h), the test and retry endpoints, DELETE cancelling
// pending retries, idempotent publishes, and other organizations' 404s.
import t from "tap";
import type { OrganizationEvent } from "../../core/organization-events.ts";
import { ulid } from "../../core/ids.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../fakes/webhook-receiver.ts";
import { waitFor } from "../support/net.ts";
import { field, signup, startTestTroupe, str, type TestTroupe } from "../support/troupe.ts";

const env = { OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost", WEBHOOK_RETRY_SCALE: "0.0002", WEBHOOK_TIMEOUT_MS: "1000" };

/** An event of the development environment, whose test key makes the webhooks here (a key-made webhook receives its environment's events). */
function event(owner: { orgId: string; projectId: string; developmentEnvId: string }, type: OrganizationEvent["type"] = "job.completed", id = `evt_${ulid()}`): OrganizationEvent {
  const where = { organization_id: owner.orgId, project_id: owner.projectId, environment_id: owner.developmentEnvId };
  // A stand-in `data`: delivery carries any payload as is (the emitters' own are type-checked against actors/webhooks/events.ts).
  return { id, type, ...where, created_at: new Date().toISOString(), data: { job_id: "job_1", status: "completed" } } as unknown as OrganizationEvent;
}

interface Setup {
  troupe: TestTroupe;
  key: string;
  orgId: string;
  projectId: string;
  developmentEnvId: string;
  session: string;
}

async function createWebhook(troupe: TestTroupe, token: string, receiver: WebhookReceiver, events: string[] = ["job.completed", "job.failed"]) {
  const res = await troupe.request("POST", "/v1/webhooks", { token, body: { url: receiver.url, events } });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  receiver.secret = str(res.body, "secret");
  return str(res.body, "webhook", "id");
}

async function deliveries(troupe: TestTroupe, token: string, id: string) {
  const res = await troupe.request("GET", `/v1/webhooks/${id}/deliveries?limit=100`, { token });
  if (res.status !== 200) throw new Error(`deliveries: ${res.status} ${res.text}`);
  return field(res.body, "data") as Array<Record<string, unknown>>;
}

t.test("webhooks", async (t) => {
  const troupe = await startTestTroupe(env);
  t.teardown(() => troupe.stop());
  const user = await signup(troupe, "hooks");
  const s: Setup = { troupe, key: user.testKey, orgId: user.orgId, projectId: user.projectId, developmentEnvId: user.developmentEnvId, session: user.token };
  const publish = (e: OrganizationEvent) => troupe.services.publisher.publish(e);

  t.test("creation validates the URL and the events, and returns the secret once", async (t) => {
    const receiver = await startWebhookReceiver();
    t.teardown(() => receiver.close());
    const bad = async (body: unknown, path: string) => {
      const res = await troupe.request("POST", "/v1/webhooks", { token: s.key, body });
      t.equal(res.status, 400, `${JSON.stringify(body)} → 400`);
      t.match(JSON.stringify(field(res.body, "error", "details")), path, `names ${path}`);
    };
    await bad({ url: "ftp://127.0.0.1/x", events: ["job.completed"] }, "body.url");
    await bad({ url: "http://93.184.216.34/hook", events: ["job.completed"] }, "body.url"); // plain http to a host not allowed
    await bad({ url: "https://10.1.2.3/hook", events: ["job.completed"] }, "body.url"); // private address
    await bad({ url: "https://169.254.169.254/latest", events: ["job.completed"] }, "body.url");
    await bad({ url: receiver.url, events: [] }, "body.events");
    await bad({ url: receiver.url, events: ["job.completed", "job.completed"] }, "body.events");
    await bad({ url: receiver.url, events: ["job.started"] }, "body.events.0");
    await bad({ url: receiver.url, events: ["webhook.test"] }, "body.events.0");
    await bad({ url: receiver.url }, "body.events");

    const res = await troupe.request("POST", "/v1/webhooks", { token: s.key, body: { url: receiver.url, events: ["job.completed"] } });
    t.equal(res.status, 201);
    t.match(str(res.body, "secret"), /^whsec_[A-Za-z0-9+/]{32}$/);
    t.match(field(res.body, "webhook"), { url: receiver.url, events: ["job.completed"], status: "active", disabled_reason: null });
    t.match(str(res.body, "webhook", "id"), /^whk_/);
    const list = await troupe.request("GET", "/v1/webhooks", { token: s.key });
    t.equal(list.status, 200);
    t.ok((field(list.body, "data") as unknown[]).some((w) => field(w, "id") === str(res.body, "webhook", "id")));
    t.notMatch(list.text, /whsec_/, "the secret is never listed");
    t.equal(field(list.body, "next_cursor"), null);
  });

  t.test("a delivery is signed both ways and recorded", async (t) => {
    const receiver = await startWebhookReceiver();
    t.teardown(() => receiver.close());
    const id = await createWebhook(troupe, s.key, receiver);
    const e = event(s);
    await publish(e);
    await waitFor(async () => receiver.received.length === 1, 5000, "the delivery");
    const got = receiver.received[0]!;
    t.ok(got.verified, "standardwebhooks and the plain HMAC both verify");
    t.same(got.body, { id: e.id, type: e.type, created_at: e.created_at, data: e.data }, "payload {id, type, created_at, data}");
    t.equal(got.headers["webhook-id"], e.id);
    t.match(String(got.headers["x-troupe-signature"]), /^[0-9a-f]{64}$/);
    await waitFor(async () => (await deliveries(troupe, s.key, id))[0]?.["status"] === "succeeded", 5000, "the record");
    const [record] = await deliveries(troupe, s.key, id);
    t.match(record, { event_id: e.id, event_type: "job.completed", attempt: 1, status: "succeeded", response_status: 200, error: null, next_attempt_at: null });
    t.type(record?.["duration_ms"], "number");
    t.match(String(record?.["id"]), /^dlv_/);

    await publish(e);
    await publish(event(s, "budget.alert"));
    await new Promise((r) => setTimeout(r, 300));
    t.equal(receiver.received.length, 1, "a re-published id and an unsubscribed kind are not delivered");
  });

  t.test("500, 500, 200: the same event id three times, three records", async (t) => {
    const receiver = await startWebhookReceiver();
    t.teardown(() => receiver.close());
    receiver.script = [{ status: 500 }, { status: 500 }];
    const id = await createWebhook(troupe, s.key, receiver);
    const e = event(s, "job.failed");
    await publish(e);
    await waitFor(async () => receiver.received.length === 3, 10_000, "three attempts");
    t.same(
      receiver.received.map((r) => r.eventId),
      [e.id, e.id, e.id],
    );
    t.ok(receiver.received.every((r) => r.verified));
    await waitFor(async () => (await deliveries(troupe, s.key, id))[0]?.["status"] === "succeeded", 5000, "the last record");
    const records = await deliveries(troupe, s.key, id);
    t.equal(records.length, 3, "one record per attempt");
    t.same(
      records.map((r) => [r["attempt"], r["status"], r["response_status"], r["event_id"]]),
      [
        [3, "succeeded", 200, e.id],
        [2, "failed", 500, e.id],
        [1, "failed", 500, e.id],
      ],
      "newest first",
    );
    t.type(records[2]?.["next_attempt_at"], "string", "a failed attempt says when the next one is due");
    const page = await troupe.request("GET", `/v1/webhooks/${id}/deliveries?limit=2`, { token: s.key });
    t.equal((field(page.body, "data") as unknown[]).length, 2);
    const cursor = str(page.body, "next_cursor");
    const rest = await troupe.request("GET", `/v1/webhooks/${id}/deliveries?limit=2&cursor=${cursor}`, { token: s.key });
    t.same((field(rest.body, "data") as unknown[]).map((r) => field(r, "attempt")), [1]);
    t.equal(field(rest.body, "next_cursor"), null);
  });

  t.test("Retry-After postpones the next attempt", async (t) => {
    const receiver = await startWebhookReceiver();
    t.teardown(() => receiver.close());
    receiver.script = [{ status: 503, headers: { "retry-after": "1" } }];
    await createWebhook(troupe, s.key, receiver);
    await publish(event(s));
    await waitFor(async () => receiver.received.length === 2, 5000, "the retry");
    const gap = receiver.received[1]!.receivedAtMs - receiver.received[0]!.receivedAtMs;
    t.ok(gap >= 950, `waited ${gap} ms (the scaled schedule alone would wait 1 ms)`);
  });

  t.test("a Retry-After longer than 24 h postpones the next attempt by 24 h, no more", async (t) => {
    const receiver = await startWebhookReceiver();
    t.teardown(() => receiver.close());
    // About three years: a receiver must not be able to park an event that long.
    receiver.script = [{ status: 503, headers: { "retry-after": "99999999" } }];
    const id = await createWebhook(troupe, s.key, receiver);
    const before = Date.now();
    await publish(event(s));
    const failedFirst = async () => (await deliveries(troupe, s.key, id)).find((r) => r["attempt"] === 1 && r["status"] === "failed");
    await waitFor(async () => (await failedFirst()) !== undefined, 5000, "the failed attempt");
    const after = Date.now();
    const dayMs = 24 * 3600_000;
    const failed = await failedFirst();
    const nextMs = Date.parse(String(failed?.["next_attempt_at"]));
    t.ok(nextMs >= before + dayMs && nextMs <= after + dayMs, `next attempt ${failed?.["next_attempt_at"]} is 24 h after the failure`);
    const [pending] = await deliveries(troupe, s.key, id);
    t.match(pending, { attempt: 2, status: "pending", next_attempt_at: failed?.["next_attempt_at"] }, "the next attempt is listed as pending until then");
    t.equal(receiver.received.length, 1, "no second attempt meanwhile");
  });

  t.test("410 Gone disables the webhook at once, with the reason", async (t) => {
    const receiver = await startWebhookReceiver();
    t.teardown(() => receiver.close());
    receiver.fallback = { status: 410 };
    const id = await createWebhook(troupe, s.key, receiver);
    await publish(event(s));
    await waitFor(async () => field((await troupe.request("GET", `/v1/webhooks/${id}`, { token: s.key })).body, "status") === "disabled", 5000, "disabled");
    const got = await troupe.request("GET", `/v1/webhooks/${id}`, { token: s.key });
    t.match(str(got.body, "disabled_reason"), /410/);
    const list = await troupe.request("GET", "/v1/webhooks?limit=100", { token: s.key });
    t.equal(field((field(list.body, "data") as unknown[]).find((w) => field(w, "id") === id), "status"), "disabled", "the list shows it too");
    await publish(event(s));
    await new Promise((r) => setTimeout(r, 300));
    t.equal(receiver.received.length, 1, "nothing more is sent");
    const records = await deliveries(troupe, s.key, id);
    t.match(records, [{ attempt: 1, status: "failed", response_status: 410, next_attempt_at: null }]);
    const test = await troupe.request("POST", `/v1/webhooks/${id}/test`, { token: s.key });
    t.equal(test.status, 409, "a disabled webhook does not send tests");
  });

  t.test("test and retry endpoints: signed webhook.test, then the same event id again", async (t) => {
    const receiver = await startWebhookReceiver();
    t.teardown(() => receiver.close());
    const id = await createWebhook(troupe, s.session, receiver);
    const test = await troupe.request("POST", `/v1/webhooks/${id}/test`, { token: s.session });
    t.equal(test.status, 200, test.text);
    t.match(test.body, { event_type: "webhook.test", attempt: 1, status: "succeeded", response_status: 200 });
    t.equal(receiver.received.length, 1);
    t.ok(receiver.received[0]!.verified);
    t.equal(receiver.received[0]!.type, "webhook.test");
    t.same(receiver.received[0]!.body["data"], { webhook_id: id });

    const retry = await troupe.request("POST", `/v1/webhooks/${id}/deliveries/${str(test.body, "id")}/retry`, { token: s.session });
    t.equal(retry.status, 200, retry.text);
    t.match(retry.body, { event_id: str(test.body, "event_id"), attempt: 2, status: "succeeded" });
    t.not(str(retry.body, "id"), str(test.body, "id"), "a new record for the new attempt");
    t.same(
      receiver.received.map((r) => r.eventId),
      [str(test.body, "event_id"), str(test.body, "event_id")],
      "the same event id",
    );
    const missing = await troupe.request("POST", `/v1/webhooks/${id}/deliveries/dlv_00000000000000000000000000/retry`, { token: s.session });
    t.equal(missing.status, 404);
  });

  t.test("DELETE: inactive, pending retries cancelled", async (t) => {
    const receiver = await startWebhookReceiver();
    t.teardown(() => receiver.close());
    receiver.fallback = { status: 500, headers: { "retry-after": "2" } };
    const id = await createWebhook(troupe, s.key, receiver);
    await publish(event(s));
    await waitFor(async () => receiver.received.length === 1, 5000, "the first attempt");
    await waitFor(async () => (await deliveries(troupe, s.key, id)).length === 2, 5000, "the pending retry");
    const del = await troupe.request("DELETE", `/v1/webhooks/${id}`, { token: s.key });
    t.equal(del.status, 200);
    t.match(del.body, { id, status: "inactive" });
    const records = await deliveries(troupe, s.key, id);
    t.match(records[0], { attempt: 2, status: "failed", error: /cancelled/ }, "the pending attempt is cancelled");
    await new Promise((r) => setTimeout(r, 2500));
    t.equal(receiver.received.length, 1, "no attempt after DELETE");
    t.equal((await troupe.request("DELETE", `/v1/webhooks/${id}`, { token: s.key })).status, 200, "DELETE again is harmless");
  });

  t.test("another organization's webhook is 404", async (t) => {
    const receiver = await startWebhookReceiver();
    t.teardown(() => receiver.close());
    const id = await createWebhook(troupe, s.key, receiver);
    const other = await signup(troupe, "other");
    for (const [method, path] of [
      ["GET", `/v1/webhooks/${id}`],
      ["DELETE", `/v1/webhooks/${id}`],
      ["GET", `/v1/webhooks/${id}/deliveries`],
      ["POST", `/v1/webhooks/${id}/test`],
      ["GET", `/v1/webhooks/whk_nonsense`],
    ] as const) {
      const res = await troupe.request(method, path, { token: other.testKey });
      t.equal(res.status, 404, `${method} ${path}`);
      t.equal(field(res.body, "error", "code"), "not_found");
    }
    const theirs = await troupe.request("GET", "/v1/webhooks", { token: other.testKey });
    t.same(field(theirs.body, "data"), []);
    const named = await troupe.request("GET", `/v1/webhooks?organization_id=${s.orgId}`, { token: other.token });
    t.equal(named.status, 404, "a session naming an organization it is not in");
    const keyNaming = await troupe.request("GET", `/v1/webhooks?organization_id=${other.orgId}`, { token: s.key });
    t.equal(keyNaming.status, 404, "a key naming another organization");

    // A session whose user is in two organizations: the first one by default, the other when named.
    const second = await troupe.request("POST", "/v1/orgs", { token: s.session, body: { name: "second" } });
    t.equal(second.status, 201, second.text);
    const secondId = str(second.body, "id");
    const byDefault = await troupe.request("GET", "/v1/webhooks?limit=100", { token: s.session });
    t.ok((field(byDefault.body, "data") as unknown[]).some((w) => field(w, "id") === id), "default: the signup organization");
    const inSecond = await troupe.request("GET", `/v1/webhooks?organization_id=${secondId}`, { token: s.session });
    t.same(field(inSecond.body, "data"), [], "named: the second organization's (none)");
    await publish(event(other));
    await new Promise((r) => setTimeout(r, 200));
    t.equal(receiver.received.length, 0, "another organization's events are not delivered");
  });
});

t.test("a webhook failing through the whole schedule is disabled", async (t) => {
  const troupe = await startTestTroupe({ ...env, WEBHOOK_RETRY_SCALE: "0.00001" });
  t.teardown(() => troupe.stop());
  const user = await signup(troupe, "exhaust");
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  receiver.fallback = { status: 500 };
  const id = await createWebhook(troupe, user.testKey, receiver);
  const e = event(user);
  await troupe.services.publisher.publish(e);
  await waitFor(async () => field((await troupe.request("GET", `/v1/webhooks/${id}`, { token: user.testKey })).body, "status") === "disabled", 20_000, "disabled");
  t.equal(receiver.received.length, 10, "ten attempts (immediately, then nine retries)");
  t.ok(receiver.received.every((r) => r.eventId === e.id));
  const got = await troupe.request("GET", `/v1/webhooks/${id}`, { token: user.testKey });
  t.match(str(got.body, "disabled_reason"), /whole retry schedule/);
  const records = await deliveries(troupe, user.testKey, id);
  t.equal(records.length, 10);
  t.match(records[0], { attempt: 10, status: "failed", next_attempt_at: null });
});
