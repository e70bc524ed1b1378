// Upstream deployments (docs/operations/deployments.md) on the Dapr host
// (TROUPE_MODE=dapr: two Troupe replicas, each with its daprd, sharing Redis,
// placement and scheduler): a deployments file names two deployments of
// openai, two OpenAI fakes each with its own key, weighted 3:1. Chat calls to
// one replica split by weight; calls spread over both replicas still split by
// weight; a deployment answering 500 fails over to the other with no failed
// call (one router attempt, so only the pool's own failover can save it), on
// one replica and on both; an agent conversation's turns, run inside the
// ConversationActor that daprd calls back into (on whichever replica holds
// it), go through the same deployments; SIGHUP to replica 0 with the weights
// swapped to 1:3 moves its traffic. Each fake saw only its own key.
//
// The tolerance of a split on one replica is ±2 calls: smooth weighted round
// robin has no randomness, and whatever state its counters start a run of
// calls in (a fresh pool gives exactly 3 of every 4 to the weight-3
// deployment; an earlier run or a reload, which keeps the counters by name,
// leaves them offset) each deployment's count stays within 2 of
// n·weight/total. An even 1:1 split (20:20 of 40) is far outside it.
//
// Across replicas the tolerance is ±2 per replica and ±4 in total: each
// replica's pool (providers/deployment-pool.ts, built in its own process)
// keeps its own counters and nothing is shared, so each replica's share of
// the calls is split within its own ±2, and the two offsets can add up. With
// 40 calls alternated over the replicas (20 each) that is 15:5 ± 2 per
// replica and 30:10 ± 4 overall; 1:1 (20:20) is still far outside.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { startOpenAIFake } from "../fakes/openai-fake.ts";
import type { FakeServer, RecordedRequest } from "../fakes/fake-server.ts";
import { projectWithLiveKey } from "../support/billing.ts";
import { LocalCluster, repoDir, requireDaprPrerequisites } from "../support/dapr-cluster.ts";
import { waitFor } from "../support/net.ts";
import { startTestRedis } from "../support/redis.ts";
import { request, signup, str, type RequestOptions } from "../support/troupe.ts";

t.setTimeout(240_000);
const keys = ["sk-dep-a", "sk-dep-b"];
const redis = await startTestRedis();
requireDaprPrerequisites({ redisUrl: redis.url });
const fakes: FakeServer[] = await Promise.all(keys.map((apiKey) => startOpenAIFake({ apiKey })));
const dataDir = mkdtempSync(join(tmpdir(), "troupe-deployments-dapr-"));
const file = join(dataDir, "deployments.json");
const write = (weights: [number, number]) =>
  writeFileSync(file, JSON.stringify({ deployments: weights.map((weight, i) => ({ name: `dep-${i}`, provider: "openai", api_key: keys[i], base_url: `${fakes[i]!.url}/v1`, weight })) }));
write([3, 1]);
const cluster = new LocalCluster({
  mode: "dapr",
  replicas: 2,
  dataDir,
  appEntry: join(repoDir, "gateway/main.ts"),
  appEnv: {
    // info: the replica's log says when a SIGHUP reload is installed.
    LOG_LEVEL: "info",
    TROUPE_DEPLOYMENTS_FILE: file,
    PROVIDER_MAX_ATTEMPTS: "1",
    OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost",
  },
  redisUrl: redis.url,
});
t.teardown(async () => {
  await cluster.stop();
  await Promise.all(fakes.map((f) => f.close()));
  await redis.stop();
});
await cluster.start();
/** Replica i's gateway: the single-replica cases use replica 0, the spread ones both. */
const at = (i: number) => ({ request: (m: string, path: string, o?: RequestOptions) => request(cluster.replicas[i]!.gatewayUrl, m, path, o) });
const r = at(0);
const user = await signup(r, "deployments-dapr");
const p = await projectWithLiveKey(r, user.token, user.orgId);

const chat = async (content: string, replica = 0): Promise<number> => {
  const res = await at(replica).request("POST", "/v1/chat/completions", { token: p.liveKey, body: { model: "gpt-4o-mini", routing_strategy: "manual", messages: [{ role: "user", content }] } });
  return res.status;
};
/** The chat requests fake i received whose messages mention `marker`. */
const callsAt = (i: number, marker: string): RecordedRequest[] =>
  fakes[i]!.requests.filter((q) => q.path.endsWith("/chat/completions") && JSON.stringify(q.body).includes(marker));
const within = (got: number, expected: number, tolerance = 2) => Math.abs(got - expected) <= tolerance;
/** Chat calls replica i's own log says it served: proof a spread call reached the replica it was sent to. */
const chatsServedBy = (i: number) => readFileSync(cluster.replicas[i]!.appLog, "utf8").split("\n").filter((l) => l.includes('"msg":"request"') && l.includes('"route":"/v1/chat/completions"')).length;
const onlyOwnKeys = (t: Test) => {
  for (const i of [0, 1]) {
    t.same([...new Set(fakes[i]!.requests.map((q) => q.headers.authorization))], [`Bearer ${keys[i]}`], `dep-${i} was sent only its own key`);
  }
};

t.test("chat calls split 3:1 by weight, each deployment called with its own key", async (t) => {
  const statuses: number[] = [];
  for (let i = 0; i < 40; i++) statuses.push(await chat(`weighted ${i}`));
  t.same(statuses.filter((s) => s !== 200), [], "all 40 answered");
  const [a, b] = [callsAt(0, "weighted ").length, callsAt(1, "weighted ").length];
  t.equal(a + b, 40, "one upstream call each");
  t.ok(within(a, 30) && within(b, 10), `split ${a}:${b}, expected 30:10 ± 2`);
  onlyOwnKeys(t);
});

t.test("an agent conversation's turns, run in the actor on the Dapr host, go through the deployments", async (t) => {
  const created = await r.request("POST", "/v1/agents/conversations", { token: p.liveKey, body: { model: "gpt-4o-mini", routing_strategy: "manual", system_prompt: "You are the agent marker-agent." } });
  t.equal(created.status, 201, created.status === 201 ? "created" : created.text);
  const id = str(created.body, "id");
  const turns = 12;
  // [[no tool]]: the fake model answers at once instead of calling the first built-in tool, so a turn is one model call.
  for (let i = 0; i < turns; i++) {
    const turn = await r.request("POST", `/v1/agents/conversations/${id}/messages`, { token: p.liveKey, body: { content: `turn ${i} [[no tool]]` } });
    t.equal(turn.status, 200, turn.status === 200 ? `turn ${i} answered` : `turn ${i}: ${turn.text}`);
  }
  const [a, b] = [callsAt(0, "marker-agent").length, callsAt(1, "marker-agent").length];
  t.equal(a + b, turns, "one upstream call per turn");
  t.ok(within(a, 9) && within(b, 3), `split ${a}:${b}, expected 9:3 ± 2`);
});

t.test("a deployment answering 500 fails over to the other: no call fails", async (t) => {
  fakes[0]!.faults.failureRate = 1;
  const before = [callsAt(0, "failover ").length, callsAt(1, "failover ").length];
  const statuses: number[] = [];
  // 4 calls: fewer than the 5 consecutive failures that open dep-0's breaker, so each one tries dep-0 when picked.
  for (let i = 0; i < 4; i++) statuses.push(await chat(`failover ${i}`));
  fakes[0]!.faults.failureRate = 0;
  t.same(statuses, [200, 200, 200, 200], "every call answered");
  const tried = callsAt(0, "failover ").length - before[0]!;
  t.equal(callsAt(1, "failover ").length - before[1]!, 4, "dep-1 answered all 4");
  t.ok(tried >= 2, `dep-0 was picked first and failed ${tried} times, each failed over to dep-1`);
});

t.test("calls spread over both replicas still split 3:1: ± 2 per replica, ± 4 in total", async (t) => {
  const served = [chatsServedBy(0), chatsServedBy(1)];
  const statuses: number[] = [];
  // Alternated, so each replica's pool serves 20 of the 40 with its own counters.
  for (let i = 0; i < 40; i++) statuses.push(await chat(`spread r${i % 2} ${i}`, i % 2));
  t.same(statuses.filter((s) => s !== 200), [], "all 40 answered");
  await waitFor(async () => chatsServedBy(0) - served[0]! === 20 && chatsServedBy(1) - served[1]! === 20, 10_000, "each replica's log to show the 20 chat calls it served");
  t.same([chatsServedBy(0) - served[0]!, chatsServedBy(1) - served[1]!], [20, 20], "each replica served 20 of them (its own log says so)");
  let [a, b] = [0, 0];
  for (const replica of [0, 1]) {
    const [ra, rb] = [callsAt(0, `spread r${replica} `).length, callsAt(1, `spread r${replica} `).length];
    t.equal(ra + rb, 20, `replica ${replica}: one upstream call each of its 20`);
    t.ok(within(ra, 15) && within(rb, 5), `replica ${replica}: split ${ra}:${rb}, expected 15:5 ± 2`);
    [a, b] = [a + ra, b + rb];
  }
  t.ok(within(a, 30, 4) && within(b, 10, 4), `both replicas: split ${a}:${b}, expected 30:10 ± 4`);
  onlyOwnKeys(t);
});

t.test("on both replicas a deployment answering 500 fails over to the other: no call fails", async (t) => {
  fakes[0]!.faults.failureRate = 1;
  t.teardown(() => (fakes[0]!.faults.failureRate = 0));
  const statuses: number[] = [];
  // 4 calls per replica: fewer than the 5 consecutive failures that open a replica's breaker of dep-0.
  for (let i = 0; i < 8; i++) statuses.push(await chat(`spread failover r${i % 2} ${i}`, i % 2));
  fakes[0]!.faults.failureRate = 0;
  t.same(statuses, [200, 200, 200, 200, 200, 200, 200, 200], "every call answered");
  for (const replica of [0, 1]) {
    const tried = callsAt(0, `spread failover r${replica} `).length;
    t.equal(callsAt(1, `spread failover r${replica} `).length, 4, `replica ${replica}: dep-1 answered all 4`);
    t.ok(tried >= 2, `replica ${replica}: dep-0 was picked first and failed ${tried} times, each failed over to dep-1`);
  }
  onlyOwnKeys(t);
});

t.test("SIGHUP to replica 0 with the weights swapped moves its traffic 1:3", async (t) => {
  const log = cluster.replicas[0]!.appLog;
  const reloads = () => readFileSync(log, "utf8").split("\n").filter((l) => l.includes('"deployments reloaded"')).length;
  const before = reloads();
  write([1, 3]);
  process.kill(cluster.appPid(0)!, "SIGHUP");
  await waitFor(async () => reloads() > before, 10_000, "the reload to be installed");
  const statuses: number[] = [];
  for (let i = 0; i < 40; i++) statuses.push(await chat(`reloaded ${i}`));
  t.same(statuses.filter((s) => s !== 200), [], "all 40 answered");
  const [a, b] = [callsAt(0, "reloaded ").length, callsAt(1, "reloaded ").length];
  t.equal(a + b, 40, "one upstream call each");
  t.ok(within(a, 10) && within(b, 30), `split ${a}:${b}, expected 10:30 ± 2`);
});
