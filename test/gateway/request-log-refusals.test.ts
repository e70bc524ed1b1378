// The request log over real sockets, for calls refused before they reach a
// provider: a key past its requests per minute (429), past its own budget
// (402), naming a model outside its allowlist (403 model_not_allowed) or
// calling outside its scopes (403 insufficient_scope) — each leaves one entry
// with its status and error code, as an answered call does.
import t from "tap";
import { eventually, hello, projectWithLiveKey, startFakeOpenAI } from "../support/billing.ts";
import { field, signup, str, startTestTroupe } from "../support/troupe.ts";

t.setTimeout(90_000);
const { fake, router } = await startFakeOpenAI();
t.teardown(() => fake.close());
const troupe = await startTestTroupe({}, { router: router() });
t.teardown(() => troupe.stop());
const owner = await signup(troupe, "reqlog-refused");
const project = await projectWithLiveKey(troupe, owner.token, owner.orgId, "refusals");

const newKey = async (body: Record<string, unknown>) => {
  const res = await troupe.request("POST", `/v1/environments/${project.productionEnvId}/api-keys`, { token: owner.token, body: { name: "limited", live: true, ...body } });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
  return { key: str(res.body, "key"), id: str(res.body, "id") };
};
const chat = (key: string, body: unknown = hello) => troupe.request("POST", "/v1/chat/completions", { token: key, body });
const entriesOf = (body: unknown): Record<string, unknown>[] => {
  const data = field(body, "data");
  return Array.isArray(data) ? (data as Record<string, unknown>[]) : [];
};
const idOf = (r: { headers: Headers }) => r.headers.get("x-request-id") ?? "";

const rateLimited = await newKey({ rate_limit_per_minute: 1 });
const budgeted = await newKey({ rate_limit_per_minute: 1_000_000, monthly_budget_usd: 0.000001 });
const allowlisted = await newKey({ rate_limit_per_minute: 1_000_000, models: ["gpt-4.1"] });
const imagesOnly = await newKey({ rate_limit_per_minute: 1_000_000, scopes: ["images"] });

const first = await chat(rateLimited.key);
const second = await chat(rateLimited.key);
// The budget fits a call or so (and its lease allowance): spent until refused.
const spent: Awaited<ReturnType<typeof chat>>[] = [];
let overBudget = await chat(budgeted.key);
while (overBudget.status === 200 && spent.length < 20) {
  spent.push(overBudget);
  overBudget = await chat(budgeted.key);
}
const notAllowed = await chat(allowlisted.key);
const outOfScope = await chat(imagesOnly.key);
const calls = [first, second, ...spent, overBudget, notAllowed, outOfScope];
const log = await eventually(
  () => troupe.request("GET", `/v1/projects/${project.projectId}/requests`, { token: owner.token }),
  (r) => entriesOf(r.body).length >= calls.length,
);
const byId = new Map(entriesOf(log.body).map((e) => [e["request_id"], e]));

t.test("each refusal is answered as documented", async (t) => {
  t.same(
    [first, second, overBudget, notAllowed, outOfScope].map((r) => [r.status, field(r.body, "error", "code") ?? null]),
    [
      [200, null],
      [429, "rate_limited"],
      [402, "budget_exceeded"],
      [403, "model_not_allowed"],
      [403, "insufficient_scope"],
    ],
  );
});

t.test("each refused call leaves one entry naming its key, status and code", async (t) => {
  t.equal(byId.size, calls.length, "one entry per call");
  const expected: [typeof first, string, number, string | null][] = [
    [first, rateLimited.id, 200, null],
    [second, rateLimited.id, 429, "rate_limited"],
    [overBudget, budgeted.id, 402, "budget_exceeded"],
    [notAllowed, allowlisted.id, 403, "model_not_allowed"],
    [outOfScope, imagesOnly.id, 403, "insufficient_scope"],
  ];
  for (const [res, keyId, status, code] of expected) {
    t.match(byId.get(idOf(res)), { api_key_id: keyId, status, error_code: code, route: "/v1/chat/completions", project_id: project.projectId }, `${status} ${code ?? ""}`);
  }
  t.equal(field(byId.get(idOf(second)), "cost_usd"), 0, "a refused call costs nothing");
  const errors = await troupe.request("GET", `/v1/projects/${project.projectId}/requests?status=429`, { token: owner.token });
  t.same(entriesOf(errors.body).map((e) => e["request_id"]), [idOf(second)], "filtered by the refusal's status");
});
