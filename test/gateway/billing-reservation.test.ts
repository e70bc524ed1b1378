// A hard budget holds against bursts of calls without max_tokens (docs/guides/access-control.md), over real HTTP against an embedded Troupe whose OpenAI
// provider is the fake: such a call reserves its input plus the most output
// its model can produce (the catalogue's max_output_tokens), so 200
// concurrent gpt-4.1 calls answering ~1,000 tokens each, against a budget
// worth 10 of them, leave the ledger at or under the limit, and only the
// admitted calls reach the provider. The same for vision and translation.
// Sequential calls still use the whole budget.
import t from "tap";
import { projectWithLiveKey, startFakeOpenAI } from "../support/billing.ts";
import { field, signup, startTestTroupe } from "../support/troupe.ts";

t.setTimeout(120_000);
const { fake, router } = await startFakeOpenAI();
const troupe = await startTestTroupe({}, { router: router() });
t.teardown(async () => {
  await troupe.stop();
  await fake.close();
});
const user = await signup(troupe, "reserve");

/** ~1,000 words: the fake echoes them, so the answer is ~1,000 output tokens. */
const longPrompt = Array.from({ length: 999 }, (_, i) => `word${i}`).join(" ");
const chatBody = { model: "gpt-4.1", routing_strategy: "manual", messages: [{ role: "user", content: longPrompt }] };
const visionBody = { model: "gpt-4.1", routing_strategy: "manual", prompt: longPrompt, image_url: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==" };

const liveCost = async (projectId: string): Promise<number> => {
  const report = await troupe.request("GET", `/v1/projects/${projectId}/usage`, { token: user.token });
  const cost = field(report.body, "live", "cost_nanos");
  if (typeof cost !== "number") throw new Error(`usage: ${report.text}`);
  return cost;
};

/** The live cost once it reached `expected` (the usage report may trail the ledger a little), or as it is after 5 s. */
async function settled(projectId: string, expected: number): Promise<number> {
  let cost = await liveCost(projectId);
  for (let i = 0; i < 100 && cost < expected; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    cost = await liveCost(projectId);
  }
  return cost;
}

/** What one call costs, measured on a project without a budget. */
async function costOfOne(path: string, body: unknown): Promise<number> {
  const p = await projectWithLiveKey(troupe, user.token, user.orgId, `measure ${path}`);
  const res = await troupe.request("POST", path, { token: p.liveKey, body });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text}`);
  for (let i = 0; i < 100; i++) {
    const cost = await liveCost(p.projectId);
    if (cost > 0) return cost;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("the measured call was never recorded");
}

async function budgeted(name: string, callNanos: number, calls: number) {
  const p = await projectWithLiveKey(troupe, user.token, user.orgId, name);
  const limitNanos = calls * callNanos;
  const put = await troupe.request("PUT", `/v1/projects/${p.projectId}/budget`, { token: user.token, body: { monthly_limit_usd: limitNanos / 1e9, hard_limit: true } });
  if (put.status !== 200) throw new Error(`budget: ${put.text}`);
  return { ...p, limitNanos };
}

for (const [label, path, body] of [
  ["chat", "/v1/chat/completions", chatBody],
  ["vision", "/v1/vision/analyze", visionBody],
] as const) {
  t.test(`${label}: 200 concurrent calls without max_tokens against a budget worth 10 stay within it`, async (t) => {
    const callNanos = await costOfOne(path, body);
    t.ok(callNanos > 8_000_000, `one call costs ${callNanos} nano-dollars (~1,000 output tokens of gpt-4.1)`);
    const p = await budgeted(`burst ${label}`, callNanos, 10);
    const before = fake.requests.length;
    const results = await Promise.all(Array.from({ length: 200 }, () => troupe.request("POST", path, { token: p.liveKey, body })));
    const ok = results.filter((r) => r.status === 200).length;
    t.equal(results.filter((r) => r.status === 402).length, 200 - ok, "every other call is 402 budget_exceeded");
    t.ok(ok >= 1 && ok <= 10, `${ok} admitted`);
    t.equal(fake.requests.length - before, ok, "only the admitted calls reached the provider");
    const spent = await settled(p.projectId, ok * callNanos);
    t.equal(spent, ok * callNanos, "the ledger holds exactly the calls that ran");
    t.ok(spent <= p.limitNanos, `spent ${spent} <= limit ${p.limitNanos}`);
  });
}

t.test("translation: a burst without max_tokens stays within the budget", async (t) => {
  const body = { model: "gpt-4.1", routing_strategy: "manual", text: longPrompt, target_language: "fr" };
  const callNanos = await costOfOne("/v1/translations", body);
  const p = await budgeted("burst translation", callNanos, 10);
  const results = await Promise.all(Array.from({ length: 100 }, () => troupe.request("POST", "/v1/translations", { token: p.liveKey, body })));
  const ok = results.filter((r) => r.status === 200).length;
  t.ok(ok >= 1 && ok <= 10, `${ok} admitted`);
  t.ok((await liveCost(p.projectId)) <= p.limitNanos, "spent within the limit");
});

t.test("agents: a burst of turns on many conversations stays within the budget", async (t) => {
  const turn = (key: string, id: string) => troupe.request("POST", `/v1/agents/conversations/${id}/messages`, { token: key, body: { content: "what do you remember about lighthouses?" } });
  const conversation = async (key: string) => {
    const created = await troupe.request("POST", "/v1/agents/conversations", { token: key, body: { model: "gpt-4.1", routing_strategy: "manual" } });
    if (created.status !== 201) throw new Error(`conversation: ${created.text}`);
    return String(field(created.body, "id"));
  };
  const measure = await projectWithLiveKey(troupe, user.token, user.orgId, "measure turn");
  t.equal((await turn(measure.liveKey, await conversation(measure.liveKey))).status, 200);
  const turnNanos = await settled(measure.projectId, 1);
  t.ok(turnNanos > 0, `one turn costs ${turnNanos} nano-dollars`);

  const p = await budgeted("burst agents", turnNanos, 10);
  const ids = await Promise.all(Array.from({ length: 50 }, () => conversation(p.liveKey)));
  const results = await Promise.all(ids.map((id) => turn(p.liveKey, id)));
  const ok = results.filter((r) => r.status === 200).length;
  t.equal(results.filter((r) => r.status === 402).length, 50 - ok, "every other turn is 402");
  t.ok(ok >= 1 && ok <= 10, `${ok} turns admitted`);
  // A turn's calls are recorded off the request path: wait for them.
  const spent = await settled(p.projectId, ok * turnNanos);
  t.equal(spent, ok * turnNanos, "the ledger holds the admitted turns");
  t.ok(spent <= p.limitNanos, `spent ${spent} <= limit ${p.limitNanos}`);
});

t.test("one call at a time still spends the whole budget", async (t) => {
  const callNanos = await costOfOne("/v1/chat/completions", chatBody);
  const p = await budgeted("sequential", callNanos, 3);
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) statuses.push((await troupe.request("POST", "/v1/chat/completions", { token: p.liveKey, body: chatBody })).status);
  t.same(statuses, [200, 200, 200, 402, 402], "a reservation larger than the budget does not stop a call while nothing else is in flight");
  t.equal(await liveCost(p.projectId), p.limitNanos);
});

t.test("the vector index's add and search are held to the hard limit like /v1/embeddings", async (t) => {
  const passage = longPrompt;
  const callNanos = await costOfOne("/v1/embeddings/index", { content: passage });
  t.ok(callNanos > 0, `one index add costs ${callNanos} nano-dollars (the index model is priced)`);
  const p = await budgeted("burst index", callNanos, 5);
  const before = fake.requests.length;
  const results = await Promise.all(Array.from({ length: 50 }, () => troupe.request("POST", "/v1/embeddings/index", { token: p.liveKey, body: { content: passage } })));
  const ok = results.filter((r) => r.status === 200).length;
  t.equal(results.filter((r) => r.status === 402).length, 50 - ok, "every other add is 402 budget_exceeded");
  t.ok(ok >= 1 && ok <= 5, `${ok} admitted`);
  t.equal(fake.requests.length - before, ok, "only the admitted adds reached the provider");
  const spent = await settled(p.projectId, ok * callNanos);
  t.equal(spent, ok * callNanos, "the ledger holds exactly the adds that ran");
  const search = await troupe.request("POST", "/v1/embeddings/search", { token: p.liveKey, body: { query: passage } });
  if (spent + callNanos > p.limitNanos) t.equal(search.status, 402, "a search that cannot fit is refused too");
});
