// Two replicas on one Redis and no Elasticsearch: each keeps the semantic
// cache's vectors of the answers it stored in its own embedded index. A
// project's clear and an organization's deletion made through replica one
// must delete the vectors replica two holds too (the change broadcast names
// the cleared vector scopes, gateway/features/cache.ts); replica two's index
// is searched once the replicas have stopped. An untouched project's vector
// is still found there, so the search can fail.
import t, { type Test } from "tap";
import { createLogger } from "../../../core/log.ts";
import { loadConfig } from "../../../gateway/config.ts";
import { SIMULATED_EMBED_THRESHOLD } from "../../../gateway/cache/semantic-defaults.ts";
import { semanticIndexOpener } from "../../../gateway/cache/semantic-index.ts";
import { vectorScope } from "../../../gateway/cache/semantic.ts";
import { createRouter } from "../../../providers/index.ts";
import { projectWithLiveKey, startFakeOpenAI } from "../../support/billing.ts";
import { midMonthClock } from "../../support/mid-month-clock.ts";
import { startReplicas } from "../../support/replicas.ts";
import { signup, type TestTroupe } from "../../support/troupe.ts";
import { respellingServedByMeaning } from "./semantic-respelling.ts";

t.setTimeout(120_000);
const { fake, router } = await startFakeOpenAI();
t.teardown(() => fake.close());
const cluster = await startReplicas(2, {}, () => ({ router: router(), clock: midMonthClock() }));
let stopped = false;
t.teardown(async () => {
  if (!stopped) await cluster.stop();
});
const [one, two] = cluster.replicas;
if (!one || !two) throw new Error("two replicas");

const semanticOn = { enabled: true, semantic_enabled: true, semantic_threshold: SIMULATED_EMBED_THRESHOLD, semantic_embedding_model: "simulated-embed" };
const chatCalls = () => fake.requests.filter((r) => r.path.endsWith("/chat/completions")).length;
const question = (replica: TestTroupe, key: string, content: string) =>
  replica.request("POST", "/v1/chat/completions", {
    token: key,
    body: { model: "gpt-4.1-mini", routing_strategy: "manual", messages: [{ role: "system", content: "Be brief." }, { role: "user", content }], max_tokens: 200 },
  });

/** A project with semantic caching on whose question was stored through replica two, its vector proven there by a hit on two. */
async function storedOnTwo(t: Test, name: string, capital: string) {
  const owner = await signup(one!, name);
  const project = await projectWithLiveKey(one!, owner.token, owner.orgId, name);
  const on = await one!.request("PATCH", `/v1/projects/${project.projectId}/cache`, { token: owner.token, body: semanticOn });
  t.equal(on.status, 200, `${name}: semantic on`);
  const first = await question(two!, project.liveKey, `What is the capital of ${capital}?`);
  t.equal(first.headers.get("troupe-cache"), "miss", `${name}: stored through two`);
  const lower = capital.toLowerCase();
  await respellingServedByMeaning(t, name, (q) => question(two!, project.liveKey, q), [`what is the capital of ${lower}`, `What is the capital of ${capital} ?`, `what is the capital of ${lower} ?`], chatCalls);
  return { owner, project };
}

t.test("a clear and a deletion through replica one delete the vectors replica two holds", async (t) => {
  const kept = await storedOnTwo(t, "vectors-kept", "Spain");
  const cleared = await storedOnTwo(t, "vectors-cleared", "France");
  const deleted = await storedOnTwo(t, "vectors-deleted", "Italy");

  const clear = await one.request("POST", `/v1/projects/${cleared.project.projectId}/cache/clear`, { token: cleared.owner.token });
  t.equal(clear.status, 200, clear.text);
  const gone = await one.request("DELETE", `/v1/orgs/${deleted.owner.orgId}`, { token: deleted.owner.token, body: { confirm: deleted.owner.orgId } });
  t.ok(gone.status < 300, gone.text);
  // The broadcast's deletes on replica two run off the route's path.
  await new Promise((r) => setTimeout(r, 500));

  await cluster.stop();
  stopped = true;
  const config = loadConfig({ TROUPE_DATA_DIR: two.dataDir, LOG_LEVEL: "warn" });
  const open = semanticIndexOpener(config, createRouter(config.providers), createLogger("warn", {}, () => undefined));
  t.teardown(() => open.closeAll());
  const index = await open("simulated-embed");
  t.equal(index.backend, "embedded", "replica two's own index");
  const probe = new Array<number>(index.dimensions).fill(1 / Math.sqrt(index.dimensions));
  const vectorsOf = (organizationId: string, projectId: string) => index.search(vectorScope({ organization_id: organizationId, project_id: projectId }), probe, 100);
  t.ok((await vectorsOf(kept.owner.orgId, kept.project.projectId)).length > 0, "the untouched project's vectors are on replica two");
  t.same(await vectorsOf(cleared.owner.orgId, cleared.project.projectId), [], "the project cleared through one: none on two");
  t.same(await vectorsOf(deleted.owner.orgId, deleted.project.projectId), [], "the organization deleted through one: none on two");
});
