// Jobs and webhooks together (embedded host): a job reaching `completed` or
// `failed` emits job.completed / job.failed through the real WebhookPublisher,
// and the organization's subscribed webhook receives it signed (verified by
// the independent receiver), once per event id, with the job's id and status.
// Another organization's webhook never sees it.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { startWebhookReceiver, type WebhookReceiver } from "../fakes/webhook-receiver.ts";
import { waitFor } from "../support/net.ts";
import { field, signup, startTestTroupe, str, type TestTroupe } from "../support/troupe.ts";
import { startJob, watchJob } from "./job-suite.ts";

t.setTimeout(120_000);
const troupe = await startTestTroupe({
  SIMULATED_VIDEO_DELAY_MS: "300",
  SIMULATED_VIDEO_DIR: mkdtempSync(join(tmpdir(), "troupe-simvid-")),
  OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost",
  METRICS_PORT: "0",
  METRICS_HOST: "127.0.0.1",
  WEBHOOK_RETRY_SCALE: "0.0002",
});
t.teardown(() => troupe.stop());

async function subscribe(troupe: TestTroupe, key: string, receiver: WebhookReceiver, path: string): Promise<void> {
  const res = await troupe.request("POST", "/v1/webhooks", { token: key, body: { url: `${receiver.url}${path}`, events: ["job.completed", "job.failed"] } });
  if (res.status !== 201) throw new Error(`webhook creation: ${res.status} ${res.text}`);
  receiver.secrets.set(new URL(`${receiver.url}${path}`).pathname, str(res.body, "secret"));
}

t.test("job.completed and job.failed reach the organization's webhooks, signed, once each", async (t) => {
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  const a = await signup(troupe, "jobhooks-a");
  const b = await signup(troupe, "jobhooks-b");
  await subscribe(troupe, a.testKey, receiver, "/a");
  await subscribe(troupe, b.testKey, receiver, "/b");

  const done = await startJob(troupe.request, a.testKey, { prompt: "a lighthouse at dusk", duration_seconds: 1, model: "simulated-video", routing_strategy: "manual" });
  const finished = await watchJob(troupe.request, a.testKey, done);
  t.equal(finished.job.status, "completed");
  await waitFor(async () => receiver.received.some((d) => d.type === "job.completed"), 20_000, "job.completed");

  // A cancelled job ends failed/cancelled and announces it.
  const cancelled = await startJob(troupe.request, a.testKey, { prompt: "a long pan", scenes: ["one", "two", "three"], duration_seconds: 1, model: "simulated-video", routing_strategy: "manual" });
  // While it runs, the operator's console lists it among the jobs in flight.
  const console = await troupe.request("GET", "/console/data.json", { token: a.token });
  t.equal(console.status, 200);
  t.ok((field(console.body, "jobs_in_flight", "rows") as Array<{ id: string }>).some((j) => j.id === cancelled), "the console shows the running job");
  const del = await troupe.request("POST", `/v1/jobs/${cancelled}/cancel`, { token: a.testKey });
  t.equal(del.status, 200, `cancel answered ${del.text}`);
  await waitFor(async () => receiver.received.some((d) => d.type === "job.failed"), 20_000, "job.failed");
  // Give a duplicate (a second publish of the same event) the time to show up.
  await new Promise((resolve) => setTimeout(resolve, 500));

  const completed = receiver.received.filter((d) => d.type === "job.completed");
  const failed = receiver.received.filter((d) => d.type === "job.failed");
  t.equal(completed.length, 1, "job.completed delivered once");
  t.equal(failed.length, 1, "job.failed delivered once");
  for (const d of [...completed, ...failed]) {
    t.ok(d.verified, `${d.type}: both signatures verify`);
    t.equal(d.path, "/hook/a", `${d.type} went to the owning organization's webhook only`);
  }
  t.equal(field(completed[0]?.body, "data", "job", "id"), done);
  t.equal(field(completed[0]?.body, "data", "job", "status"), "completed");
  t.equal(field(failed[0]?.body, "data", "job", "id"), cancelled);
  t.equal(field(failed[0]?.body, "data", "job", "status"), "failed");
  t.notOk(receiver.received.some((d) => d.path === "/hook/b"), "organization B's webhook received nothing");
});

t.test("job transitions and webhook deliveries are counted in /metrics", async (t) => {
  const res = await fetch(`http://127.0.0.1:${troupe.metricsPort}/metrics`);
  const text = await res.text();
  for (const state of ["queued", "processing", "completed", "failed"]) {
    const line = new RegExp(`^troupe_job_transitions_total\\{[^}]*state="${state}"[^}]*\\} ([0-9.]+)$`, "m").exec(text);
    t.ok(line && Number(line[1]) >= 1, `jobs entered ${state}: ${line?.[0] ?? "no series"}`);
  }
  const delivered = /^troupe_webhook_deliveries_total\{[^}]*outcome="succeeded"[^}]*\} ([0-9.]+)$/m.exec(text);
  t.ok(delivered && Number(delivered[1]) >= 2, `webhook deliveries counted: ${delivered?.[0] ?? "no series"}`);
  t.match(text, /^troupe_webhook_delivery_lag_seconds_count\{[^}]*\} [1-9]/m, "delivery lag observed");
});
