// Organization A never sees or touches B's projects, environments, keys or
// invitations (404, as a matrix), and roles gate changes inside an org.
import t from "tap";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";

const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());

t.test("cross-organization matrix: every operation on B's resources is 404 for A", async (t) => {
  const a = await signup(troupe, "a");
  const b = await signup(troupe, "b");
  const bKey = await troupe.request("POST", `/v1/environments/${b.developmentEnvId}/api-keys`, { token: b.token, body: { name: "b key" } });
  const bKeyId = str(bKey.body, "id");
  const bInvite = await troupe.request("POST", `/v1/orgs/${b.orgId}/invitations`, { token: b.token, body: { email: a.email, role: "member" } });
  t.equal(bInvite.status, 201);

  const matrix: [string, string, unknown?][] = [
    ["GET", `/v1/orgs/${b.orgId}`],
    ["GET", `/v1/orgs/${b.orgId}/projects`],
    ["POST", `/v1/orgs/${b.orgId}/projects`, { name: "intruder" }],
    ["GET", `/v1/projects/${b.projectId}/environments`],
    ["POST", `/v1/projects/${b.projectId}/environments`, { name: "intruder" }],
    ["GET", `/v1/environments/${b.developmentEnvId}/api-keys`],
    ["POST", `/v1/environments/${b.developmentEnvId}/api-keys`, { name: "intruder" }],
    ["GET", `/v1/environments/${b.productionEnvId}/api-keys`],
    ["DELETE", `/v1/api-keys/${bKeyId}`],
    ["GET", `/v1/orgs/${b.orgId}/invitations`],
    ["POST", `/v1/orgs/${b.orgId}/invitations`, { email: "x@example.test", role: "owner" }],
  ];
  for (const [method, path, body] of matrix) {
    const res = await troupe.request(method, path, { token: a.token, body });
    t.equal(res.status, 404, `${method} ${path}`);
    t.equal(field(res.body, "error", "code"), "not_found");
  }
  const orgs = await troupe.request("GET", "/v1/orgs", { token: a.token });
  t.notOk(orgs.text.includes(b.orgId), "B's org is not listed for A");
  const stillThere = await troupe.request("GET", `/v1/environments/${b.developmentEnvId}/api-keys`, { token: b.token });
  t.match(stillThere.body, { data: [{ revoked_at: null }, { revoked_at: null }] }, "B's keys untouched");
  const unknown = await troupe.request("GET", "/v1/orgs/org_doesnotexist", { token: a.token });
  t.equal(unknown.status, 404, "nonexistent and foreign look the same");
});

t.test("invitations: roles, acceptance, and what members may do", async (t) => {
  const owner = await signup(troupe, "owner");
  const member = await signup(troupe, "member");
  const admin = await signup(troupe, "admin");
  const other = await signup(troupe, "other");

  const inviteMember = await troupe.request("POST", `/v1/orgs/${owner.orgId}/invitations`, { token: owner.token, body: { email: member.email, role: "member" } });
  t.equal(inviteMember.status, 201);
  t.match(inviteMember.body, { invitation: { role: "member", email: member.email, accepted_at: null } });
  const inviteAdmin = await troupe.request("POST", `/v1/orgs/${owner.orgId}/invitations`, { token: owner.token, body: { email: admin.email, role: "admin" } });

  const stolen = await troupe.request("POST", "/v1/invitations/accept", { token: other.token, body: { token: str(inviteMember.body, "token") } });
  t.equal(stolen.status, 403, "an invitation only works for its email");
  const bogus = await troupe.request("POST", "/v1/invitations/accept", { token: member.token, body: { token: "inv_nope" } });
  t.equal(bogus.status, 404);

  const accepted = await troupe.request("POST", "/v1/invitations/accept", { token: member.token, body: { token: str(inviteMember.body, "token") } });
  t.equal(accepted.status, 200);
  t.match(accepted.body, { organization_id: owner.orgId, role: "member" });
  const again = await troupe.request("POST", "/v1/invitations/accept", { token: member.token, body: { token: str(inviteMember.body, "token") } });
  t.equal(again.status, 409);
  t.equal((await troupe.request("POST", "/v1/invitations/accept", { token: admin.token, body: { token: str(inviteAdmin.body, "token") } })).status, 200);

  const account = await troupe.request("GET", "/v1/account", { token: member.token });
  t.equal((field(account.body, "memberships") as unknown[]).length, 2, "member now belongs to two orgs");

  // A member reads but does not manage.
  t.equal((await troupe.request("GET", `/v1/orgs/${owner.orgId}/projects`, { token: member.token })).status, 200);
  t.equal((await troupe.request("GET", `/v1/environments/${owner.developmentEnvId}/api-keys`, { token: member.token })).status, 200);
  for (const [method, path, body] of [
    ["POST", `/v1/environments/${owner.developmentEnvId}/api-keys`, { name: "x" }],
    ["POST", `/v1/orgs/${owner.orgId}/projects`, { name: "x" }],
    ["POST", `/v1/projects/${owner.projectId}/environments`, { name: "x" }],
    ["POST", `/v1/orgs/${owner.orgId}/invitations`, { email: "z@example.test", role: "member" }],
    ["GET", `/v1/orgs/${owner.orgId}/invitations`, undefined],
  ] as const) {
    const res = await troupe.request(method, path, { token: member.token, body });
    t.equal(res.status, 403, `member: ${method} ${path}`);
    t.equal(field(res.body, "error", "code"), "forbidden");
  }
  // An admin manages keys but cannot make owners.
  const adminKey = await troupe.request("POST", `/v1/environments/${owner.developmentEnvId}/api-keys`, { token: admin.token, body: { name: "by admin", scopes: ["chat", "agents"] } });
  t.equal(adminKey.status, 201);
  const ownerInvite = await troupe.request("POST", `/v1/orgs/${owner.orgId}/invitations`, { token: admin.token, body: { email: "boss@example.test", role: "owner" } });
  t.equal(ownerInvite.status, 403);
  const list = await troupe.request("GET", `/v1/orgs/${owner.orgId}/invitations`, { token: admin.token });
  t.equal((field(list.body, "data") as unknown[]).length, 2);
  t.notOk(list.text.includes(str(inviteMember.body, "token")), "invitation tokens are never listed");
});

t.test("key creation validates scopes and fields", async (t) => {
  const user = await signup(troupe);
  const path = `/v1/environments/${user.developmentEnvId}/api-keys`;
  const bad = await troupe.request("POST", path, { token: user.token, body: { name: "x", scopes: ["chat", "teleport"] } });
  t.equal(bad.status, 400);
  t.match(field(bad.body, "error", "details"), [{ path: "body.scopes.1" }]);
  const noName = await troupe.request("POST", path, { token: user.token, body: { scopes: [] } });
  t.equal(noName.status, 400);
  t.match(field(noName.body, "error", "details"), [{ path: "body.name" }]);
  const extra = await troupe.request("POST", path, { token: user.token, body: { name: "x", admin: true } });
  t.equal(extra.status, 400, "unknown fields are refused");
  const defaults = await troupe.request("POST", path, { token: user.token, body: { name: "defaults" } });
  t.match(defaults.body, { scopes: [], live: false, rate_limit_per_minute: 600 });
  t.match(str(defaults.body, "key"), /^trp_test_/, "live defaults to false → a test key");
});

t.test("live keys only in production environments: elsewhere 400 naming live", async (t) => {
  const user = await signup(troupe, "live");
  const staging = await troupe.request("POST", `/v1/projects/${user.projectId}/environments`, { token: user.token, body: { name: "staging" } });
  const stagingId = str(staging.body, "environment", "id");
  const secondProduction = await troupe.request("POST", `/v1/projects/${user.projectId}/environments`, { token: user.token, body: { name: "eu", production: true } });
  for (const envId of [user.developmentEnvId, stagingId]) {
    const refused = await troupe.request("POST", `/v1/environments/${envId}/api-keys`, { token: user.token, body: { name: "live elsewhere", live: true } });
    t.equal(refused.status, 400);
    t.equal(field(refused.body, "error", "code"), "invalid_request");
    t.match(field(refused.body, "error", "details"), [{ path: "body.live" }]);
  }
  const listed = await troupe.request("GET", `/v1/environments/${stagingId}/api-keys`, { token: user.token });
  t.notOk((field(listed.body, "data") as { live: boolean }[]).some((k) => k.live), "nothing was created");
  for (const envId of [user.productionEnvId, str(secondProduction.body, "environment", "id")]) {
    const created = await troupe.request("POST", `/v1/environments/${envId}/api-keys`, { token: user.token, body: { name: "live", live: true } });
    t.equal(created.status, 201, "a production environment takes live keys");
    t.match(str(created.body, "key"), /^trp_live_/);
  }
  const test = await troupe.request("POST", `/v1/environments/${stagingId}/api-keys`, { token: user.token, body: { name: "test", live: false } });
  t.equal(test.status, 201, "test keys anywhere");
});

t.test("lists page newest first with cursors", async (t) => {
  const user = await signup(troupe);
  for (let i = 0; i < 5; i++) await troupe.request("POST", `/v1/orgs/${user.orgId}/projects`, { token: user.token, body: { name: `p${i}` } });
  const first = await troupe.request("GET", `/v1/orgs/${user.orgId}/projects?limit=4`, { token: user.token });
  t.same((field(first.body, "data") as { name: string }[]).map((p) => p.name), ["p4", "p3", "p2", "p1"]);
  const cursor = str(first.body, "next_cursor");
  const second = await troupe.request("GET", `/v1/orgs/${user.orgId}/projects?limit=4&cursor=${cursor}`, { token: user.token });
  t.same((field(second.body, "data") as { name: string }[]).map((p) => p.name), ["p0", "Default project"]);
  t.equal(field(second.body, "next_cursor"), null);
  const badLimit = await troupe.request("GET", `/v1/orgs/${user.orgId}/projects?limit=1000`, { token: user.token });
  t.equal(badLimit.status, 400);
  t.match(field(badLimit.body, "error", "details"), [{ path: "query.limit" }]);
});
