// budget.alert end to end through the real webhook publisher (embedded): a
// project's live spending crosses its budget's thresholds, and the
// organization's webhook subscribed to budget.alert receives one signed
// event per threshold, with the spec's data, and nothing more.
import t from "tap";
import { startWebhookReceiver } from "../fakes/webhook-receiver.ts";
import { hello, projectWithLiveKey, startFakeOpenAI } from "../support/billing.ts";
import { waitFor } from "../support/net.ts";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";

t.setTimeout(120_000);
const { fake, router } = await startFakeOpenAI();
const troupe = await startTestTroupe(
  { OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost", WEBHOOK_RETRY_SCALE: "0.0002", METRICS_PORT: "0", METRICS_HOST: "127.0.0.1" },
  { router: router() },
);
const receiver = await startWebhookReceiver();
t.teardown(async () => {
  await troupe.stop();
  await receiver.close();
  await fake.close();
});

t.test("crossing 50 % and 80 % of a budget delivers one budget.alert each", async (t) => {
  const user = await signup(troupe, "alerts");
  const p = await projectWithLiveKey(troupe, user.token, user.orgId);
  const hook = await troupe.request("POST", "/v1/webhooks", { token: p.liveKey, body: { url: receiver.url, events: ["budget.alert"] } });
  t.equal(hook.status, 201, hook.text);
  receiver.secret = str(hook.body, "secret");

  // What one call costs, from the ledger.
  t.equal((await troupe.request("POST", "/v1/chat/completions", { token: p.liveKey, body: hello })).status, 200);
  let callUsd = 0;
  await waitFor(async () => {
    const usage = await troupe.request("GET", `/v1/projects/${p.projectId}/usage`, { token: user.token });
    callUsd = Number(field(usage.body, "live", "cost_usd"));
    return callUsd > 0;
  }, 10_000, "the first call's usage");
  // A limit of 10 calls: 5 and 8 calls cross 50 % and 80 %, never 100 %.
  const budget = await troupe.request("PUT", `/v1/projects/${p.projectId}/budget`, { token: user.token, body: { monthly_limit_usd: callUsd * 10 } });
  t.equal(budget.status, 200, budget.text);
  for (let i = 0; i < 8; i++) t.equal((await troupe.request("POST", "/v1/chat/completions", { token: p.liveKey, body: hello })).status, 200);

  await waitFor(async () => receiver.received.filter((d) => d.type === "budget.alert").length >= 2, 20_000, "two budget alerts");
  await new Promise((resolve) => setTimeout(resolve, 1_000)); // room for a duplicate to show up
  const alerts = receiver.received.filter((d) => d.type === "budget.alert");
  t.same(alerts.map((d) => field(d.body, "data", "threshold")).sort(), [0.5, 0.8], "one alert per threshold crossed");
  t.equal(new Set(alerts.map((d) => d.eventId)).size, 2, "two distinct events");
  for (const alert of alerts) {
    t.ok(alert.verified, "signed both ways");
    t.match(field(alert.body, "data"), { project_id: p.projectId, period: String, limit_usd: Number, spent_usd: Number });
  }

  // A hard limit below what is spent: the next live call is 402, counted as a budget refusal in /metrics.
  const hard = await troupe.request("PUT", `/v1/projects/${p.projectId}/budget`, { token: user.token, body: { monthly_limit_usd: callUsd * 2, hard_limit: true } });
  t.equal(hard.status, 200, hard.text);
  const refused = await troupe.request("POST", "/v1/chat/completions", { token: p.liveKey, body: hello });
  t.equal(refused.status, 402);
  t.equal(field(refused.body, "error", "code"), "budget_exceeded");
  const metrics = await (await fetch(`http://127.0.0.1:${troupe.metricsPort}/metrics`)).text();
  t.match(metrics, /^troupe_budget_refusals_total\{[^}]*route="\/v1\/chat\/completions"[^}]*\} 1$/m, "the 402 is counted");
});
