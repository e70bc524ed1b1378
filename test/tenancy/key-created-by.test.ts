// A key records the session user who created it (`created_by`, stored, not in
// the /v1 key record), and the request log shows a member the calls of the
// keys they created: an admin who made a key and was later made a member
// still sees that key's calls and no other key's; an owner sees every key's.
// The automatic test key of an environment belongs to no one.
import t from "tap";
import { keys } from "../../tenancy/records.ts";
import { eventually, hello, projectWithLiveKey, startFakeOpenAI } from "../support/billing.ts";
import { field, signup, str, startTestTroupe } from "../support/troupe.ts";

t.setTimeout(90_000);
const { fake, router } = await startFakeOpenAI();
t.teardown(() => fake.close());
const troupe = await startTestTroupe({}, { router: router() });
t.teardown(() => troupe.stop());
const owner = await signup(troupe, "creator-owner");
const project = await projectWithLiveKey(troupe, owner.token, owner.orgId, "created-by");

const entries = (body: unknown): Record<string, unknown>[] => {
  const data = field(body, "data");
  return Array.isArray(data) ? (data as Record<string, unknown>[]) : [];
};
const logOf = (token: string) => troupe.request("GET", `/v1/projects/${project.projectId}/requests`, { token });
const chat = (key: string) => troupe.request("POST", "/v1/chat/completions", { token: key, body: hello });
const idOf = (r: { headers: Headers }) => r.headers.get("x-request-id") ?? "";

const colleague = await signup(troupe, "creator-admin");
const invite = await troupe.request("POST", `/v1/orgs/${owner.orgId}/invitations`, { token: owner.token, body: { email: colleague.email, role: "admin" } });
const accepted = await troupe.request("POST", "/v1/invitations/accept", { token: colleague.token, body: { token: str(invite.body, "token") } });
const made = await troupe.request("POST", `/v1/environments/${project.productionEnvId}/api-keys`, { token: colleague.token, body: { name: "colleague's", live: true } });

t.test("the creator is stored with the key, not shown in its record", async (t) => {
  t.equal(accepted.status, 200, accepted.text);
  t.equal(made.status, 201, made.text);
  t.notOk("created_by" in (made.body as object), "the creation answer keeps the /v1 shape");
  const listed = await troupe.request("GET", `/v1/environments/${project.productionEnvId}/api-keys`, { token: owner.token });
  t.notOk(JSON.stringify(listed.body).includes("created_by"), "nor does the list");
  t.match(await troupe.services.store.get(keys.apiKey(str(made.body, "id"))), { created_by: str(accepted.body, "user_id") });
  t.match(await troupe.services.store.get(keys.apiKey(project.liveKeyId)), { created_by: str(owner.body, "user", "id") });
  const patched = await troupe.request("PATCH", `/v1/api-keys/${str(made.body, "id")}`, { token: owner.token, body: { name: "renamed" } });
  t.equal(patched.status, 200, patched.text);
  t.match(await troupe.services.store.get(keys.apiKey(str(made.body, "id"))), { created_by: str(accepted.body, "user_id") }, "a change keeps the creator");
});

t.test("a member sees their own keys' calls, an owner every key's", async (t) => {
  const ownersCall = await chat(project.liveKey);
  const theirCall = await chat(str(made.body, "key"));
  const testKeyCall = await chat(project.testKey);
  t.same([ownersCall.status, theirCall.status, testKeyCall.status], [200, 200, 200]);
  const all = await eventually(() => logOf(owner.token), (r) => entries(r.body).length >= 3);
  t.same(new Set(entries(all.body).map((e) => e["request_id"])), new Set([idOf(ownersCall), idOf(theirCall), idOf(testKeyCall)]), "the owner: every key's");
  t.equal(entries((await logOf(colleague.token)).body).length, 3, "an admin: every key's");
  // No route changes a role; the membership is rewritten as such a change would write it.
  const membershipKey = keys.membership(owner.orgId, str(accepted.body, "user_id"));
  const membership = await troupe.services.store.get(membershipKey);
  await troupe.services.store.apply([{ op: "put", key: membershipKey, value: { ...(membership as object), role: "member" } }]);
  const asMember = await logOf(colleague.token);
  t.equal(asMember.status, 200, asMember.text);
  t.same(entries(asMember.body).map((e) => e["request_id"]), [idOf(theirCall)], "a member: only the key they created (not the owner's, not the test key)");
  const one = await troupe.request("GET", `/v1/projects/${project.projectId}/requests/${idOf(ownersCall)}`, { token: colleague.token });
  t.equal(one.status, 404, "another's key's entry, by id");
  const own = await troupe.request("GET", `/v1/projects/${project.projectId}/requests/${idOf(theirCall)}`, { token: colleague.token });
  t.equal(own.status, 200, "their own, by id");
});
