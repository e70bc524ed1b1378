// A video job held to its key's own monthly budget, as to its project's
// (actors/job/job-budget.ts), over real HTTP against an embedded Troupe
// whose video provider is the Luma fake (ray-2: 5 s clips at $0.14/s, $0.70
// a scene). The project has no budget; the key's hard budget fits one
// scene: a 2-scene job is 402 with details.budget "api_key" before any
// provider call, a 1-scene job runs and bills its scene, the next is 402;
// the key's spend in the ledger equals the usage report's for that key.
import t from "tap";
import { periodOf } from "../../tenancy/ledger.ts";
import { field } from "../support/troupe.ts";
import { ray2, sceneNanos, startVideoBudgetTroupe } from "../support/video-budget-troupe.ts";
import { startJob, watchJob } from "./job-suite.ts";

t.setTimeout(120_000);
const { troupe, user, submitted } = await startVideoBudgetTroupe("video-key-budget");

t.test("a key budget that fits one scene: one scene runs and is billed, the rest are 402 api_key", async (t) => {
  const key = await troupe.request("POST", `/v1/environments/${user.productionEnvId}/api-keys`, {
    token: user.token,
    body: { name: "one scene", live: true, monthly_budget_usd: (sceneNanos + 50_000_000) / 1e9, hard_limit: true },
  });
  t.equal(key.status, 201, key.text);
  const liveKey = String(field(key.body, "key"));
  const keyId = String(field(key.body, "id"));

  const two = await troupe.request("POST", "/v1/video/generate", { token: liveKey, body: ray2("key two", { scenes: ["key two a", "key two b"] }) });
  t.equal(two.status, 402, two.text);
  t.match(field(two.body, "error"), { code: "budget_exceeded", details: { budget: "api_key", api_key_id: keyId, required_usd: 1.4 } });
  t.match(String(field(two.body, "error", "message")), /may cost up to 1\.4 USD/);
  t.equal(submitted("key two"), 0, "no scene reached the provider");

  const one = await startJob(troupe.request, liveKey, ray2("key one"));
  t.equal((await watchJob(troupe.request, liveKey, one)).job.status, "completed");

  const next = await troupe.request("POST", "/v1/video/generate", { token: liveKey, body: ray2("key next") });
  t.equal(next.status, 402, next.text);
  // reserved 0: the billed scene released the key's part as well as being counted as spent.
  t.match(field(next.body, "error"), { code: "budget_exceeded", details: { budget: "api_key", api_key_id: keyId, spent_usd: 0.7, reserved_usd: 0 } });
  t.equal(submitted("key next"), 0);

  const report = await troupe.request("GET", `/v1/projects/${user.projectId}/usage?group_by=key`, { token: user.token });
  const groups = field(report.body, "groups") as { key: string; live: { cost_nanos: number } }[];
  const reported = groups.find((g) => g.key === keyId)?.live.cost_nanos;
  const ledger = await troupe.services.ledger.spent(user.projectId, periodOf(new Date().toISOString()), keyId);
  t.equal(reported, sceneNanos, "the usage report: one scene for the key");
  t.equal(ledger, reported, "the key's spend in the ledger is the report's");
});
