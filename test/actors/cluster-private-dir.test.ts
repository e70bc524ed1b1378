// `npm run cluster` (scripts/cluster.ts with the real gateway) from a data
// directory under a private (0700) parent, the case of a checkout under /root
// or a mktemp -d directory: Elasticsearch still starts (as root, with its data
// where its own user can reach it), the launcher says where that is, both
// replicas answer, and SIGTERM stops everything, Elasticsearch included.
import { chmodSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import t from "tap";
import { startClusterLauncher } from "../support/cluster-launcher.ts";
import { requireDaprPrerequisites } from "../support/dapr-cluster.ts";
import { freePortPair, isPortFree } from "../support/net.ts";

// Elasticsearch, placement, scheduler and two replicas with their daprd.
t.setTimeout(400_000);
requireDaprPrerequisites({ redisUrl: process.env.REDIS_URL });

const parent = mkdtempSync(join(tmpdir(), "troupe-private-cluster-"));
chmodSync(parent, 0o700);
const port = await freePortPair();
const daprPort = await freePortPair();
const esPort = await freePortPair();
// Without ELASTICSEARCH_URL (CI sets one for the other suites): the launcher must start its own.
const { ELASTICSEARCH_URL: _external, ...inherited } = process.env;
const launcher = startClusterLauncher({
  ...inherited,
  TROUPE_REPLICAS: "2",
  PORT: String(port),
  DAPR_HTTP_PORT: String(daprPort),
  ES_PORT: String(esPort),
  ES_HEAP: "512m",
  TROUPE_DATA_DIR: join(parent, "checkout", ".troupe", "cluster"),
  TROUPE_CLUSTER_APP: "gateway/main.ts",
  LOG_LEVEL: "warn",
});
let esDataDir: string | undefined;
t.teardown(async () => {
  if (launcher.child.exitCode === null) {
    launcher.child.kill("SIGTERM");
    await launcher.exited;
  }
  rmSync(parent, { recursive: true, force: true });
  if (esDataDir?.startsWith("/var/tmp/troupe-es-")) rmSync(esDataDir, { recursive: true, force: true });
});

const ready = await launcher.ready;
t.ok(ready, "the launcher reports ready");
if (!ready) t.comment(launcher.output());

t.test("says where Elasticsearch keeps its data, somewhere its user can reach", async (t) => {
  t.equal(statSync(parent).mode & 0o777, 0o700, "the parent is private");
  esDataDir = new RegExp(`cluster: elasticsearch http://127.0.0.1:${esPort} keeps its data in (\\S+)`).exec(launcher.output())?.[1];
  t.ok(esDataDir, "the launcher names the data directory");
  if (userInfo().uid === 0) t.match(esDataDir, /^\/var\/tmp\/troupe-es-[0-9a-f]{16}$/, "root: moved out of the private parent");
  const health = await fetch(`http://127.0.0.1:${esPort}/_cluster/health`);
  t.equal(health.status, 200, "Elasticsearch answers");
  await health.body?.cancel();
});

t.test("both replicas answer", async (t) => {
  for (const i of [0, 1]) {
    const res = await fetch(`http://127.0.0.1:${port + i}/healthz`);
    t.equal(res.status, 200, `replica ${i}`);
    await res.body?.cancel();
  }
});

t.test("a media file stored through one replica is served by the other (one S3 store)", async (t) => {
  const at = (i: number, path: string) => `http://127.0.0.1:${port + i}${path}`;
  const signup = await fetch(at(0, "/v1/auth/signup"), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: `cluster-files-${Date.now()}@example.com`, password: "a long cluster passphrase" }),
  });
  t.equal(signup.status, 201, "signed up through replica 0");
  const key = ((await signup.json()) as { environments: { test_key?: { key: string } }[] }).environments.find((e) => e.test_key)?.test_key?.key ?? "";
  const speech = await fetch(at(0, "/v1/audio/speech"), {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: "simulated-speech", voice: "alto", text: "Stored by one replica, served by the other." }),
  });
  t.equal(speech.status, 200, "speech through replica 0");
  const audio = new URL(((await speech.json()) as { audio: string }).audio);
  t.equal(audio.port, String(port), "the URL names replica 0");
  const fromOther = await fetch(at(1, audio.pathname));
  t.equal(fromOther.status, 200, "replica 1 serves it");
  t.equal(fromOther.headers.get("content-type"), "audio/wav");
  const bytes = Buffer.from(await fromOther.arrayBuffer());
  t.equal(bytes.subarray(0, 4).toString("latin1"), "RIFF", "the stored WAV");
  t.ok(bytes.length > 1000, `${bytes.length} bytes`);
});

t.test("SIGTERM stops everything, Elasticsearch included", async (t) => {
  launcher.child.kill("SIGTERM");
  t.equal(await launcher.exited, 0, "the launcher exits 0");
  t.match(launcher.output(), "cluster: stopped");
  for (const p of [port, port + 1, esPort]) t.ok(await isPortFree(p), `port ${p} free again`);
});
