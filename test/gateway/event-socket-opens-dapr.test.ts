// Event sockets on the Dapr host (the real gateway, TROUPE_MODE=dapr, one
// replica with its daprd, placement, scheduler and Redis): 500 sockets one
// after another on a valid conversation, every one gets its first frame.
// There the key's rate limit is counted in Redis, so every upgrade is
// admitted once the socket is open (gateway/ws-route.ts), after the await
// that uWebSockets.js 20.0.8 cannot upgrade behind; and the replica's log
// holds no uWS warning (an uncorked upgrade prints one per socket).
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { LocalCluster, repoDir } from "../support/dapr-cluster.ts";
import { openOneAfterAnother } from "../support/event-socket.ts";
import { startTestRedis } from "../support/redis.ts";
import { request, signup, str } from "../support/troupe.ts";

t.setTimeout(240_000);
const redis = await startTestRedis();
const cluster = new LocalCluster({
  mode: "dapr",
  replicas: 1,
  dataDir: mkdtempSync(join(tmpdir(), "troupe-socket-opens-")),
  appEntry: join(repoDir, "gateway/main.ts"),
  // The rate limit (600 a minute by default) is not what this counts.
  appEnv: { LOG_LEVEL: "warn", DEFAULT_RATE_LIMIT_PER_MINUTE: "100000" },
  redisUrl: redis.url,
  // Links the cached binaries into dapr/.bin when they are not there yet (a no-op once built).
  build: true,
});
t.teardown(async () => {
  await cluster.stop();
  await redis.stop();
});
await cluster.start();
const replica = cluster.replicas[0]!;

t.test("500 sockets one after another on the Dapr host: 500 first frames, 0 drops, no uWS warning", async (t) => {
  const at = { request: (method: string, path: string, options?: Parameters<typeof request>[3]) => request(replica.gatewayUrl, method, path, options) };
  const user = await signup(at, "opens-dapr");
  const created = await at.request("POST", "/v1/agents/conversations", { token: user.testKey, body: {} });
  t.equal(created.status, 201, created.text);
  const url = `${replica.gatewayUrl.replace("http", "ws")}/v1/agents/conversations/${str(created.body, "id")}/events`;
  const tally = await openOneAfterAnother(url, ["troupe.v1", `bearer.${user.testKey}`], 500);
  t.comment(`dapr: ${JSON.stringify(tally)}`);
  t.equal(tally.opened, 500, "500 opened");
  t.equal(tally.firstFrames, 500, "500 got their first frame");
  t.same(tally.drops, {}, "0 drops");
  t.notMatch(readFileSync(replica.appLog, "utf8"), /Warning: uWS/, "no uWS warning in the replica's output");
});
