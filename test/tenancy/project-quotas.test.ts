// API_KEYS_PER_PROJECT, ENVIRONMENTS_PER_PROJECT,
// PENDING_INVITATIONS_PER_ORGANIZATION and WEBHOOK_ENDPOINTS_PER_ORGANIZATION
// (docs/security-and-limits.md,
// "Account quotas"), over real sockets: past each, the create is 403
// quota_exceeded naming the limit, as the organization and project quotas
// are; 50 concurrent creates at the limit less one give exactly one 201;
// revoking a key, deleting a webhook, accepting an invitation or its expiry
// frees a place; an environment's automatic test key neither counts nor is
// ever refused.
// Exact across replicas too: two on one Redis split 50 racing creates.
import t from "tap";
import type { Test } from "tap";
import type { Clock } from "../../core/clock.ts";
import { startReplicas } from "../support/replicas.ts";
import { field, signup, startTestTroupe, str, type TestResponse } from "../support/troupe.ts";

const day = 24 * 3600_000;
let offset = 0;
const clock: Clock = { now: () => Date.now() + offset };
const troupe = await startTestTroupe(
  { API_KEYS_PER_PROJECT: "3", ENVIRONMENTS_PER_PROJECT: "4", PENDING_INVITATIONS_PER_ORGANIZATION: "3", WEBHOOK_ENDPOINTS_PER_ORGANIZATION: "3", OUTBOUND_ALLOW_HOSTS: "127.0.0.1", SESSION_TTL_SECONDS: String(30 * 24 * 3600) },
  { clock },
);
t.teardown(() => troupe.stop());

type Create = () => Promise<TestResponse>;

/** Fires `count` creates at once; answers the statuses, refusals checked to be the quota's. */
async function race(t: Test, create: Create, count: number, limit: number): Promise<number> {
  const answers = await Promise.all(Array.from({ length: count }, () => create()));
  const refusal = new RegExp(`: the limit is ${limit}$`);
  const others = answers.filter((res) => res.status !== 201 && !(res.status === 403 && field(res.body, "error", "code") === "quota_exceeded" && refusal.test(str(res.body, "error", "message"))));
  t.same(others.map((res) => res.text), [], "every refusal is 403 quota_exceeded naming the limit");
  return answers.filter((res) => res.status === 201).length;
}

t.test("API keys per project: the test key does not count; 50 racing at 2 of 3 give one key; revoking frees a slot", async (t) => {
  const user = await signup(troupe, "key-quota");
  const createKey = (envId: string, name = "k"): Create => () =>
    troupe.request("POST", `/v1/environments/${envId}/api-keys`, { token: user.token, body: { name } });
  // Signup's development environment already has its test key: three member-made keys still fit.
  for (const envId of [user.productionEnvId, user.developmentEnvId]) {
    const res = await createKey(envId)();
    t.equal(res.status, 201, res.text);
  }
  t.equal(await race(t, createKey(user.developmentEnvId), 50, 3), 1, "exactly one of 50 concurrent creates took the last place");
  const past = await createKey(user.productionEnvId)();
  t.equal(past.status, 403, "the project's keys are counted across its environments");

  // A new environment's automatic test key is made even with the project's keys at the limit.
  const env = await troupe.request("POST", `/v1/projects/${user.projectId}/environments`, { token: user.token, body: { name: "staging" } });
  t.equal(env.status, 201, env.text);
  t.match(str(env.body, "test_key", "key"), /_test_/);

  const listed = await troupe.request("GET", `/v1/environments/${user.developmentEnvId}/api-keys?limit=100`, { token: user.token });
  const devKeys = field(listed.body, "data") as { id: string; created_by: string | null }[];
  const memberKey = devKeys.find((k) => k.created_by !== null);
  if (!memberKey) throw new Error("no member-made key listed");
  const revoked = await troupe.request("DELETE", `/v1/api-keys/${memberKey.id}`, { token: user.token });
  t.equal(revoked.status, 200, revoked.text);
  t.equal(await race(t, createKey(user.productionEnvId), 50, 3), 1, "the revoked key's place is taken once");

  const other = await signup(troupe, "key-quota-other");
  const theirs = await troupe.request("POST", `/v1/environments/${other.productionEnvId}/api-keys`, { token: other.token, body: { name: "k" } });
  t.equal(theirs.status, 201, "another project's quota is its own");
});

t.test("environments per project: the automatic two count; 50 racing at 3 of 4 give one environment", async (t) => {
  const user = await signup(troupe, "env-quota");
  const createEnv: Create = () => troupe.request("POST", `/v1/projects/${user.projectId}/environments`, { token: user.token, body: { name: "preview" } });
  t.equal((await createEnv()).status, 201);
  t.equal(await race(t, createEnv, 50, 4), 1, "exactly one of 50 concurrent creates took the last place");
  const list = await troupe.request("GET", `/v1/projects/${user.projectId}/environments?limit=100`, { token: user.token });
  t.equal((field(list.body, "data") as unknown[]).length, 4, "nothing past the limit was stored");
});

t.test("pending invitations per organization: 50 racing at 2 of 3 give one; accepting one and expiry free places", async (t) => {
  const owner = await signup(troupe, "inv-quota");
  const invitee = await signup(troupe, "inv-quota-invitee");
  const invite = (email: string): Create => () =>
    troupe.request("POST", `/v1/orgs/${owner.orgId}/invitations`, { token: owner.token, body: { email, role: "member" } });
  const first = await invite(invitee.email)();
  t.equal(first.status, 201, first.text);
  t.equal((await invite("second@example.test")()).status, 201);
  t.equal(await race(t, invite("racing@example.test"), 50, 3), 1, "exactly one of 50 concurrent invitations took the last place");

  const accepted = await troupe.request("POST", "/v1/invitations/accept", { token: invitee.token, body: { token: str(first.body, "token") } });
  t.equal(accepted.status, 200, accepted.text);
  t.equal(await race(t, invite("after-accept@example.test"), 10, 3), 1, "the accepted invitation's place is taken once");

  offset += 8 * day; // every pending invitation (a week) has expired
  t.equal(await race(t, invite("after-expiry@example.test"), 10, 3), 3, "expired invitations no longer count");
});

t.test("webhooks per organization: 50 racing at 2 of 3 give one; a deleted webhook frees its place", async (t) => {
  const user = await signup(troupe, "webhook-quota");
  const createHook = (token: string): Create => () =>
    troupe.request("POST", "/v1/webhooks", { token, body: { url: "http://127.0.0.1:9/hook", events: ["job.completed"] } });
  const first = await createHook(user.token)();
  t.equal(first.status, 201, first.text);
  t.equal((await createHook(user.testKey)()).status, 201, "a key's webhook counts for its organization too");
  t.equal(await race(t, createHook(user.token), 50, 3), 1, "exactly one of 50 concurrent creates took the last place");
  const listed = await troupe.request("GET", "/v1/webhooks?limit=100", { token: user.token });
  t.equal((field(listed.body, "data") as unknown[]).length, 3, "nothing past the limit was stored");
  const deleted = await troupe.request("DELETE", `/v1/webhooks/${str(first.body, "webhook", "id")}`, { token: user.token });
  t.equal(deleted.status, 200, deleted.text);
  t.equal(await race(t, createHook(user.token), 10, 3), 1, "the deleted webhook's place is taken once");
});

t.test("two replicas on one Redis: 50 key creates racing at 2 of 3, split between them, give one key", async (t) => {
  const cluster = await startReplicas(2, { API_KEYS_PER_PROJECT: "3" });
  t.teardown(() => cluster.stop());
  const [a, b] = cluster.replicas;
  if (!a || !b) throw new Error("two replicas expected");
  const user = await signup(a, "key-quota-redis");
  const path = `/v1/environments/${user.productionEnvId}/api-keys`;
  for (let i = 0; i < 2; i++) t.equal((await a.request("POST", path, { token: user.token, body: { name: "k" } })).status, 201);
  let turn = 0;
  const either: Create = () => ((turn++ % 2 === 0 ? a : b).request("POST", path, { token: user.token, body: { name: "k" } }));
  t.equal(await race(t, either, 50, 3), 1, "exactly one of 50 concurrent creates on two replicas took the last place");
});
