// The steps the queued-at-kill tests share, embedded and on Dapr
// (test/gateway/compat/responses-background-queued-kill*.test.ts): a project
// and its key under hard budgets, background responses created while the
// process holds its runs (hold-background-runs.ts), and what must hold after
// the restart — each ends `completed` with one provider call, the next create
// fits the budgets, and the ledger has one record per response, to its key.
import type { Test } from "tap";
import type { UsageRecord } from "../../providers/usage.ts";
import { projectWithLiveKey } from "./billing.ts";
import { waitFor } from "./net.ts";
import { signup, str, type TestTroupe } from "./troupe.ts";

type Requester = Pick<TestTroupe, "request">;

export interface QueuedResponses {
  liveKey: string;
  liveKeyId: string;
  projectId: string;
  ids: string[];
}

export async function responseStatus(r: Requester, key: string, id: string): Promise<string> {
  const got = await r.request("GET", `/openai/v1/responses/${id}`, { token: key });
  if (got.status !== 200) throw new Error(`retrieve ${id}: ${got.status} ${got.text}`);
  return str(got.body, "status");
}

/**
 * Creates `count` background responses under hard project and key budgets,
 * then waits past a watchdog period (5 s) and checks that each is still
 * queued and that the provider saw nothing: the state a kill may land in.
 */
export async function queueHeldResponses(t: Test, r: Requester, label: string, count: number, providerCalls: () => number): Promise<QueuedResponses> {
  const user = await signup(r, label);
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
  await new Promise((resolve) => setTimeout(resolve, 6_000));
  for (const id of ids) t.equal(await responseStatus(r, p.liveKey, id), "queued", `${id} queued at the kill`);
  t.equal(providerCalls(), 0, "no provider call before the kill");
  return { liveKey: p.liveKey, liveKeyId: p.liveKeyId, projectId: p.projectId, ids };
}

/**
 * After the restart: each response ends `completed` (within `endMs`), with
 * one provider call each, and another create fits the budgets and completes
 * (the holds restored after the restart were released by the bills).
 * Resolves with that last response's id.
 */
export async function expectCompletedAfterRestart(t: Test, r: Requester, q: QueuedResponses, providerCalls: () => number, endMs: number): Promise<string> {
  for (const id of q.ids) {
    let seen = "queued";
    await waitFor(async () => ((seen = await responseStatus(r, q.liveKey, id)), seen !== "queued" && seen !== "in_progress"), endMs, `${id} to end`);
    t.equal(seen, "completed", `${id} completed after the restart`);
  }
  t.equal(providerCalls(), q.ids.length, "one provider call each");
  const after = await r.request("POST", "/openai/v1/responses", { token: q.liveKey, body: { model: "gpt-4.1-mini", input: "after", max_output_tokens: 100, background: true } });
  t.equal(after.status, 200, after.status === 200 ? "the next create fits the budgets" : after.text);
  const afterId = str(after.body, "id");
  await waitFor(async () => (await responseStatus(r, q.liveKey, afterId)) === "completed", 30_000, `${afterId} to complete`);
  return afterId;
}

/** One ledger record per queued response, to its key; nothing else billed but the one after; the key's spend is its records'. */
export function expectBilledOnce(t: Test, q: QueuedResponses, records: readonly UsageRecord[], keySpent: number): void {
  for (const id of q.ids) {
    const billed = records.filter((rec) => rec.usage_key === id);
    t.equal(billed.length, 1, `${id}: one ledger record`);
    t.equal(billed[0]?.api_key_id, q.liveKeyId, `${id}: billed to its key`);
  }
  const queuedCost = records.filter((rec) => q.ids.includes(rec.usage_key)).reduce((sum, rec) => sum + rec.cost_nanos, 0);
  t.ok(queuedCost > 0, `billed ${queuedCost} nano-dollars`);
  t.equal(records.length, q.ids.length + 1, "nothing else billed");
  const keyCost = records.filter((rec) => rec.api_key_id === q.liveKeyId).reduce((sum, rec) => sum + rec.cost_nanos, 0);
  t.equal(keySpent, keyCost, `the key's spend is its records' (${keyCost} nano-dollars)`);
}
