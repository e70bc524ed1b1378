// The job suite on the embedded host (one process, so "replica" 0 and 1 are
// the same gateway), plus scopes.
import { mkdtempSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { ActorStore } from "../../actors/hosts/embedded/store.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";
import { jobSuite } from "./job-suite.ts";

t.setTimeout(180_000);
const usage: UsageRecord[] = [];
const troupe = await startTestTroupe(
  { SIMULATED_VIDEO_DELAY_MS: "400", SIMULATED_VIDEO_DIR: mkdtempSync(join(tmpdir(), "troupe-simvid-")), JOB_WATCHDOG_MS: "2000" },
  { usage: { record: (u) => void usage.push(u) } },
);
// The actor store read beside the running host (lmdb allows readers in the same process), closed after it.
let actorStore: ActorStore | undefined;
t.teardown(async () => {
  await troupe.stop();
  await actorStore?.close();
});
const a = await signup(troupe, "jobs-a");
const b = await signup(troupe, "jobs-b");
jobSuite(t, {
  at: () => troupe.request,
  wsUrl: () => `ws://127.0.0.1:${troupe.port}`,
  keyA: a.testKey,
  keyB: b.testKey,
  orgA: a.orgId,
  storedFiles: async (organizationId) => {
    const root = join(troupe.dataDir, "files");
    const ids: string[] = [];
    for (const name of await readdir(root, { recursive: true })) {
      if (!name.endsWith(".json") || name.startsWith(".tmp")) continue;
      const record = JSON.parse(await readFile(join(root, name), "utf8")) as { id: string; organization_id: string };
      if (record.organization_id === organizationId) ids.push(record.id);
    }
    return ids;
  },
  actorStateGone: async (id) => (actorStore ??= new ActorStore(troupe.dataDir)).readState("JobActor", id) === undefined,
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
