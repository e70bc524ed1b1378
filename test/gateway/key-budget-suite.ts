// Per-key monthly budgets end to end over HTTP (tenancy/billing.ts, the
// key's record): run on one embedded Troupe (alerts through the real webhook
// pipeline, signatures checked) and on two Troupes sharing one Redis
// (requests alternate between them). Provider calls are counted at the fake;
// the key's spend is read three ways — the ledger's counter the budget check
// uses, the usage report grouped by key, and a refusal's details — and must
// agree to the nano-dollar.
import type { Test } from "tap";
import { generationEstimateNanos } from "../../gateway/billed-call.ts";
import { countChatInputTokens } from "../../providers/tokens.ts";
import type { FakeServer } from "../fakes/fake-server.ts";
import { eventually, hello, projectWithLiveKey } from "../support/billing.ts";
import { field, signup, str, type TestTroupe } from "../support/troupe.ts";

/** An alert as the target saw it delivered: its event id, data, and whether its signature was checked. */
export interface SeenAlert {
  eventId: string;
  data: unknown;
  verified: boolean;
}

export interface KeyBudgetTarget {
  name: string;
  troupes: TestTroupe[];
  fake: FakeServer;
  /** Before the tests of an organization's alerts: subscribe it (embedded: a webhook) — `liveKey` may create the webhook. */
  subscribe(session: string, liveKey: string): Promise<void>;
  /** The key.budget.alert events delivered so far for `apiKeyId`. */
  alerts(apiKeyId: string): SeenAlert[];
}

const num = (value: unknown): number => {
  if (typeof value !== "number") throw new Error(`expected a number, got ${JSON.stringify(value)}`);
  return value;
};

/** USD to the micro-dollar, as the API shows nano-dollars. */
const usd = (nanos: number) => Math.round(nanos / 1000) / 1e6;

/** max_tokens under the fake's answer: every call's output is exactly 3 tokens, so its estimate is close to its cost. */
const body = { ...hello, max_tokens: 3 };

export function keyBudgetSuite(t: Test, target: KeyBudgetTarget): void {
  const { troupes, fake } = target;
  let turn = 0;
  const next = () => troupes[turn++ % troupes.length]!;
  const chat = (key: string) => next().request("POST", "/v1/chat/completions", { token: key, body });
  const createKey = (session: string, envId: string, extra: Record<string, unknown>) =>
    next().request("POST", `/v1/environments/${envId}/api-keys`, { token: session, body: { name: "budgeted", live: true, rate_limit_per_minute: 1_000_000, ...extra } });
  const patchKey = (session: string, keyId: string, patch: Record<string, unknown>) => next().request("PATCH", `/v1/api-keys/${keyId}`, { token: session, body: patch });
  const period = () => new Date().toISOString().slice(0, 7);
  const keySpend = (projectId: string, keyId: string) => next().services.ledger.spent(projectId, period(), keyId);
  const reportedSpend = async (session: string, projectId: string, keyId: string): Promise<number> => {
    const report = await next().request("GET", `/v1/projects/${projectId}/usage?group_by=key`, { token: session });
    const groups = field(report.body, "groups") as { key: string; live: { cost_nanos: number } }[];
    return groups.find((g) => g.key === keyId)?.live.cost_nanos ?? 0;
  };

  /** One call's real cost and its reservation (the estimate the budget check holds), nano-dollars. */
  let callNanos = 0;
  let estimateNanos = 0;

  t.before(async () => {
    const user = await signup(next(), "measure");
    const p = await projectWithLiveKey(next(), user.token, user.orgId);
    const first = await chat(p.liveKey);
    if (first.status !== 200) throw new Error(`measuring call: ${first.status} ${first.text}`);
    const catalogue = next().services.router.catalogue;
    callNanos = Math.round(catalogue.priceOf("gpt-4.1-mini", { input_tokens: num(field(first.body, "input_tokens")), output_tokens: num(field(first.body, "output_tokens")) }) * 1e9);
    estimateNanos = Math.ceil(generationEstimateNanos(catalogue, "text", body.model, countChatInputTokens(body.messages.map((m) => ({ role: "user" as const, content: m.content }))), body.max_tokens));
    if (!(callNanos > 0 && estimateNanos >= callNanos && estimateNanos < 1.1 * callNanos)) throw new Error(`a call costs ${callNanos}, its estimate ${estimateNanos}: not within 10 %`);
  });

  t.test(`${target.name}: 40 concurrent calls on a key budget that fits 10 admit 10 (± one call); spend = ledger = report; alerts once; PATCH raises it`, async (t) => {
    const user = await signup(next(), "keyburst");
    const p = await projectWithLiveKey(next(), user.token, user.orgId);
    await target.subscribe(user.token, p.liveKey);
    // Fits 10 calls; each admitted call holds its estimate (within 10 % above its cost) until it settles.
    const limitNanos = 10 * callNanos;
    const created = await createKey(user.token, p.productionEnvId, { monthly_budget_usd: limitNanos / 1e9 });
    t.equal(created.status, 201, created.text);
    t.match(created.body, { monthly_budget_usd: limitNanos / 1e9, hard_limit: true, alert_thresholds: [0.5, 0.8, 1] }, "the budget is shown in the key record");
    const key = str(created.body, "key");
    const keyId = str(created.body, "id");

    const before = fake.requests.length;
    const results = await Promise.all(Array.from({ length: 40 }, () => chat(key)));
    const admitted = results.filter((r) => r.status === 200).length;
    t.equal(results.filter((r) => r.status === 402).length, 40 - admitted, "every other call is 402");
    t.equal(fake.requests.length - before, admitted, "refused calls never reached the provider");
    // A refusal means spent + held ≥ the limit, and no call holds more than 1.1 calls' cost: at least 10 -
    // ⌈10 / 1.1⌉ - 1 = 9 held; a call settled during the burst frees the rest of its estimate.
    t.ok(admitted >= 9 && admitted <= 11, `admitted ${admitted}: 10, or 11 for the one call a burst may overshoot by`);
    const refused = results.find((r) => r.status === 402);
    t.match(refused?.body, { error: { code: "budget_exceeded", details: { budget: "api_key", api_key_id: keyId, limit_usd: usd(limitNanos) } } }, "the key's budget, named");
    t.match(String(field(refused?.body, "error", "message")), /API key's monthly budget/);

    const spent = await eventually(
      () => reportedSpend(user.token, p.projectId, keyId),
      (n) => n >= admitted * callNanos,
    );
    t.equal(spent, admitted * callNanos, "the usage report holds exactly the admitted calls");
    t.equal(await keySpend(p.projectId, keyId), spent, "the budget check's counter = the usage report, to the nano-dollar");
    t.ok(spent - limitNanos < callNanos, `overshoot ${spent - limitNanos} < one call (${callNanos})`);
    const again = await chat(key);
    t.equal(again.status, 402, "still refused after the burst settled");
    t.equal(num(field(again.body, "error", "details", "spent_usd")), usd(spent), "the refusal's spent_usd = the ledger's");
    const messages = [{ role: "user", content: "hello there" }];
    const viaOpenAi = await next().request("POST", "/openai/v1/chat/completions", { token: key, body: { model: "gpt-4.1-mini", messages, max_tokens: 3 } });
    t.equal(viaOpenAi.status, 429, "/openai/v1: the key's budget refuses as OpenAI's quota does");
    t.equal(field(viaOpenAi.body, "error", "code"), "insufficient_quota");
    const viaAnthropic = await next().request("POST", "/anthropic/v1/messages", {
      headers: { "x-api-key": key, "anthropic-version": "2023-06-01" },
      body: { model: "gpt-4.1-mini", messages, max_tokens: 3 },
    });
    t.equal(viaAnthropic.status, 402, "/anthropic: 402");
    t.equal(field(viaAnthropic.body, "error", "type"), "billing_error");
    const conversation = await next().request("POST", "/v1/agents/conversations", { token: key, body: {} });
    const agentTurn = await next().request("POST", `/v1/agents/conversations/${String(field(conversation.body, "id"))}/messages`, { token: key, body: { content: "hi" } });
    t.equal(agentTurn.status, 402, "an agent turn is refused too");
    t.equal(field(agentTurn.body, "error", "details", "budget"), "api_key");
    t.equal(fake.requests.length - before, admitted, "no mount reached the provider past the key's budget");
    t.equal(await reportedSpend(user.token, p.projectId, p.liveKeyId), 0, "the project's other key spent nothing of it");
    t.equal((await chat(p.liveKey)).status, 200, "the project's other key is not stopped");

    const crossed = [0.5, 0.8, 1].filter((threshold) => spent >= Math.ceil(limitNanos * threshold));
    t.ok(crossed.includes(0.8), "the burst crossed 50 % and 80 %");
    const alerts = await eventually(
      async () => target.alerts(keyId),
      (seen) => seen.length >= crossed.length,
      20_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 500)); // room for a duplicate to show up
    t.same(target.alerts(keyId).map((a) => field(a.data, "threshold")).sort(), crossed, "one key.budget.alert per threshold crossed");
    t.equal(new Set(alerts.map((a) => a.eventId)).size, crossed.length, "distinct events");
    for (const alert of alerts) {
      t.ok(alert.verified, "signature checked");
      t.match(alert.data, { api_key_id: keyId, project_id: p.projectId, period: period(), budget_usd: usd(limitNanos), spent_usd: Number });
    }

    const raised = await patchKey(user.token, keyId, { monthly_budget_usd: (3 * limitNanos) / 1e9 });
    t.equal(raised.status, 200, raised.text);
    t.match(raised.body, { monthly_budget_usd: (3 * limitNanos) / 1e9, hard_limit: true });
    t.equal((await chat(key)).status, 200, "a raised budget admits again, at once");
    t.equal((await chat(key)).status, 200, "on the other replica too");
  });

  t.test(`${target.name}: a soft key budget (hard_limit false) admits past it and alerts once per threshold`, async (t) => {
    const user = await signup(next(), "keysoft");
    const p = await projectWithLiveKey(next(), user.token, user.orgId);
    await target.subscribe(user.token, p.liveKey);
    const limitNanos = 2 * callNanos;
    const created = await createKey(user.token, p.productionEnvId, { monthly_budget_usd: limitNanos / 1e9, hard_limit: false, alert_thresholds: [1, 0.5] });
    t.equal(created.status, 201, created.text);
    t.match(created.body, { hard_limit: false, alert_thresholds: [0.5, 1] });
    const key = str(created.body, "key");
    const keyId = str(created.body, "id");
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await chat(key)).status);
    t.same(statuses, [200, 200, 200, 200], "past its budget, still admitted");
    await eventually(
      async () => target.alerts(keyId),
      (seen) => seen.length >= 2,
      20_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    t.same(target.alerts(keyId).map((a) => field(a.data, "threshold")).sort(), [0.5, 1], "each threshold once, though spent went to twice the budget");
    t.equal(await keySpend(p.projectId, keyId), await reportedSpend(user.token, p.projectId, keyId));
  });

  t.test(`${target.name}: both budgets apply, the smaller wins`, async (t) => {
    const user = await signup(next(), "keyboth");
    const p = await projectWithLiveKey(next(), user.token, user.orgId);
    // Sequential calls are admitted while spent < the limit: a budget of 2.5 calls admits 3.
    const small = await createKey(user.token, p.productionEnvId, { monthly_budget_usd: (2.5 * callNanos) / 1e9 });
    const large = await createKey(user.token, p.productionEnvId, { monthly_budget_usd: (1000 * callNanos) / 1e9 });
    t.equal(small.status, 201, small.text);
    t.equal(large.status, 201, large.text);
    const projectBudget = await next().request("PUT", `/v1/projects/${p.projectId}/budget`, {
      token: user.token,
      body: { monthly_limit_usd: (100 * callNanos) / 1e9, hard_limit: true },
    });
    t.equal(projectBudget.status, 200, projectBudget.text);
    const smallKey = str(small.body, "key");
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await chat(smallKey)).status);
    t.same(statuses, [200, 200, 200, 402, 402], "the key's budget is the smaller: it stops the key");
    const refusedByKey = await chat(smallKey);
    t.equal(field(refusedByKey.body, "error", "details", "budget"), "api_key");

    // Now the project's is the smaller: the large key stops at the project's limit.
    const spentByProject = num(field((await next().request("GET", `/v1/projects/${p.projectId}/budget`, { token: user.token })).body, "spent_usd"));
    const tight = await next().request("PUT", `/v1/projects/${p.projectId}/budget`, {
      token: user.token,
      body: { monthly_limit_usd: spentByProject + (1.5 * callNanos) / 1e9, hard_limit: true },
    });
    t.equal(tight.status, 200, tight.text);
    const largeKey = str(large.body, "key");
    const before = fake.requests.length;
    const after: number[] = [];
    for (let i = 0; i < 4; i++) after.push((await chat(largeKey)).status);
    t.same(after, [200, 200, 402, 402], "the project's budget is the smaller: it stops the key with room left");
    t.equal(fake.requests.length - before, 2, "refused before any provider call");
    const refusedByProject = await chat(largeKey);
    t.match(refusedByProject.body, { error: { code: "budget_exceeded" } });
    t.equal(field(refusedByProject.body, "error", "details", "budget"), undefined, "the project's refusal, not the key's");
    t.equal(await keySpend(p.projectId, str(large.body, "id")), 2 * callNanos, "the large key's spend: its two admitted calls");
  });

  t.test(`${target.name}: key budget input is validated and kept to owners and admins`, async (t) => {
    const user = await signup(next(), "keyvalid");
    const p = await projectWithLiveKey(next(), user.token, user.orgId);
    for (const bad of [{ monthly_budget_usd: -1 }, { monthly_budget_usd: 0 }, { monthly_budget_usd: 2_000_000 }, { hard_limit: "yes" }, { alert_thresholds: [0] }, { alert_thresholds: [11] }]) {
      const r = await patchKey(user.token, p.liveKeyId, bad);
      t.equal(r.status, 400, JSON.stringify(bad));
      t.match(String(JSON.stringify(field(r.body, "error", "details"))), new RegExp(Object.keys(bad)[0]!), "names the field");
    }
    const shown = await patchKey(user.token, p.liveKeyId, { monthly_budget_usd: null });
    t.match(shown.body, { monthly_budget_usd: null, hard_limit: true, alert_thresholds: [0.5, 0.8, 1] }, "no budget: null");
    t.equal((await chat(p.liveKey)).status, 200);
    const member = await signup(next(), "keymember");
    const invite = await next().request("POST", `/v1/orgs/${user.orgId}/invitations`, { token: user.token, body: { email: member.email, role: "member" } });
    const accepted = await next().request("POST", "/v1/invitations/accept", { token: member.token, body: { token: str(invite.body, "token") } });
    t.equal(accepted.status, 200, accepted.text);
    const byMember = await patchKey(member.token, p.liveKeyId, { monthly_budget_usd: 0.000001 });
    t.equal(byMember.status, 403, "a member may not set a key's budget");
    t.equal(await next().services.ledger.getBudget(p.projectId, p.liveKeyId).then((b) => b?.hard_limit ?? false), false, "and nothing reached the ledger");
    t.equal((await chat(p.liveKey)).status, 200, "the key is not stopped");
    const stranger = await signup(next(), "keystranger");
    t.equal((await patchKey(stranger.token, p.liveKeyId, { monthly_budget_usd: 1 })).status, 404, "another organization's key is not found");
    t.equal((await patchKey(p.liveKey, p.liveKeyId, { monthly_budget_usd: 1 })).status, 403, "an API key may not change keys (session only)");
  });
}
