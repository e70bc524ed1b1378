// File retention: an organization's file_retention_days (PATCH /v1/orgs/{id})
// and the deployment's FILE_RETENTION_DAYS, enforced by the sweeper — while
// running (a short sweep interval, the clock moved two days on) and across a
// restart (the sweep at start finds what is due from the stored index).
import t from "tap";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Clock } from "../../core/clock.ts";
import { waitFor } from "../support/net.ts";
import { field, signup, startTestTroupe, str, type TestTroupe } from "../support/troupe.ts";

t.setTimeout(60_000);
const day = 24 * 3600_000;

async function speech(troupe: TestTroupe, key: string): Promise<string> {
  const res = await troupe.request("POST", "/v1/audio/speech", { token: key, body: { text: "Kept a while.", voice: "soprano" } });
  if (res.status !== 200) throw new Error(`speech: ${res.status} ${res.text}`);
  return str(res.body, "audio").split("/").pop()!;
}
const status = async (troupe: TestTroupe, id: string) => (await fetch(`${troupe.url}/v1/files/${id}`)).status;

t.test("an organization's own retention, swept while running; others keep their files", async (t) => {
  let offset = 0;
  const clock: Clock = { now: () => Date.now() + offset };
  const troupe = await startTestTroupe({ FILE_RETENTION_SWEEP_INTERVAL_MS: "200" }, { clock });
  t.teardown(() => troupe.stop());
  const short = await signup(troupe, "retention-short");
  const keeper = await signup(troupe, "retention-none");
  const patch = (body: unknown) => troupe.request("PATCH", `/v1/orgs/${short.orgId}`, { token: short.token, headers: { "x-csrf-token": short.csrf }, body });
  const bad = await patch({ file_retention_days: 0 });
  t.equal(bad.status, 400, bad.text);
  t.match(JSON.stringify(field(bad.body, "error", "details")), /file_retention_days/, "the 400 names the field");
  t.equal((await troupe.request("PATCH", `/v1/orgs/${short.orgId}`, { token: keeper.token, headers: { "x-csrf-token": keeper.csrf }, body: { file_retention_days: 1 } })).status, 404, "another organization's owner");
  const set = await patch({ file_retention_days: 1 });
  t.equal(set.status, 200, set.text);
  t.equal(field(set.body, "file_retention_days"), 1);
  t.equal(field((await troupe.request("GET", `/v1/orgs/${short.orgId}`, { token: short.token })).body, "file_retention_days"), 1);

  const doomed = await speech(troupe, short.testKey);
  const kept = await speech(troupe, keeper.testKey);
  // A day later the file's day has not wholly passed the one-day retention yet.
  offset = day;
  await new Promise((r) => setTimeout(r, 600));
  t.equal(await status(troupe, doomed), 200, "kept within its retention");
  offset = 2 * day + 1000;
  await waitFor(async () => (await status(troupe, doomed)) === 404, 10_000, "the sweep deletes the expired file");
  t.equal(await status(troupe, kept), 200, "an organization without retention keeps its files");
});

t.test("FILE_RETENTION_DAYS applies to organizations without their own, and a restart sweeps at start", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "troupe-retention-"));
  const env = { TROUPE_DATA_DIR: dataDir, FILE_RETENTION_DAYS: "3", FILE_RETENTION_SWEEP_INTERVAL_MS: "3600000" };
  const first = await startTestTroupe(env);
  const user = await signup(first, "retention-default");
  const longer = await signup(first, "retention-longer");
  const set = await first.request("PATCH", `/v1/orgs/${longer.orgId}`, { token: longer.token, headers: { "x-csrf-token": longer.csrf }, body: { file_retention_days: 10 } });
  t.equal(set.status, 200, set.text);
  const doomed = await speech(first, user.testKey);
  const kept = await speech(first, longer.testKey);
  await first.stop();
  // Five days later, with an hour-long interval: only the sweep at start can delete it.
  const later = await startTestTroupe(env, { clock: { now: () => Date.now() + 5 * day } });
  t.teardown(() => later.stop());
  await waitFor(async () => (await status(later, doomed)) === 404, 10_000, "swept at start");
  t.equal(await status(later, kept), 200, "the organization's own longer retention wins over the default");
});
