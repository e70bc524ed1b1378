// The Dapr variant of responses-background-queued-kill.test.ts: background
// responses still queued (not yet started) when the replica — its Troupe and
// its daprd — is killed -9 (TROUPE_MODE=dapr, Redis, placement and
// scheduler). The restarted replica's ResponseActors, activated by their
// durable watchdog reminders (the Dapr scheduler's), start them; each
// completes with one provider call and is billed exactly once — one record
// under its response id, to its key, in the Redis ledger. The first process
// queues and never starts runs (test/support/hold-background-runs.ts,
// preloaded), which holds them in the window between enqueue and claim that
// a kill may land in. The project and the key have hard budgets: the holds
// taken at create live in Redis through the kill and are released by the
// bills (the next create fits and runs; the key's spend is its records').
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import t from "tap";
import { periodOf } from "../../../tenancy/ledger.ts";
import { projectWithLiveKey } from "../../support/billing.ts";
import { startDaprOpenAICluster } from "../../support/dapr-openai-cluster.ts";
import { waitFor } from "../../support/net.ts";
import { request, signup, str, type RequestOptions } from "../../support/troupe.ts";
import { projectUsage } from "../../jobs/usage-reader.ts";

t.setTimeout(240_000);
const hold = pathToFileURL(join(import.meta.dirname, "../../support/hold-background-runs.ts")).href;
const plainNodeOptions = process.env["NODE_OPTIONS"] ?? "";
// appEnv is read by LocalCluster each time it spawns a replica: the first one holds its runs, the restart does not.
const { openai, cluster, ledger, appEnv, urls } = await startDaprOpenAICluster({
  label: "kill-queued-responses-dapr",
  replicas: 1,
  appEnv: { NODE_OPTIONS: `${plainNodeOptions} --import=${hold}`.trim() },
});
const base = urls[0]!;
const r = { request: (m: string, p: string, o?: RequestOptions) => request(base, m, p, o) };
const count = 3;

async function status(key: string, id: string): Promise<string> {
  const got = await r.request("GET", `/openai/v1/responses/${id}`, { token: key });
  if (got.status !== 200) throw new Error(`retrieve ${id}: ${got.status} ${got.text}`);
  return str(got.body, "status");
}

t.test(`${count} background responses queued at a kill -9 of the replica and its daprd: each completes after the restart, billed once`, async (t) => {
  const user = await signup(r, "kill-queued-responses-dapr");
  const p = await projectWithLiveKey(r, user.token, user.orgId);
  const budget = await r.request("PUT", `/v1/projects/${p.projectId}/budget`, { token: user.token, body: { monthly_limit_usd: 5, hard_limit: true } });
  t.equal(budget.status, 200, budget.status === 200 ? "project budget set" : budget.text);
  const keyBudget = await r.request("PATCH", `/v1/api-keys/${p.liveKeyId}`, { token: user.token, body: { monthly_budget_usd: 1, hard_limit: true } });
  t.equal(keyBudget.status, 200, keyBudget.status === 200 ? "key budget set" : keyBudget.text);

  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const created = await r.request("POST", "/openai/v1/responses", { token: p.liveKey, body: { model: "gpt-4.1-mini", input: `queued ${i}`, max_output_tokens: 100, background: true } });
    t.equal(created.status, 200, created.status === 200 ? `create ${i}` : created.text);
    t.equal(str(created.body, "status"), "queued", `create ${i} answers queued`);
    ids.push(str(created.body, "id"));
  }
  // Past a watchdog period (5 s): its reminder fired on the holding process, which did not start them.
  await new Promise((resolve) => setTimeout(resolve, 6_000));
  for (const id of ids) t.equal(await status(p.liveKey, id), "queued", `${id} queued at the kill`);
  t.equal(openai.requests.length, 0, "no provider call before the kill");
  await cluster.killReplica(0);

  appEnv["NODE_OPTIONS"] = plainNodeOptions;
  await cluster.startReplica(0);
  for (const id of ids) {
    let seen = "queued";
    await waitFor(async () => ((seen = await status(p.liveKey, id)), seen !== "queued" && seen !== "in_progress"), 60_000, `${id} to end`);
    t.equal(seen, "completed", `${id} completed after the restart`);
  }
  t.equal(openai.requests.length, count, "one provider call each");
  // The holds were released by the bills: another one fits under the key's budget and runs.
  const after = await r.request("POST", "/openai/v1/responses", { token: p.liveKey, body: { model: "gpt-4.1-mini", input: "after", max_output_tokens: 100, background: true } });
  t.equal(after.status, 200, after.status === 200 ? "the next create fits the budgets" : after.text);
  const afterId = str(after.body, "id");
  await waitFor(async () => (await status(p.liveKey, afterId)) === "completed", 30_000, `${afterId} to complete`);

  // The records reach Redis from the replica's usage recorder (through its journal, docs/operations/usage-journal.md), after the response ended.
  const billedIds = [...ids, afterId];
  await waitFor(async () => (await projectUsage(ledger, p.projectId)).filter((rec) => billedIds.includes(rec.usage_key)).length >= billedIds.length, 30_000, "the bills in the Redis ledger");
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const records = await projectUsage(ledger, p.projectId);
  for (const id of ids) {
    const billed = records.filter((rec) => rec.usage_key === id);
    t.equal(billed.length, 1, `${id}: one ledger record`);
    t.equal(billed[0]?.api_key_id, p.liveKeyId, `${id}: billed to its key`);
  }
  const queuedCost = records.filter((rec) => ids.includes(rec.usage_key)).reduce((sum, rec) => sum + rec.cost_nanos, 0);
  t.ok(queuedCost > 0, `billed ${queuedCost} nano-dollars`);
  t.equal(records.length, count + 1, "nothing else billed");
  const keyCost = records.filter((rec) => rec.api_key_id === p.liveKeyId).reduce((sum, rec) => sum + rec.cost_nanos, 0);
  const keySpent = await ledger.spent(p.projectId, periodOf(new Date().toISOString()), p.liveKeyId);
  t.equal(keySpent, keyCost, `the key's spend is its records' (${keyCost} nano-dollars)`);
});
