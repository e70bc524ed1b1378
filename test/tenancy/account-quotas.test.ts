// Per-account and per-organization quotas (docs/security-and-limits.md,
// "Account quotas"), over real sockets: a probe's session created 30
// organizations and 30 projects in 1.6 s; with ORGANIZATIONS_PER_ACCOUNT 3
// and PROJECTS_PER_ORGANIZATION 2 the next create is 403 quota_exceeded
// naming the limit, and nothing past it is stored.
import t from "tap";
import { field, signup, startTestTroupe } from "../support/troupe.ts";

const troupe = await startTestTroupe({ ORGANIZATIONS_PER_ACCOUNT: "3", PROJECTS_PER_ORGANIZATION: "2" });
t.teardown(() => troupe.stop());
const user = await signup(troupe, "quotas");

t.test("organizations per account: signup's own counts; the fourth is refused", async (t) => {
  for (const name of ["second", "third"]) {
    const res = await troupe.request("POST", "/v1/orgs", { token: user.token, body: { name } });
    t.equal(res.status, 201, res.text);
  }
  const past = await troupe.request("POST", "/v1/orgs", { token: user.token, body: { name: "fourth" } });
  t.equal(past.status, 403, past.text);
  t.equal(field(past.body, "error", "code"), "quota_exceeded");
  t.match(field(past.body, "error", "message"), /the limit is 3/);
  const list = await troupe.request("GET", "/v1/orgs?limit=100", { token: user.token });
  t.equal((field(list.body, "data") as unknown[]).length, 3, "nothing past the limit was stored");
});

t.test("projects per organization: signup's project counts; the third is refused", async (t) => {
  const second = await troupe.request("POST", `/v1/orgs/${user.orgId}/projects`, { token: user.token, body: { name: "two" } });
  t.equal(second.status, 201, second.text);
  const past = await troupe.request("POST", `/v1/orgs/${user.orgId}/projects`, { token: user.token, body: { name: "three" } });
  t.equal(past.status, 403, past.text);
  t.equal(field(past.body, "error", "code"), "quota_exceeded");
  t.match(field(past.body, "error", "message"), /the limit is 2/);
  const other = await signup(troupe, "quotas-other");
  const theirs = await troupe.request("POST", `/v1/orgs/${other.orgId}/projects`, { token: other.token, body: { name: "two" } });
  t.equal(theirs.status, 201, "another organization's quota is its own");
});
