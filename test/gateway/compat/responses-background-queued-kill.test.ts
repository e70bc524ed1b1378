// A background response still queued (not yet started) when the embedded
// host is killed with SIGKILL: the restart on the same data directory starts
// it (its actor's watchdog), it completes, and it is billed exactly once —
// one ledger record under its response id, to its key. The first process
// queues and never starts runs (test/support/hold-background-runs.ts,
// preloaded), which holds them in the window between enqueue and claim that
// a kill may land in. The project and the key both have hard budgets, so the
// holds lost with the embedded ledger's memory are restored and then
// released by the bill (the next create fits again).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import t from "tap";
import { startOpenAIFake } from "../../fakes/openai-fake.ts";
import { projectWithLiveKey } from "../../support/billing.ts";
import { embeddedEnv, killAndWait } from "../../support/gateway-process.ts";
import { freePort, waitFor } from "../../support/net.ts";
import { request, signup, str } from "../../support/troupe.ts";
import { EmbeddedLedgerStore } from "../../../tenancy/embedded-ledger-store.ts";
import { periodOf } from "../../../tenancy/ledger.ts";
import { projectUsage } from "../../jobs/usage-reader.ts";

t.setTimeout(180_000);
const openai = await startOpenAIFake({ apiKey: "sk-fake" });
t.teardown(() => openai.close());
const dataDir = mkdtempSync(join(tmpdir(), "troupe-kill-queued-responses-"));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const env: NodeJS.ProcessEnv = {
  ...embeddedEnv(),
  PORT: String(port),
  HOST: "127.0.0.1",
  TROUPE_DATA_DIR: dataDir,
  LOG_LEVEL: "error",
  OPENAI_API_KEY: "sk-fake",
  OPENAI_BASE_URL: `${openai.url}/v1`,
  OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost",
};
const hold = pathToFileURL(join(import.meta.dirname, "../../support/hold-background-runs.ts")).href;

async function start(holdRuns: boolean): Promise<ChildProcess> {
  const options = holdRuns ? `${env.NODE_OPTIONS ?? ""} --import=${hold}`.trim() : (env.NODE_OPTIONS ?? "");
  const child = spawn(process.execPath, [join(import.meta.dirname, "../../../gateway/main.ts")], { env: { ...env, NODE_OPTIONS: options }, stdio: ["ignore", "ignore", "inherit"] });
  await waitFor(async () => (await fetch(`${base}/readyz`)).ok, 30_000, "troupe to start");
  return child;
}

let child = await start(true);
t.teardown(() => void child.kill("SIGKILL"));
const r = { request: (m: string, p: string, o?: Parameters<typeof request>[3]) => request(base, m, p, o) };
const count = 3;

async function status(key: string, id: string): Promise<string> {
  const got = await r.request("GET", `/openai/v1/responses/${id}`, { token: key });
  if (got.status !== 200) throw new Error(`retrieve ${id}: ${got.status} ${got.text}`);
  return str(got.body, "status");
}

t.test(`${count} background responses queued at a kill -9: each completes after the restart, billed once`, async (t) => {
  const user = await signup(r, "kill-queued-responses");
  const p = await projectWithLiveKey(r, user.token, user.orgId);
  const budget = await r.request("PUT", `/v1/projects/${p.projectId}/budget`, { token: user.token, body: { monthly_limit_usd: 5, hard_limit: true } });
  t.equal(budget.status, 200, budget.text);
  const keyBudget = await r.request("PATCH", `/v1/api-keys/${p.liveKeyId}`, { token: user.token, body: { monthly_budget_usd: 1, hard_limit: true } });
  t.equal(keyBudget.status, 200, keyBudget.text);

  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const created = await r.request("POST", "/openai/v1/responses", { token: p.liveKey, body: { model: "gpt-4.1-mini", input: `queued ${i}`, max_output_tokens: 100, background: true } });
    t.equal(created.status, 200, created.text);
    t.equal(str(created.body, "status"), "queued");
    ids.push(str(created.body, "id"));
  }
  // Past a watchdog period (5 s): still queued, nothing sent to the provider.
  await new Promise((resolve) => setTimeout(resolve, 6_000));
  for (const id of ids) t.equal(await status(p.liveKey, id), "queued", `${id} queued at the kill`);
  t.equal(openai.requests.length, 0, "no provider call before the kill");
  await killAndWait(child, "SIGKILL");

  child = await start(false);
  for (const id of ids) {
    let seen = "queued";
    await waitFor(async () => ((seen = await status(p.liveKey, id)), seen !== "queued" && seen !== "in_progress"), 30_000, `${id} to end`);
    t.equal(seen, "completed", `${id} completed after the restart`);
  }
  t.equal(openai.requests.length, count, "one provider call each");
  // The holds restored after the restart were released by the bills: another one fits under the key's budget and runs.
  const after = await r.request("POST", "/openai/v1/responses", { token: p.liveKey, body: { model: "gpt-4.1-mini", input: "after", max_output_tokens: 100, background: true } });
  t.equal(after.status, 200, after.text);
  const afterId = str(after.body, "id");
  await waitFor(async () => (await status(p.liveKey, afterId)) === "completed", 30_000, `${afterId} to complete`);

  await killAndWait(child, "SIGTERM");
  const ledger = new EmbeddedLedgerStore(dataDir);
  const records = await projectUsage(ledger, p.projectId);
  const keySpent = await ledger.spent(p.projectId, periodOf(new Date().toISOString()), p.liveKeyId);
  await ledger.close();
  for (const id of ids) {
    const billed = records.filter((rec) => rec.usage_key === id);
    t.equal(billed.length, 1, `${id}: one ledger record`);
    t.equal(billed[0]?.api_key_id, p.liveKeyId, `${id}: billed to its key`);
  }
  const queuedCost = records.filter((rec) => ids.includes(rec.usage_key)).reduce((sum, rec) => sum + rec.cost_nanos, 0);
  t.ok(queuedCost > 0, `billed ${queuedCost} nano-dollars`);
  const keyCost = records.filter((rec) => rec.api_key_id === p.liveKeyId).reduce((sum, rec) => sum + rec.cost_nanos, 0);
  t.equal(records.length, count + 1, "nothing else billed");
  t.equal(keySpent, keyCost, `the key's spend is its records' (${keyCost} nano-dollars)`);
});
