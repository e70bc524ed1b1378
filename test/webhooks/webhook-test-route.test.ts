// POST /v1/webhooks/{id}/test and .../retry answer from the attempt's own
// announced outcome (actors/webhooks/delivery-events.ts), not by reading the
// delivery log: 100 concurrent tests against a hanging receiver, with the
// log trimmed to 10 records, each answer 200 with its own attempt's record
// (failed: no answer in time) — none 404 "delivery not found", which
// polling the trimmed log answered under this load. Real sockets, embedded host.
import t from "tap";
import { startWebhookReceiver } from "../fakes/webhook-receiver.ts";
import { waitFor } from "../support/net.ts";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";

t.setTimeout(60_000);

const env = { OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost", WEBHOOK_RETRY_SCALE: "0.0002", WEBHOOK_TIMEOUT_MS: "1000", WEBHOOK_MAX_DELIVERIES: "10" };

t.test("100 concurrent tests against a hanging receiver each answer their own failed attempt", async (t) => {
  const troupe = await startTestTroupe(env);
  t.teardown(() => troupe.stop());
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  receiver.fallback = "hang";
  const user = await signup(troupe, "hooktest");
  const created = await troupe.request("POST", "/v1/webhooks", { token: user.testKey, body: { url: receiver.url, events: ["job.completed"] } });
  t.equal(created.status, 201);
  receiver.secret = str(created.body, "secret");
  const id = str(created.body, "webhook", "id");

  const started = Date.now();
  const answers = await Promise.all(Array.from({ length: 100 }, () => troupe.request("POST", `/v1/webhooks/${id}/test`, { token: user.testKey })));
  const elapsed = Date.now() - started;
  t.same(
    answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.text}`),
    [],
    "every one answers 200",
  );
  const records = answers.map((a) => a.body as Record<string, unknown>);
  t.equal(new Set(records.map((r) => r["id"])).size, 100, "each with its own attempt's record");
  const statuses = records.map((r) => (r["status"] === "pending" ? "pending" : `${r["status"]} ${r["response_status"]} ${r["error"]}`));
  const counts = new Map<string, number>();
  for (const status of statuses) counts.set(status, (counts.get(status) ?? 0) + 1);
  t.comment(`answers: ${[...counts].map(([status, n]) => `${n} × ${status}`).join("; ")}`);
  t.ok(
    records.every((r) => r["event_type"] === "webhook.test" && (r["status"] === "pending" || (r["status"] === "failed" && r["response_status"] === null && typeof r["next_attempt_at"] === "string"))),
    "each its attempt's record: failed (no answer within WEBHOOK_TIMEOUT_MS, its retry scheduled), or still pending when the outcome came after the route's wait",
  );
  t.ok(statuses.some((s) => s !== "pending"), "the outcomes are heard (announced)");
  t.ok(elapsed < 10_000, `answered once the attempts timed out, not at the route's deadline each in turn (${elapsed} ms)`);

  // Retry answers the same way: the new attempt's own outcome. Once the receiver answers, the test events'
  // retries finish and the (trimmed) history stops moving.
  receiver.fallback = { status: 204 };
  const newest = async () => field((await troupe.request("GET", `/v1/webhooks/${id}/deliveries?limit=10`, { token: user.testKey })).body, "data") as Array<Record<string, unknown>>;
  await waitFor(async () => (await newest()).every((r) => r["status"] !== "pending"), 20_000, "the test events' retries to finish");
  const history = await newest();
  const retried = await troupe.request("POST", `/v1/webhooks/${id}/deliveries/${String(history[0]!["id"])}/retry`, { token: user.testKey });
  t.equal(retried.status, 200, retried.text);
  t.match(retried.body, { status: "succeeded", response_status: 204, event_id: history[0]!["event_id"] }, "the retry's own attempt, succeeded");
});
