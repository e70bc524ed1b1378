// Budgets and usage end to end over HTTP, run on one embedded Troupe and on
// several Troupes sharing one Redis (requests alternate between them, as a
// load balancer would spread them). Provider calls are counted at the fake.
import type { Test } from "tap";
import type { FakeServer } from "../fakes/fake-server.ts";
import { eventually, hello, projectWithLiveKey, type RecordingPublisher } from "../support/billing.ts";
import { field, signup, type TestTroupe } from "../support/troupe.ts";

export interface BillingTarget {
  name: string;
  /** One or more Troupes sharing their data; `events` records what any of them published. */
  troupes: TestTroupe[];
  fake: FakeServer;
  events: RecordingPublisher;
}

const num = (value: unknown): number => {
  if (typeof value !== "number") throw new Error(`expected a number, got ${JSON.stringify(value)}`);
  return value;
};

export function billingSuite(t: Test, target: BillingTarget): void {
  const { troupes, fake, events } = target;
  let turn = 0;
  /** The next Troupe in turn: consecutive calls land on different replicas. */
  const next = () => troupes[turn++ % troupes.length]!;
  const chat = (key: string, body: unknown = hello) => next().request("POST", "/v1/chat/completions", { token: key, body });
  const usage = (session: string, projectId: string, query = "") => next().request("GET", `/v1/projects/${projectId}/usage${query}`, { token: session });
  const setBudget = (session: string, projectId: string, body: unknown) => next().request("PUT", `/v1/projects/${projectId}/budget`, { token: session, body });

  /** What one `hello` call costs, from the catalogue and the figures the fake reports. */
  let callNanos = 0;

  t.test(`${target.name}: usage is recorded once per call, live and test apart, exact`, async (t) => {
    const user = await signup(next(), "usage");
    const p = await projectWithLiveKey(next(), user.token, user.orgId);
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => chat(i % 3 === 0 ? p.testKey : p.liveKey)));
    t.ok(results.every((r) => r.status === 200));
    const first = results[1]!;
    callNanos = Math.round(
      next().services.router.catalogue.priceOf("gpt-4.1-mini", { input_tokens: num(field(first.body, "input_tokens")), output_tokens: num(field(first.body, "output_tokens")) }) * 1e9,
    );
    t.ok(callNanos > 0);
    const report = await eventually(
      () => usage(user.token, p.projectId, "?group_by=environment"),
      (r) => num(field(r.body, "live", "calls")) + num(field(r.body, "test", "calls")) === 30,
    );
    t.equal(report.status, 200, report.text);
    t.match(report.body, { project_id: p.projectId, currency: "USD", live: { calls: 20, cost_nanos: 20 * callNanos }, test: { calls: 10, cost_nanos: 0, cost_usd: 0 } });
    t.equal(num(field(report.body, "live", "cost_usd")), Math.round((20 * callNanos) / 1000) / 1e6, "USD to the micro-dollar");
    t.equal(num(field(report.body, "test", "input_tokens")), 10 * num(field(first.body, "input_tokens")), "test calls keep their units");
    t.equal((field(report.body, "groups") as unknown[]).length, 2, "one group per environment");
    for (const by of ["category", "model", "key", "day"]) {
      const grouped = await usage(user.token, p.projectId, `?group_by=${by}`);
      t.equal(grouped.status, 200);
      const groups = field(grouped.body, "groups") as { live: { cost_nanos: number } }[];
      t.equal(groups.reduce((s, g) => s + g.live.cost_nanos, 0), 20 * callNanos, `by ${by}: the groups add up to the total`);
    }
    const environments = await next().request("GET", `/v1/projects/${p.projectId}/environments`, { token: user.token });
    const production = (field(environments.body, "data") as { id: string; last_used_at: string | null; usage: { calls: number; cost_nanos: number } }[]).find((e) => e.id === p.productionEnvId);
    t.match(production, { usage: { calls: 20, cost_nanos: 20 * callNanos }, last_used_at: String }, "environments show usage to date and last use");
    const keys = await next().request("GET", `/v1/environments/${p.productionEnvId}/api-keys`, { token: user.token });
    t.match(field(keys.body, "data", 0), { id: p.liveKeyId, usage: { calls: 20, cost_nanos: 20 * callNanos, cost_usd: Math.round((20 * callNanos) / 1000) / 1e6 }, last_used_at: String });
    const past = await usage(user.token, p.projectId, "?from=2020-01-01&to=2020-01-31");
    t.match(past.body, { live: { calls: 0 }, test: { calls: 0 } }, "another range: nothing");
    t.match((await usage(user.token, p.projectId, "?from=0001-01-01&to=9999-12-31")).body, { live: { calls: 20 } }, "any range: only months with usage are read");
    t.match((await usage(user.token, p.projectId, "?from=2999-01-01")).body, { live: { calls: 0 } }, "from after to: empty");
    t.equal((await usage(user.token, p.projectId, "?group_by=planet")).status, 400);

    const stranger = await signup(next(), "stranger");
    const peek = await usage(stranger.token, p.projectId);
    t.equal(peek.status, 404, "another organization's project is not found");
    t.equal((await next().request("GET", `/v1/projects/${p.projectId}/budget`, { token: stranger.token })).status, 404);
    t.equal((await setBudget(stranger.token, p.projectId, { monthly_limit_usd: 1 })).status, 404);
    t.equal((await usage(p.liveKey, p.projectId)).status, 403, "an API key may not read usage (session only)");
  });

  t.test(`${target.name}: a hard budget worth 10.5 calls admits exactly 11 sequential calls, then 402 before any provider call`, async (t) => {
    const user = await signup(next(), "hard");
    const p = await projectWithLiveKey(next(), user.token, user.orgId);
    const limitUsd = (10.5 * callNanos) / 1e9;
    const put = await setBudget(user.token, p.projectId, { monthly_limit_usd: limitUsd, hard_limit: true });
    t.equal(put.status, 200, put.text);
    t.match(put.body, { monthly_limit_usd: limitUsd, alert_thresholds: [0.5, 0.8, 1], hard_limit: true, spent_usd: 0 });
    const providerCallsBefore = fake.requests.length;
    const statuses: number[] = [];
    for (let i = 0; i < 14; i++) statuses.push((await chat(p.liveKey)).status);
    t.same(statuses, [...Array<number>(11).fill(200), 402, 402, 402]);
    t.equal(fake.requests.length - providerCallsBefore, 11, "the refused calls never reached the provider");
    const refused = await chat(p.liveKey);
    t.match(refused.body, { error: { code: "budget_exceeded", details: { limit_usd: Math.round(limitUsd * 1e6) / 1e6 } } });
    const budget = await next().request("GET", `/v1/projects/${p.projectId}/budget`, { token: user.token });
    t.equal(num(field(budget.body, "spent_usd")), Math.round((11 * callNanos) / 1000) / 1e6);
    const embed = await next().request("POST", "/v1/embeddings", { token: p.liveKey, body: { model: "text-embedding-3-small", routing_strategy: "manual", input: "hi" } });
    t.equal(field(embed.body, "error", "code"), "budget_exceeded", "every category is stopped");
    const conversation = await next().request("POST", "/v1/agents/conversations", { token: p.liveKey, body: {} });
    const turn = await next().request("POST", `/v1/agents/conversations/${String(field(conversation.body, "id"))}/messages`, { token: p.liveKey, body: { content: "hi" } });
    t.equal(turn.status, 402, "an agent turn too");
    const video = await next().request("POST", "/v1/video/generate", { token: p.liveKey, body: { prompt: "a lighthouse at dusk", model: "simulated-video", routing_strategy: "manual" } });
    t.equal(field(video.body, "error", "code"), "budget_exceeded", "a video job is refused before it is created");
    t.equal(fake.requests.length - providerCallsBefore, 11, "still no provider call");
    t.equal((await chat(p.testKey)).status, 200, "test keys are never stopped");

    const alerts = events.events.filter((e) => e.type === "budget.alert" && field(e.data, "project_id") === p.projectId);
    t.same(alerts.map((e) => field(e.data, "threshold")).sort(), [0.5, 0.8, 1], "each threshold once");
    t.equal(new Set(alerts.map((e) => e.id)).size, 3);
    t.match(alerts[0], { organization_id: user.orgId, data: { project_id: p.projectId, period: String, limit_usd: Math.round(limitUsd * 1e6) / 1e6, spent_usd: Number } });

    // Raising the limit lets calls through again at once, on every replica.
    t.equal((await setBudget(user.token, p.projectId, { monthly_limit_usd: limitUsd * 2, hard_limit: true })).status, 200);
    t.equal((await chat(p.liveKey)).status, 200);
    t.equal((await setBudget(user.token, p.projectId, { monthly_limit_usd: limitUsd, hard_limit: false })).status, 200);
    t.equal((await chat(p.liveKey)).status, 200, "without hard_limit the budget only alerts");
  });

  t.test(`${target.name}: a burst of 40 concurrent calls with max_tokens overshoots by less than one call`, async (t) => {
    const user = await signup(next(), "burst");
    const p = await projectWithLiveKey(next(), user.token, user.orgId);
    const limitNanos = Math.round(10.5 * callNanos);
    t.equal((await setBudget(user.token, p.projectId, { monthly_limit_usd: limitNanos / 1e9, hard_limit: true })).status, 200);
    const providerCallsBefore = fake.requests.length;
    const body = { ...hello, max_tokens: 20 };
    const results = await Promise.all(Array.from({ length: 40 }, () => chat(p.liveKey, body)));
    const ok = results.filter((r) => r.status === 200).length;
    t.equal(results.filter((r) => r.status === 402).length, 40 - ok, "every other call is 402");
    t.equal(fake.requests.length - providerCallsBefore, ok, "only admitted calls reached the provider");
    // Records reach the ledger with the usage recorder's next flush: read until they are all in (or too many).
    const report = await eventually(
      () => usage(user.token, p.projectId),
      (r) => num(field(r.body, "live", "cost_nanos")) >= ok * callNanos,
    );
    const spent = num(field(report.body, "live", "cost_nanos"));
    t.equal(spent, ok * callNanos, "the ledger holds exactly the calls that succeeded");
    t.ok(spent - limitNanos < callNanos, `overshoot ${spent - limitNanos} nano-dollars < one call (${callNanos})`);
    t.ok(ok >= 1);
  });

  t.test(`${target.name}: budget input is validated`, async (t) => {
    const user = await signup(next(), "valid");
    for (const body of [{}, { monthly_limit_usd: -1 }, { monthly_limit_usd: 1, alert_thresholds: [0] }, { monthly_limit_usd: 1, hard_limit: "yes" }, { monthly_limit_usd: 1, extra: 1 }]) {
      const r = await setBudget(user.token, user.projectId, body);
      t.equal(r.status, 400, JSON.stringify(body));
      t.equal(field(r.body, "error", "code"), "invalid_request");
    }
    const fresh = await next().request("GET", `/v1/projects/${user.projectId}/budget`, { token: user.token });
    t.match(fresh.body, { monthly_limit_usd: null, hard_limit: false, alert_thresholds: [0.5, 0.8, 1] });
  });
}
