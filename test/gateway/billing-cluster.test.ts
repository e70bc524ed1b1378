// Billing on the real cluster: three Troupe replicas (the real gateway,
// TROUPE_MODE=dapr, each with its daprd) sharing one Redis, their router
// pointed at the OpenAI fake. 2,000 concurrent live calls spread over the
// replicas land in the ledger to the nano-dollar; a 1,000-requests/min key
// gets exactly 1,000 admissions across them; a hard budget worth 10.5 calls
// admits exactly 11 sequential calls whatever replica each lands on.
import t from "tap";
import { Catalogue } from "../../providers/catalogue.ts";
import { eventually, hello, projectWithLiveKey } from "../support/billing.ts";
import { startDaprOpenAICluster } from "../support/dapr-openai-cluster.ts";
import { field, request, signup, str, type RequestOptions } from "../support/troupe.ts";

t.setTimeout(300_000);
const { openai: fake, urls } = await startDaprOpenAICluster({ label: "billing-cluster", replicas: 3, ownVectorIndex: true });
let turn = 0;
/** The replicas in turn, as a load balancer would spread requests. */
const next = (method: string, path: string, options?: RequestOptions) => request(urls[turn++ % urls.length] ?? "", method, path, options);
const catalogue = Catalogue.load();
const num = (value: unknown) => Number(value);

const user = await signup({ request: next }, "cluster-billing");

t.test("2,000 concurrent live calls over 3 replicas: the ledger total is the sum of their catalogue prices, to the nano-dollar", async (t) => {
  const p = await projectWithLiveKey({ request: next }, user.token, user.orgId, "load");
  const answers = await Promise.all(
    Array.from({ length: 2000 }, (_, i) =>
      next("POST", "/v1/chat/completions", { token: p.liveKey, body: { ...hello, messages: [{ role: "user", content: `hello ${"there ".repeat(i % 13)}` }] } }),
    ),
  );
  const ok = answers.filter((a) => a.status === 200);
  t.equal(ok.length, 2000, `statuses: ${JSON.stringify([...new Set(answers.map((a) => a.status))])}`);
  let expected = 0;
  for (const a of ok) {
    expected += Math.round(catalogue.priceOf("gpt-4.1-mini", { input_tokens: num(field(a.body, "input_tokens")), output_tokens: num(field(a.body, "output_tokens")) }) * 1e9);
  }
  const report = await eventually(
    () => next("GET", `/v1/projects/${p.projectId}/usage?group_by=day`, { token: user.token }),
    (r) => num(field(r.body, "live", "calls")) >= ok.length,
    20_000,
  );
  t.equal(num(field(report.body, "live", "calls")), ok.length, "every call once");
  t.equal(num(field(report.body, "live", "cost_nanos")), expected, "the ledger equals the sum of the catalogue prices");
  t.equal(num(field(report.body, "live", "cost_usd")), Math.round(expected / 1000) / 1e6, "and in USD, to the micro-dollar");
});

t.test("a 1,000-requests/min key gets exactly 1,000 admissions across the 3 replicas", async (t) => {
  const created = await next("POST", `/v1/environments/${user.developmentEnvId}/api-keys`, { token: user.token, body: { name: "1000/min", rate_limit_per_minute: 1000 } });
  const key = str(created.body, "key");
  const statuses: number[] = [];
  for (let wave = 0; wave < 6; wave++) {
    const answers = await Promise.all(Array.from({ length: 250 }, () => next("GET", "/v1/models?category=embedding", { token: key })));
    statuses.push(...answers.map((a) => a.status));
  }
  t.equal(statuses.filter((s) => s === 200).length, 1000);
  t.equal(statuses.filter((s) => s === 429).length, 500);
});

t.test("a hard budget worth 10.5 calls admits exactly 11 sequential calls across the replicas, then 402 without a provider call", async (t) => {
  const p = await projectWithLiveKey({ request: next }, user.token, user.orgId, "hard");
  const probe = await next("POST", "/v1/chat/completions", { token: p.testKey, body: hello });
  const callNanos = Math.round(catalogue.priceOf("gpt-4.1-mini", { input_tokens: num(field(probe.body, "input_tokens")), output_tokens: num(field(probe.body, "output_tokens")) }) * 1e9);
  const put = await next("PUT", `/v1/projects/${p.projectId}/budget`, { token: user.token, body: { monthly_limit_usd: (10.5 * callNanos) / 1e9, hard_limit: true } });
  t.equal(put.status, 200, put.text);
  const before = fake.requests.length;
  const statuses: number[] = [];
  for (let i = 0; i < 13; i++) statuses.push((await next("POST", "/v1/chat/completions", { token: p.liveKey, body: hello })).status);
  t.same(statuses, [...Array<number>(11).fill(200), 402, 402]);
  t.equal(fake.requests.length - before, 11, "the refused calls never reached the provider");
});
