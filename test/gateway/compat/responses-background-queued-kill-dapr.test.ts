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
import { startDaprOpenAICluster } from "../../support/dapr-openai-cluster.ts";
import { waitFor } from "../../support/net.ts";
import { expectBilledOnce, expectCompletedAfterRestart, queueHeldResponses } from "../../support/queued-kill.ts";
import { request, type RequestOptions } from "../../support/troupe.ts";
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
const providerCalls = () => openai.requests.length;

t.test(`${count} background responses queued at a kill -9 of the replica and its daprd: each completes after the restart, billed once`, async (t) => {
  // Its watchdog reminder fires on the holding process, which does not start them.
  const queued = await queueHeldResponses(t, r, "kill-queued-responses-dapr", count, providerCalls);
  await cluster.killReplica(0);

  appEnv["NODE_OPTIONS"] = plainNodeOptions;
  await cluster.startReplica(0);
  const afterId = await expectCompletedAfterRestart(t, r, queued, providerCalls, 60_000);

  // The records reach Redis from the replica's usage recorder (through its journal, docs/operations/usage-journal.md), after the response ended.
  const billedIds = [...queued.ids, afterId];
  await waitFor(async () => (await projectUsage(ledger, queued.projectId)).filter((rec) => billedIds.includes(rec.usage_key)).length >= billedIds.length, 30_000, "the bills in the Redis ledger");
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const records = await projectUsage(ledger, queued.projectId);
  const keySpent = await ledger.spent(queued.projectId, periodOf(new Date().toISOString()), queued.liveKeyId);
  expectBilledOnce(t, queued, records, keySpent);
});
