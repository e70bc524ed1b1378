// Budgets and usage on two Troupes sharing a 3-primary Redis Cluster
// (TEST_REDIS_CLUSTER_NODES when set, else its own), requests alternating between them: the billing
// suite, and 2,000 concurrent live calls under a hard limit whose ledger
// total is the sum of the admitted calls' catalogue prices to the
// nano-dollar. Reserve, settle and append are Lua scripts on the project's
// slot; the data store's batches on the {troupe:} slot.
import t from "tap";
import { Catalogue } from "../../providers/catalogue.ts";
import { eventually, hello, projectWithLiveKey, recordingPublisher, startFakeOpenAI } from "../support/billing.ts";
import { startTestRedisCluster } from "../support/redis-cluster.ts";
import { field, signup, startTestTroupe, type TestTroupe } from "../support/troupe.ts";
import { billingSuite } from "./billing-suite.ts";

t.setTimeout(240_000);
const cluster = await startTestRedisCluster();
const { fake, router } = await startFakeOpenAI(120_000);
const events = recordingPublisher();
const troupes: TestTroupe[] = [];
for (let i = 0; i < 2; i++) troupes.push(await startTestTroupe({ REDIS_CLUSTER_NODES: cluster.nodes.join(",") }, { router: router(), events }));
t.teardown(async () => {
  for (const troupe of troupes) await troupe.stop();
  await fake.close();
  await cluster.stop();
});

billingSuite(t, { name: "2 replicas on Redis Cluster", troupes, fake, events });

t.test("2,000 concurrent live calls under a hard limit over 2 replicas: the ledger total is the sum of their catalogue prices, to the nano-dollar", async (t) => {
  let turn = 0;
  const next = () => troupes[turn++ % troupes.length]!;
  const catalogue = Catalogue.load();
  const priceNanos = (body: unknown) =>
    Math.round(catalogue.priceOf("gpt-4.1-mini", { input_tokens: Number(field(body, "input_tokens")), output_tokens: Number(field(body, "output_tokens")) }) * 1e9);
  const user = await signup(next(), "cluster-2000");
  const p = await projectWithLiveKey(next(), user.token, user.orgId, "load");
  const probe = await next().request("POST", "/v1/chat/completions", { token: p.testKey, body: { ...hello, max_tokens: 20 } });
  // A hard limit every call reserves against (its estimate, held while 2,000 run at once) and settles; room for all of them.
  const limitNanos = 50_000 * priceNanos(probe.body);
  const put = await next().request("PUT", `/v1/projects/${p.projectId}/budget`, { token: user.token, body: { monthly_limit_usd: limitNanos / 1e9, hard_limit: true } });
  t.equal(put.status, 200, put.text);
  const answers = await Promise.all(
    Array.from({ length: 2000 }, (_, i) =>
      next().request("POST", "/v1/chat/completions", {
        token: p.liveKey,
        body: { ...hello, max_tokens: 20, messages: [{ role: "user", content: `hello ${"there ".repeat(i % 13)}` }] },
      }),
    ),
  );
  const ok = answers.filter((a) => a.status === 200);
  t.equal(ok.length, 2000, `statuses: ${JSON.stringify([...new Set(answers.map((a) => a.status))])} ${answers.find((a) => a.status !== 200)?.text ?? ""}`);
  const expected = ok.reduce((sum, a) => sum + priceNanos(a.body), 0);
  const report = await eventually(
    () => next().request("GET", `/v1/projects/${p.projectId}/usage`, { token: user.token }),
    (r) => Number(field(r.body, "live", "calls")) >= ok.length,
    30_000,
  );
  t.equal(Number(field(report.body, "live", "calls")), ok.length, "every call once");
  t.equal(Number(field(report.body, "live", "cost_nanos")), expected, "the ledger equals the sum of the catalogue prices");
  const budget = await next().request("GET", `/v1/projects/${p.projectId}/budget`, { token: user.token });
  t.equal(Math.round(Number(field(budget.body, "spent_usd")) * 1e6), Math.round(expected / 1000), "the budget's spend, to the micro-dollar");
});
