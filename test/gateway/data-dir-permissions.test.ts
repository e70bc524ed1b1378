// The data directory is private: its files were created 0644 and
// the directory 0755, so any local user could read actors.mdb (webhook
// secrets among the actor state) and the account store. A real process
// (gateway/main.ts) is started on a data directory left 0755, made to write
// accounts, a webhook, a media file and vectors, stopped; then every entry
// under it is stat'ed: directories 0700, files 0600.
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { freePort, waitFor } from "../support/net.ts";
import { request, str } from "../support/troupe.ts";
import { embeddedEnv } from "../support/gateway-process.ts";

t.setTimeout(60_000);

function modes(root: string): { path: string; mode: number; dir: boolean }[] {
  const out: { path: string; mode: number; dir: boolean }[] = [];
  const walk = (path: string): void => {
    const stat = statSync(path);
    out.push({ path, mode: stat.mode & 0o777, dir: stat.isDirectory() });
    if (stat.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(root);
  return out;
}

t.test("after a start and some writes, the data directory is 0700 and everything in it owner-only", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "troupe-perms-"));
  chmodSync(dataDir, 0o755); // as an earlier version left it
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = { ...embeddedEnv(), PORT: String(port), HOST: "127.0.0.1", TROUPE_DATA_DIR: dataDir, LOG_LEVEL: "warn", OUTBOUND_ALLOW_HOSTS: "127.0.0.1" };
  const child = spawn(process.execPath, [join(import.meta.dirname, "../../gateway/main.ts")], { env, stdio: "ignore" });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  t.teardown(() => child.kill("SIGKILL"));
  await waitFor(async () => (await fetch(`${base}/readyz`)).ok, 20_000, "troupe to start");

  const signup = await request(base, "POST", "/v1/auth/signup", { body: { email: `perms-${Date.now()}@example.test`, password: "correct horse battery" } });
  t.equal(signup.status, 201, signup.text.slice(0, 300));
  const key = str(signup.body, "environments", 1, "test_key", "key");
  const webhook = await request(base, "POST", "/v1/webhooks", { token: key, body: { url: "http://127.0.0.1:9/hook", events: ["job.completed"] } });
  t.equal(webhook.status, 201, webhook.text.slice(0, 300));
  const speech = await request(base, "POST", "/v1/audio/speech", { token: key, body: { text: "hello", voice: "alto", model: "simulated-speech" } });
  t.equal(speech.status, 200, speech.text);
  const indexed = await request(base, "POST", "/v1/embeddings/index", { token: key, body: { content: "a secret note", metadata: {} } });
  t.equal(indexed.status, 200, indexed.text);

  child.kill("SIGTERM");
  t.equal(await exited, 0, "stopped cleanly");
  const entries = modes(dataDir);
  t.ok(entries.filter((e) => !e.dir).length >= 3, `files were written: ${entries.map((e) => e.path.slice(dataDir.length)).join(" ")}`);
  t.ok(entries.some((e) => e.path.endsWith(".mdb")), "lmdb stores among them");
  const wrong = entries.filter((e) => e.mode !== (e.dir ? 0o700 : 0o600)).map((e) => `${e.path.slice(dataDir.length) || "/"} ${e.mode.toString(8)}`);
  t.same(wrong, [], "no entry readable by group or others");
});
