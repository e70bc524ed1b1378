// `npm run backup` under load and `npm run restore` into a fresh data
// directory (scripts/backup.ts, scripts/restore.ts), end to end: an
// embedded Troupe serves signups, live chat calls, agent turns and video
// jobs while the backup runs as its own process; the copy is restored into
// a new TROUPE_DATA_DIR and a new Troupe started on it. Every write
// acknowledged before the backup began is there (usage: every call answered
// before the recorder's flush window ahead of the backup), and it serves.
import { execFile } from "node:child_process";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import t from "tap";
import { projectWithLiveKey } from "../support/billing.ts";
import { field, signup, startTestTroupe, str, type TestTroupe } from "../support/troupe.ts";


const run = promisify(execFile);
const scripts = join(import.meta.dirname, "../../scripts");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** The usage recorder writes a record at most 200 ms after its call was answered (its flush interval). */
const usageFlushMs = 200;

interface Acknowledged {
  emails: string[];
  chats: number;
  conversations: { id: string; messages: number }[];
  jobs: string[];
}

const snapshot = (a: Acknowledged): Acknowledged => ({ emails: [...a.emails], chats: a.chats, conversations: a.conversations.map((c) => ({ ...c })), jobs: [...a.jobs] });

function script(name: string, dataDir: string, dir: string) {
  return run(process.execPath, [join(scripts, name), dir], { env: { ...process.env, TROUPE_DATA_DIR: dataDir, TROUPE_MODE: "embedded" } });
}

t.test("a backup taken under load restores everything acknowledged before it began", async (t) => {
  t.setTimeout(120_000);
  const troupe = await startTestTroupe({ SIMULATED_VIDEO_DELAY_MS: "50", LOGIN_FREE_FAILURES_PER_ADDRESS: "1000", SIGNUP_LIMIT_PER_ADDRESS: "100000" });
  let restored: TestTroupe | undefined;
  t.teardown(async () => {
    await troupe.stop().catch(() => {});
    await restored?.stop();
  });
  const owner = await signup(troupe, "backup-owner");
  const p = await projectWithLiveKey(troupe, owner.token, owner.orgId);
  const acked: Acknowledged = { emails: [], chats: 0, conversations: [], jobs: [] };
  const chat = { model: "simulated-chat", routing_strategy: "manual", messages: [{ role: "user", content: "hello" }] };

  let loading = true;
  const failures: string[] = [];
  const loop = async (step: () => Promise<void>) => {
    while (loading) await step().catch((error: unknown) => void failures.push(String(error)));
  };
  const load = Promise.all([
    loop(async () => {
      const user = await signup(troupe, "backup-load");
      acked.emails.push(user.email);
      await sleep(20);
    }),
    loop(async () => {
      const res = await troupe.request("POST", "/v1/chat/completions", { token: p.liveKey, body: chat });
      if (res.status !== 200) throw new Error(`chat ${res.status} ${res.text}`);
      acked.chats += 1;
    }),
    loop(async () => {
      const created = await troupe.request("POST", "/v1/agents/conversations", { token: p.liveKey, body: { model: "simulated-chat" } });
      if (created.status !== 201) throw new Error(`conversation ${created.status} ${created.text}`);
      const id = str(created.body, "id");
      const turn = await troupe.request("POST", `/v1/agents/conversations/${id}/messages`, { token: p.liveKey, body: { content: "hello agent" } });
      if (turn.status !== 200) throw new Error(`turn ${turn.status} ${turn.text}`);
      acked.conversations.push({ id, messages: (field(turn.body, "messages") as unknown[]).length });
    }),
    loop(async () => {
      if (acked.jobs.length >= 4) {
        await sleep(50);
        return;
      }
      const job = await troupe.request("POST", "/v1/video/generate", { token: p.liveKey, body: { prompt: "a lighthouse", duration_seconds: 1, model: "simulated-video", routing_strategy: "manual" } });
      if (job.status !== 202) throw new Error(`job ${job.status} ${job.text}`);
      acked.jobs.push(str(job.body, "job_id"));
    }),
  ]);

  // Until every kind of write has been acknowledged a few times (a busy machine is slow to warm up).
  for (const until = Date.now() + 60_000; Date.now() < until; await sleep(50)) {
    if (acked.emails.length > 2 && acked.chats > 10 && acked.conversations.length > 2 && acked.jobs.length > 0) break;
  }
  const before = snapshot(acked);
  await sleep(usageFlushMs + 50);
  const backupDir = join(mkdtempSync(join(tmpdir(), "troupe-backup-")), "copy");
  const backup = await script("backup.ts", troupe.dataDir, backupDir);
  const copied = [...backup.stdout.matchAll(/^store (\S+):/gm)].map((m) => m[1]).sort();
  t.same(copied, ["actors/actors.mdb", "billing/ledger.lmdb", "cache/cache.lmdb", "request-log/request-log.lmdb", "tenancy/tenancy.lmdb", "vectors/records.mdb"], "every lmdb store copied");
  t.match(backup.stdout, new RegExp(`: ${copied.length} stores,`), "and counted");
  await sleep(300); // the load goes on after the backup, and none of it may break the copy
  loading = false;
  await load;
  t.same(failures, [], "the load ran without errors");
  t.ok(before.emails.length > 2 && before.chats > 10 && before.conversations.length > 2 && before.jobs.length > 0, `load before the backup: ${before.emails.length} signups, ${before.chats} chats, ${before.conversations.length} conversations, ${before.jobs.length} jobs`);
  await troupe.stop();

  const restoredDir = join(mkdtempSync(join(tmpdir(), "troupe-restored-")), "data");
  await script("restore.ts", restoredDir, backupDir);
  t.equal(statSync(restoredDir).mode & 0o777, 0o700, "the restored data directory is the owner's only");
  await t.rejects(script("restore.ts", restoredDir, backupDir), "a restore never writes over a data directory in use");
  restored = await startTestTroupe({ TROUPE_DATA_DIR: restoredDir, LOGIN_FREE_FAILURES_PER_ADDRESS: "1000", SIGNUP_LIMIT_PER_ADDRESS: "100000" });
  const r = restored;

  const loginsRefused: string[] = [];
  for (const email of before.emails) {
    const login = await r.request("POST", "/v1/auth/login", { body: { email, password: "correct horse battery" } });
    if (login.status !== 200) loginsRefused.push(`${email}: ${login.status}`);
  }
  t.same(loginsRefused, [], `every one of ${before.emails.length} accounts logs in after the restore`);
  const usage = await r.request("GET", `/v1/projects/${p.projectId}/usage?group_by=category`, { token: owner.token });
  t.equal(usage.status, 200, usage.text);
  const chatGroup = (field(usage.body, "groups") as { key: string; live: { calls: number } }[]).find((g) => g.key === "chat");
  const chatCalls = chatGroup?.live.calls ?? 0;
  t.ok(chatCalls >= before.chats, `usage holds every chat answered before the backup: ${chatCalls} chat records for ${before.chats} chats`);
  const conversationsLost: string[] = [];
  for (const c of before.conversations) {
    const got = await r.request("GET", `/v1/agents/conversations/${c.id}`, { token: p.liveKey });
    if (got.status !== 200 || (field(got.body, "messages") as unknown[]).length < c.messages) conversationsLost.push(`${c.id}: ${got.status}`);
  }
  t.same(conversationsLost, [], `every one of ${before.conversations.length} conversations reads back with its messages`);
  const jobsLost: string[] = [];
  for (const id of before.jobs) {
    const got = await r.request("GET", `/v1/jobs/${id}`, { token: p.liveKey });
    if (got.status !== 200) jobsLost.push(`${id}: ${got.status}`);
  }
  t.same(jobsLost, [], `every one of ${before.jobs.length} jobs reads back`);

  const after = await r.request("POST", "/v1/chat/completions", { token: p.liveKey, body: chat });
  t.equal(after.status, 200, "the restored Troupe serves with the keys it had");
  const newcomer = await signup(r, "after-restore");
  t.ok(newcomer.token, "and takes new accounts");
});

t.test("backup and restore refuse what they cannot do", async (t) => {
  const empty = mkdtempSync(join(tmpdir(), "troupe-nodata-"));
  const missing = join(empty, "absent");
  await t.rejects(script("backup.ts", missing, join(empty, "copy")), "no data directory");
  await t.rejects(script("restore.ts", join(empty, "new"), empty), "a directory without a manifest is not a backup");
  const dapr = run(process.execPath, [join(scripts, "backup.ts"), join(empty, "copy2")], { env: { ...process.env, TROUPE_DATA_DIR: empty, TROUPE_MODE: "dapr" } });
  await t.rejects(dapr, "the distributed mode has its own procedure");
});
