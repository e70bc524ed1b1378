// The durable usage sink: records come back per project after a flush, and
// recording never blocks or throws on the request path.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { systemClock } from "../../core/clock.ts";
import { createLogger } from "../../core/log.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { UsageRecorder } from "../../tenancy/usage-recorder.ts";

function record(project: string, i: number): UsageRecord {
  return {
    organization_id: "org_1",
    project_id: project,
    environment_id: "env_1",
    api_key_id: "key_1",
    live: i % 2 === 0,
    category: "chat",
    model: "gpt-4.1-mini",
    provider: "openai",
    input_tokens: 10 + i,
    output_tokens: 5,
    units: 0,
    cost_usd: 0.0001 * i,
    request_id: `req_${i}`,
    created_at: new Date().toISOString(),
  };
}

t.test("records are stored durably and read back per project", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-usage-"));
  const store = new EmbeddedDataStore(dir, systemClock);
  const recorder = new UsageRecorder(store, createLogger("silent"));
  const started = performance.now();
  for (let i = 0; i < 1000; i++) recorder.record(record(i % 3 === 0 ? "prj_a" : "prj_b", i));
  t.ok(performance.now() - started < 200, "recording 1,000 calls does not wait for the store");
  await recorder.close();
  await store.close();

  const reopened = new EmbeddedDataStore(dir, systemClock);
  const readProject = async (project: string): Promise<UsageRecord[]> => {
    const page = await reopened.page(`project-usage:${project}`, 100);
    const batches = (await reopened.getMany(page.members.map((id) => `usage-batch:${id}`))) as UsageRecord[][];
    return batches.flat().filter((u) => u.project_id === project);
  };
  const a = await readProject("prj_a");
  const b = await readProject("prj_b");
  t.equal(a.length, 334);
  t.equal(b.length, 666);
  t.same(new Set([...a, ...b].map((u) => u.request_id)).size, 1000, "every call recorded exactly once");
  t.match(a[0], { category: "chat", model: "gpt-4.1-mini", provider: "openai", organization_id: "org_1" });
  await reopened.close();
});
