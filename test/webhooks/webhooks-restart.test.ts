// kill -9 mid-retry on the embedded host: Troupe runs as a child process on
// a data directory; events fail their first attempt, their retry hangs at
// the receiver, and the process is killed during it. Restarted on the same
// data directory, it delivers every event, each with its original id —
// the outbox and the durable reminder survived; nothing was lost.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { startWebhookReceiver } from "../fakes/webhook-receiver.ts";
import { freePort, waitFor } from "../support/net.ts";
import { request, signup, str } from "../support/troupe.ts";
import { publishPath } from "../support/webhook-publish-path.ts";
import { embeddedEnv } from "../support/gateway-process.ts";

const app = join(import.meta.dirname, "../support/webhook-app.ts");
const count = 20;

t.setTimeout(90_000);

t.test("kill -9 mid-retry: every event is delivered after the restart, with its id", async (t) => {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), "troupe-webhooks-restart-"));
  const env = {
    ...embeddedEnv(),
    PORT: String(port),
    HOST: "127.0.0.1",
    TROUPE_DATA_DIR: dataDir,
    LOG_LEVEL: process.env["CHILD_LOG_LEVEL"] ?? "error",
    OUTBOUND_ALLOW_HOSTS: "127.0.0.1",
    // Retries 50 ms, then 3 s after a failure; a hanging attempt gives up after 5 s, the crash backstop fires 6 s after.
    WEBHOOK_RETRY_SCALE: "0.01",
    WEBHOOK_TIMEOUT_MS: "5000",
  };
  const base = `http://127.0.0.1:${port}`;
  const start = (): ChildProcess => spawn(process.execPath, [app], { env, stdio: ["ignore", "inherit", "inherit"] });
  let child = start();
  t.teardown(() => void child.kill("SIGKILL"));
  await waitFor(async () => (await fetch(`${base}/readyz`)).ok, 20_000, "troupe to start");
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  // Every attempt fails while the events are published, then retries hang (the kill comes then), then all succeed.
  let phase: "publishing" | "hang" | "up" = "publishing";
  receiver.answerFor = () => (phase === "publishing" ? { status: 500 } : phase === "hang" ? "hang" : { status: 200 });

  const user = await signup({ request: (m, p, o) => request(base, m, p, o) }, "restart");
  const created = await request(base, "POST", "/v1/webhooks", { token: user.testKey, body: { url: receiver.url, events: ["job.completed"] } });
  t.equal(created.status, 201, created.text);
  receiver.secret = str(created.body, "secret");
  const webhookId = str(created.body, "webhook", "id");

  const ids = Array.from({ length: count }, (_, i) => `evt_restart_${i}`);
  for (const id of ids) {
    const res = await request(base, "POST", publishPath, {
      body: { id, type: "job.completed", organization_id: user.orgId, project_id: user.projectId, environment_id: user.developmentEnvId, created_at: new Date().toISOString(), data: { job_id: id } },
    });
    t.equal(res.status, 202, `publish ${id}`);
  }
  const seen = (answer: number | "hang") => new Set(receiver.received.filter((r) => r.answered === answer).map((r) => r.eventId));
  await waitFor(async () => seen(500).size === count, 10_000, "every first attempt (answered 500)");
  phase = "hang";
  await waitFor(async () => seen("hang").size > 0, 10_000, "a retry hanging at the receiver");
  const inFlight = seen("hang").size;
  child.kill("SIGKILL");
  const exitSignal = await new Promise<NodeJS.Signals | null>((r) => child.once("exit", (_code, signal) => r(signal)));
  t.equal(exitSignal, "SIGKILL", `killed -9 with ${inFlight} retries in flight`);
  t.ok(inFlight > 0, "retries were in flight at the kill");

  phase = "up";
  child = start();
  await waitFor(async () => (await fetch(`${base}/readyz`)).ok, 20_000, "troupe to restart");
  await waitFor(async () => seen(200).size === count, 20_000, "every event delivered after the restart");
  t.same([...seen(200)].sort(), [...ids].sort(), "each event arrived with its original id");
  t.ok(
    receiver.received.every((r) => r.verified && ids.includes(r.eventId)),
    "every attempt verified, and no attempt carried an id that was not published",
  );
  const history = await request(base, "GET", `/v1/webhooks/${webhookId}/deliveries?limit=100`, { token: user.testKey });
  const records = (history.body as { data: Array<{ event_id: string; status: string }> }).data;
  t.same(new Set(records.filter((r) => r.status === "succeeded").map((r) => r.event_id)).size, count, "the history shows each event succeeded");
});
