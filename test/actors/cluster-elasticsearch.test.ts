// The cluster's Elasticsearch (scripts/elasticsearch.sh, which `npm run
// cluster` runs) starts wherever the checkout is: with its data directory
// under a private (0700) parent, as a checkout under /root or a mktemp -d
// directory is, it still starts and says where its data lives. As root, ES
// runs as its own user, so the data moves to /var/tmp/troupe-es-<hash>,
// owned by that user with mode 0700; otherwise it stays where it was asked.
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import t from "tap";
import { repoDir } from "../support/dapr-cluster.ts";
import { freePort } from "../support/net.ts";

// One Elasticsearch start and stop; ~1 min on a busy machine.
t.setTimeout(400_000);

function run(command: "start" | "stop", env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn("bash", [join(repoDir, "scripts/elasticsearch.sh"), command], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

const parent = mkdtempSync(join(tmpdir(), "troupe-private-"));
chmodSync(parent, 0o700);
const requested = join(parent, "checkout", ".troupe", "cluster", "elasticsearch");
const port = await freePort();
const env = { ES_PORT: String(port), ES_HEAP: "512m", ES_DATA_DIR: requested };
let dataDir: string | undefined;
t.teardown(async () => {
  await run("stop", env);
  rmSync(parent, { recursive: true, force: true });
  if (dataDir && dataDir !== requested) rmSync(dataDir, { recursive: true, force: true });
});

t.test("starts under a 0700 parent and says where its data lives", async (t) => {
  t.equal(statSync(parent).mode & 0o777, 0o700, "the parent is private");
  const started = await run("start", env);
  t.equal(started.code, 0, started.stderr);
  dataDir = /^ES_DATA_DIR=(\S+)$/m.exec(started.stdout)?.[1];
  t.ok(dataDir, "prints ES_DATA_DIR=…");
  t.match(started.stdout, new RegExp(`^ELASTICSEARCH_URL=http://127.0.0.1:${port}$`, "m"));
  t.match(started.stderr, `data in ${dataDir}/data`, "the ready line names the data directory");
  if (userInfo().uid === 0) {
    t.match(dataDir, /^\/var\/tmp\/troupe-es-[0-9a-f]{16}$/, "root: a directory the ES user can reach");
    t.match(started.stderr, `user troupe-es cannot reach ${requested} (a parent directory is private), so Elasticsearch keeps its data and logs in ${dataDir}`);
    const stat = statSync(dataDir as string);
    t.equal(stat.mode & 0o777, 0o700, "mode 0700");
    t.not(stat.uid, 0, "owned by the ES user, not root");
    t.equal(readFileSync(join(requested, "data-location"), "utf8").trim(), dataDir, "the requested directory points to it");
  } else {
    t.equal(dataDir, requested, "not root: ES runs as this user, the data stays where it was asked");
  }
  const health = await fetch(`http://127.0.0.1:${port}/_cluster/health`);
  t.equal(health.status, 200, "Elasticsearch answers");
  await health.body?.cancel();

  const again = await run("start", env);
  t.equal(again.code, 0, "a second start reuses the running server");
  t.match(again.stdout, `ES_DATA_DIR=${dataDir}`, "and finds the same data directory");

  const stopped = await run("stop", env);
  t.equal(stopped.code, 0, stopped.stderr);
  t.match(stopped.stderr, "stopped", "stop finds the pid file in the substitute directory");
  await t.rejects(fetch(`http://127.0.0.1:${port}/_cluster/health`), "nothing answers afterwards");
});
