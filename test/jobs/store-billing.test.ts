// The jobs' default billing: a record written again under the same
// request_id (a step repeated after a crash) is still one record.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { systemClock } from "../../core/clock.ts";
import { storeBilling } from "../../actors/job/store-billing.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { projectUsage } from "./usage-reader.ts";

t.test("billing the same (job, segment) twice keeps one record", async (t) => {
  const store = new EmbeddedDataStore(mkdtempSync(join(tmpdir(), "troupe-job-billing-")), systemClock);
  t.teardown(() => store.close());
  const bill = storeBilling(store, () => Date.now());
  const record = (requestId: string): UsageRecord => ({
    organization_id: "org_1", project_id: "prj_1", environment_id: "env_1", api_key_id: "key_1", live: true, category: "video",
    model: "ray-2", provider: "luma", input_tokens: 0, output_tokens: 0, units: 5, cost_usd: 0.7, request_id: requestId, created_at: new Date().toISOString(),
  });
  await bill(record("job:j1:segment:0"));
  await bill(record("job:j1:segment:0"));
  await bill(record("job:j1:segment:1"));
  const usage = await projectUsage(store, "prj_1");
  t.same(usage.map((u) => u.request_id).sort(), ["job:j1:segment:0", "job:j1:segment:1"]);
  t.same(await projectUsage(store, "prj_2"), [], "other projects see none");
});
