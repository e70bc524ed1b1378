// DELETE /v1/orgs/{id} in the embedded mode: owners only, with the
// confirmation; afterwards nothing of the organization is left in any store —
// every lmdb database under the data directory read record by record (data
// store, actor states and reminders, vector index), every other file read
// whole — except the usage ledger billing must keep, which holds no content.
import t from "tap";
import { randomUUID } from "node:crypto";
import { field, signup, startTestTroupe } from "../support/troupe.ts";
import { populate, scanLmdb, scanPlainFiles, type Hit } from "../support/org-footprint.ts";

t.setTimeout(90_000);

/** The usage ledger and its journal: kept on purpose (docs/decisions.md). */
const isUsageRecord = (hit: Hit) => /^(billing|usage-journal|ledger)/.test(hit.where);

t.test("deleting an organization leaves nothing of it in the embedded stores", async (t) => {
  const troupe = await startTestTroupe({ OUTBOUND_ALLOW_HOSTS: "127.0.0.1" });
  let stopped = false;
  t.teardown(() => (stopped ? undefined : troupe.stop()));
  const owner = await signup(troupe, "doomed");
  const other = await signup(troupe, "bystander");
  const member = await signup(troupe, "doomed-member");
  const marker = `MARK${randomUUID().replaceAll("-", "")}`;
  const footprint = await populate(troupe.request, owner, marker);
  const otherMarker = `MARK${randomUUID().replaceAll("-", "")}`;
  await populate(troupe.request, other, otherMarker);
  const invited = await troupe.request("POST", `/v1/orgs/${owner.orgId}/invitations`, { token: owner.token, body: { email: member.email, role: "admin" } });
  t.equal((await troupe.request("POST", "/v1/invitations/accept", { token: member.token, body: { token: String(field(invited.body, "token")) } })).status < 300, true, "the admin joined");

  const del = (token: string, body?: unknown) => troupe.request("DELETE", `/v1/orgs/${owner.orgId}`, { token, ...(body === undefined ? {} : { body }) });
  const missing = await del(owner.token);
  t.equal(missing.status, 400, missing.text);
  t.equal(field(missing.body, "error", "details", 0, "path"), "body.confirm", "the 400 names the field");
  const wrong = await del(owner.token, { confirm: "not its name" });
  t.equal(wrong.status, 400);
  t.equal(field(wrong.body, "error", "details", 0, "path"), "body.confirm");
  t.equal((await del(member.token, { confirm: owner.orgId })).status, 403, "an admin is not an owner");
  t.equal((await del(other.token, { confirm: owner.orgId })).status, 404, "a stranger");
  t.equal((await troupe.request("DELETE", `/v1/orgs/${owner.orgId}`, { token: owner.testKey, body: { confirm: owner.orgId } })).status, 403, "an API key");
  const orgName = String(field((await troupe.request("GET", `/v1/orgs/${owner.orgId}`, { token: owner.token })).body, "name"));
  const done = await del(owner.token, { confirm: orgName });
  t.equal(done.status, 200, done.text);
  t.match(done.body, { id: owner.orgId, deleted: true, erased: { conversations: 1, jobs: 1, webhooks: 1, vector_records: 1 } });
  t.ok(Number(field(done.body, "erased", "files")) >= footprint.fileIds.length, "its files (the job's scene clips too)");

  t.equal((await troupe.request("GET", `/v1/orgs/${owner.orgId}`, { token: owner.token })).status, 404, "the organization is gone");
  t.equal((await troupe.request("GET", "/v1/models", { token: owner.testKey })).status, 401, "its keys are refused");
  for (const id of footprint.fileIds) t.equal((await fetch(`${troupe.url}/v1/files/${id}`)).status, 404, "its files are gone");
  t.equal((await troupe.request("GET", "/v1/account", { token: owner.token })).status, 200, "the user stays (people are not the organization)");
  t.equal((await troupe.request("GET", "/v1/models", { token: other.testKey })).status, 200, "another organization is untouched");

  await troupe.stop();
  stopped = true;
  const hits = [...scanLmdb(troupe.dataDir, footprint.needles), ...scanPlainFiles(troupe.dataDir, footprint.needles)];
  t.same(hits.filter((h) => !isUsageRecord(h)), [], "nothing of the organization outside the usage records");
  t.same(hits.filter((h) => h.needle === marker), [], "no content anywhere, usage records included");
  const bystander = scanLmdb(troupe.dataDir, [otherMarker]).filter((h) => !isUsageRecord(h));
  t.ok(bystander.length > 0, "the scan does find an organization that was not deleted");
});
