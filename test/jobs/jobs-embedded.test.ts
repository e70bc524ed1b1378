// The job suite on the embedded host (one process, so "replica" 0 and 1 are
// the same gateway), plus scopes.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import type { UsageRecord } from "../../providers/usage.ts";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";
import { jobSuite } from "./job-suite.ts";

t.setTimeout(180_000);
const usage: UsageRecord[] = [];
const troupe = await startTestTroupe(
  { SIMULATED_VIDEO_DELAY_MS: "400", SIMULATED_VIDEO_DIR: mkdtempSync(join(tmpdir(), "troupe-simvid-")), JOB_WATCHDOG_MS: "2000" },
  { usage: { record: (u) => void usage.push(u) } },
);
t.teardown(() => troupe.stop());
const a = await signup(troupe, "jobs-a");
const b = await signup(troupe, "jobs-b");
jobSuite(t, {
  at: () => troupe.request,
  wsUrl: () => `ws://127.0.0.1:${troupe.port}`,
  keyA: a.testKey,
  keyB: b.testKey,
  usage: async () => usage,
  clipSeconds: 1,
});

t.test("scopes: video routes need the video scope", async (t) => {
  const key = await troupe.request("POST", `/v1/environments/${a.developmentEnvId}/api-keys`, { token: a.token, body: { name: "chat only", scopes: ["chat"] } });
  const token = str(key.body, "key");
  for (const [method, path, body] of [["POST", "/v1/video/generate", { prompt: "x" }], ["GET", "/v1/jobs", undefined]] as const) {
    const res = await troupe.request(method, path, { token, ...(body ? { body } : {}) });
    t.equal(res.status, 403, `${method} ${path}`);
    t.equal(field(res.body, "error", "code"), "insufficient_scope");
  }
});
