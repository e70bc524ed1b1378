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
import { embeddedEnv, killAndWait } from "../../support/gateway-process.ts";
import { freePort, waitFor } from "../../support/net.ts";
import { expectBilledOnce, expectCompletedAfterRestart, queueHeldResponses } from "../../support/queued-kill.ts";
import { request } from "../../support/troupe.ts";
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
const providerCalls = () => openai.requests.length;

t.test(`${count} background responses queued at a kill -9: each completes after the restart, billed once`, async (t) => {
  const queued = await queueHeldResponses(t, r, "kill-queued-responses", count, providerCalls);
  await killAndWait(child, "SIGKILL");

  child = await start(false);
  await expectCompletedAfterRestart(t, r, queued, providerCalls, 30_000);

  await killAndWait(child, "SIGTERM");
  const ledger = new EmbeddedLedgerStore(dataDir);
  const records = await projectUsage(ledger, queued.projectId);
  const keySpent = await ledger.spent(queued.projectId, periodOf(new Date().toISOString()), queued.liveKeyId);
  await ledger.close();
  expectBilledOnce(t, queued, records, keySpent);
});
