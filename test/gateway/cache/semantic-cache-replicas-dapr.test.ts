// The semantic cache across replicas: two Troupe replicas (the real gateway,
// TROUPE_MODE=dapr, each with its daprd) on one Redis (the exact entries) and
// one Elasticsearch (the vectors), chat at the OpenAI fake. A question stored
// through replica A is served by meaning to a respelling asked on replica B,
// with no provider call; another entity sharing most of the words misses on
// B; the same last message in another conversation never hits on B, while a
// respelling of it in A's conversation does.
import { mkdtempSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { Client } from "@elastic/elasticsearch";
import { SIMULATED_EMBED_THRESHOLD } from "../../../gateway/cache/semantic-defaults.ts";
import type { ChatRequest } from "../../../providers/chat-request.ts";
import { startOpenAIFake } from "../../fakes/openai-fake.ts";
import { projectWithLiveKey } from "../../support/billing.ts";
import { LocalCluster, repoDir, requireDaprPrerequisites } from "../../support/dapr-cluster.ts";
import { startTestRedis } from "../../support/redis.ts";
import { field, request, signup, type RequestOptions } from "../../support/troupe.ts";
import { respellingServedByMeaning, settleIndex } from "./semantic-respelling.ts";

t.setTimeout(300_000);
const url = process.env["ELASTICSEARCH_URL"];
if (!url) {
  // Never skipped: CI must run this against a real server.
  throw new Error("ELASTICSEARCH_URL is not set: start a server with `npm run elasticsearch` (scripts/elasticsearch.sh) and export the URL it prints");
}
const redis = await startTestRedis();
requireDaprPrerequisites({ redisUrl: redis.url });
const fake = await startOpenAIFake({ apiKey: "sk-fake" });
const base = `troupe-test-semantic-replicas-${process.pid}-${randomUUID().slice(0, 8)}`;
const admin = new Client({ node: url, requestTimeout: 30_000 });
const cluster = new LocalCluster({
  mode: "dapr",
  replicas: 2,
  dataDir: mkdtempSync(join(tmpdir(), "troupe-semantic-replicas-")),
  appEntry: join(repoDir, "gateway/main.ts"),
  appEnv: { ELASTICSEARCH_URL: url, ELASTICSEARCH_INDEX: base, OPENAI_API_KEY: "sk-fake", OPENAI_BASE_URL: `${fake.url}/v1`, LOG_LEVEL: "warn" },
  redisUrl: redis.url,
});
t.teardown(async () => {
  await cluster.stop();
  await fake.close();
  await redis.stop();
  // Wildcard deletes are refused (action.destructive_requires_name): list, then delete by name.
  const created = Object.keys(await admin.indices.get({ index: `${base}*`, allow_no_indices: true }));
  if (created.length > 0) await admin.indices.delete({ index: created });
  await admin.close();
});
await cluster.start();
const [a, b] = cluster.replicas.map((r) => ({ request: (method: string, path: string, options?: RequestOptions) => request(r.gatewayUrl, method, path, options) }));
if (!a || !b) throw new Error("the cluster has two replicas");

const owner = await signup(a, "semantic-replicas");
const project = await projectWithLiveKey(a, owner.token, owner.orgId, "semantic");
const chatCalls = () => fake.requests.filter((r) => r.path.endsWith("/chat/completions")).length;
type Replica = typeof a;
const question = (replica: Replica, content: string, earlier: ChatRequest["messages"] = []) =>
  replica.request("POST", "/v1/chat/completions", {
    token: project.liveKey,
    body: { model: "gpt-4.1-mini", routing_strategy: "manual", max_tokens: 200, messages: [...earlier, { role: "user", content }] },
  });

t.test("semantic on, set through A", async (t) => {
  const on = await a.request("PATCH", `/v1/projects/${project.projectId}/cache`, {
    token: owner.token,
    body: { enabled: true, semantic_enabled: true, semantic_threshold: SIMULATED_EMBED_THRESHOLD, semantic_embedding_model: "simulated-embed" },
  });
  t.equal(on.status, 200, on.text);
});

t.test("stored through A, a respelling is served by meaning on B; another entity misses on B", async (t) => {
  t.equal((await question(a, "What is the capital of Spain?")).headers.get("troupe-cache"), "miss", "A answers live and stores it");
  const respellings = ["what is the capital of spain", "What is the capital of Spain ?", "what is the capital of Spain?!", "WHAT is the capital of spain"];
  const hit = await respellingServedByMeaning(t, "B", (spelling) => question(b, spelling), respellings, chatCalls);
  // The fake echoes the last user message: A's question, not a respelling B stored itself after a miss.
  t.equal(field(hit?.body, "content"), "Echo: What is the capital of Spain?", "B served the answer stored through A");
  await settleIndex();
  const before = chatCalls();
  const other = await question(b, "What is the capital of Portugal?");
  t.equal(other.headers.get("troupe-cache"), "miss", "another entity on the same frame is answered live on B");
  t.equal(chatCalls() - before, 1, "by the provider");
});

t.test("the same last message in another conversation never hits on B; in A's conversation it does", async (t) => {
  const italy: ChatRequest["messages"] = [{ role: "user", content: "I am planning a trip to Italy." }, { role: "assistant", content: "Lovely!" }];
  const japan: ChatRequest["messages"] = [{ role: "user", content: "I am planning a trip to Japan." }, { role: "assistant", content: "Lovely!" }];
  t.equal((await question(a, "What should I pack?", italy)).headers.get("troupe-cache"), "miss", "stored through A in the Italy conversation");
  await settleIndex();
  // Each asked once: a miss on B stores its own answer in its own context, which a later respelling there could hit.
  t.equal((await question(b, "What should I pack?", japan)).headers.get("troupe-cache"), "miss", "B, the Japan conversation: not served Italy's answer");
  t.equal((await question(b, "What should I pack?")).headers.get("troupe-cache"), "miss", "B, no earlier turns: a miss");
  const respellings = ["what should i pack", "What should I pack ?", "what should I pack?!", "WHAT should i pack"];
  const hit = await respellingServedByMeaning(t, "B, the Italy conversation", (spelling) => question(b, spelling, italy), respellings, chatCalls);
  t.equal(field(hit?.body, "content"), "Echo: What should I pack?", "B served the answer stored through A");
});
