// The request log over real sockets: each API-key call (an answer, a 400,
// a provider failure, a stream) becomes one entry with its figures, the
// project's log routes filter and page it, a member reads only their own
// keys' entries, and another organization's project or entry is 404.
import t from "tap";
import { keys } from "../../tenancy/records.ts";
import { eventually, hello, projectWithLiveKey, startFakeOpenAI } from "../support/billing.ts";
import { field, signup, str, startTestTroupe } from "../support/troupe.ts";

t.setTimeout(90_000);
const { fake, router } = await startFakeOpenAI();
t.teardown(() => fake.close());
const troupe = await startTestTroupe({}, { router: router() });
t.teardown(() => troupe.stop());
const owner = await signup(troupe, "reqlog");
const project = await projectWithLiveKey(troupe, owner.token, owner.orgId, "logged");

const chat = (key: string, body: unknown = hello) => troupe.request("POST", "/v1/chat/completions", { token: key, body });
const logOf = (query = "", token = owner.token, projectId = project.projectId) => troupe.request("GET", `/v1/projects/${projectId}/requests${query}`, { token });
const entries = (body: unknown): Record<string, unknown>[] => {
  const data = field(body, "data");
  return Array.isArray(data) ? (data as Record<string, unknown>[]) : [];
};
const logged = (n: number, query = "") => eventually(() => logOf(query), (r) => entries(r.body).length >= n);

const ok = await chat(project.liveKey);
const invalid = await chat(project.liveKey, { model: "gpt-4.1-mini", messages: [] });
fake.faults.failureRate = 1;
const failed = await chat(project.liveKey);
fake.faults.failureRate = 0;
const stream = await fetch(`http://127.0.0.1:${troupe.port}/v1/chat/completions`, {
  method: "POST",
  headers: { authorization: `Bearer ${project.liveKey}`, "content-type": "application/json" },
  body: JSON.stringify({ ...hello, stream: true }),
});
const streamId = stream.headers.get("x-request-id") ?? "";
await stream.text();
const idOf = (r: { headers: Headers }) => r.headers.get("x-request-id") ?? "";
const all = await logged(4);

t.test("one entry per call, with its figures", async (t) => {
  t.same([ok.status, invalid.status, stream.status], [200, 400, 200]);
  t.ok(failed.status >= 500, `a provider failure answers ${failed.status}`);
  const byId = new Map(entries(all.body).map((e) => [e["request_id"], e]));
  t.equal(byId.size, 4, "four calls, four entries");
  const answered = byId.get(idOf(ok));
  t.match(answered, {
    organization_id: owner.orgId,
    project_id: project.projectId,
    api_key_id: project.liveKeyId,
    live: true,
    method: "POST",
    route: "/v1/chat/completions",
    model: "gpt-4.1-mini",
    provider: "openai",
    status: 200,
    error_code: null,
  });
  t.ok(Number(field(answered, "input_tokens")) > 0 && Number(field(answered, "output_tokens")) > 0, "tokens from the usage record");
  t.ok(Number(field(answered, "cost_usd")) > 0, "a live call's cost");
  t.ok(Number(field(answered, "latency_ms")) > 0);
  t.ok(Number(field(answered, "ttfb_ms")) <= Number(field(answered, "latency_ms")), "first byte before the end");
  t.notOk(JSON.stringify(answered).includes("hello there"), "no prompt content");
  t.match(byId.get(idOf(invalid)), { status: 400, error_code: "invalid_request", model: null, input_tokens: 0, cost_usd: 0 });
  t.match(byId.get(idOf(failed)), { status: failed.status, error_code: str(failed.body, "error", "code"), cost_usd: 0 });
  const streamed = byId.get(streamId);
  t.match(streamed, { status: 200, error_code: null, model: "gpt-4.1-mini", provider: "openai" });
  t.ok(Number(field(streamed, "output_tokens")) > 0, "a stream's usage joins its entry");
  t.ok(Number(field(streamed, "ttfb_ms")) > 0, "a stream's first byte");
  const one = await troupe.request("GET", `/v1/projects/${project.projectId}/requests/${idOf(ok)}`, { token: owner.token });
  t.equal(one.status, 200);
  t.same(one.body, { ...answered, content: null }, "the entry alone is the listed one, with its content: none (the project does not log content)");
});

t.test("filters and pagination", async (t) => {
  t.same(entries((await logOf("?status=400")).body).map((e) => e["request_id"]), [idOf(invalid)]);
  t.same(entries((await logOf(`?error_code=${str(failed.body, "error", "code")}`)).body).map((e) => e["request_id"]), [idOf(failed)]);
  t.equal(entries((await logOf("?model=gpt-4.1-mini")).body).length, 3, "the 400 named no model the router used");
  t.equal(entries((await logOf("?provider=openai")).body).length, 2, "a failed call names no provider: none answered");
  t.equal(entries((await logOf(`?api_key_id=${project.liveKeyId}`)).body).length, 4);
  t.equal(entries((await logOf("?api_key_id=key_nobody")).body).length, 0);
  t.equal(entries((await logOf("?to=2000-01-01T00:00:00Z")).body).length, 0, "before every call");
  t.equal(entries((await logOf(`?from=${new Date(Date.now() - 600_000).toISOString()}`)).body).length, 4);
  const seen: unknown[] = [];
  let after = "";
  for (let i = 0; i < 10; i++) {
    const page = await logOf(`?limit=1${after ? `&after=${after}` : ""}`);
    t.equal(page.status, 200);
    seen.push(...entries(page.body).map((e) => e["request_id"]));
    const next = field(page.body, "next_cursor");
    if (next === null) break;
    after = String(next);
  }
  t.same(seen, entries(all.body).map((e) => e["request_id"]), "pages of one, newest first, every entry once");
  const times = entries(all.body).map((e) => String(e["created_at"]));
  t.same(times, [...times].sort().reverse(), "newest first");
  t.equal((await logOf("?status=abc")).status, 400, "a status that is no number");
  t.equal((await logOf("?after=nonsense")).status, 400, "a cursor this API never returned");
  t.equal((await logOf("?limit=1000")).status, 400, "past the largest page");
});

t.test("another organization: 404, never its entries", async (t) => {
  const stranger = await signup(troupe, "stranger");
  t.equal((await logOf("", stranger.token)).status, 404, "a project of another organization");
  t.equal((await troupe.request("GET", `/v1/projects/${project.projectId}/requests/${idOf(ok)}`, { token: stranger.token })).status, 404);
  t.equal((await troupe.request("GET", `/v1/projects/${stranger.projectId}/requests/${idOf(ok)}`, { token: stranger.token })).status, 404, "an entry of another project under one's own");
  t.same(entries((await logOf("", stranger.token, stranger.projectId)).body), [], "its own log is empty");
  const byKey = await logOf("", project.liveKey);
  t.ok(byKey.status === 401 || byKey.status === 403, `an API key is no session (${byKey.status})`);
});

t.test("a member reads only their own keys' entries", async (t) => {
  const member = await signup(troupe, "member");
  const invite = await troupe.request("POST", `/v1/orgs/${owner.orgId}/invitations`, { token: owner.token, body: { email: member.email, role: "member" } });
  t.equal(invite.status, 201);
  const accepted = await troupe.request("POST", "/v1/invitations/accept", { token: member.token, body: { token: str(invite.body, "token") } });
  t.equal(accepted.status, 200, accepted.text);
  t.same(entries((await logOf("", member.token)).body), [], "no key of theirs: nothing");
  t.equal((await troupe.request("GET", `/v1/projects/${project.projectId}/requests/${idOf(ok)}`, { token: member.token })).status, 404, "another's key's entry");
  // Keys record who created them in `created_by`; members create none through the API yet, so the record is written here.
  const other = await troupe.request("POST", `/v1/environments/${project.productionEnvId}/api-keys`, { token: owner.token, body: { name: "member's", live: true } });
  const otherId = str(other.body, "id");
  const stored = await troupe.services.store.get(keys.apiKey(otherId));
  await troupe.services.store.apply([{ op: "put", key: keys.apiKey(otherId), value: { ...(stored as object), created_by: str(accepted.body, "user_id") } }]);
  const theirs = await chat(str(other.body, "key"));
  t.equal(theirs.status, 200);
  const seen = await eventually(() => logOf("", member.token), (r) => entries(r.body).length >= 1);
  t.same(entries(seen.body).map((e) => e["request_id"]), [idOf(theirs)], "only their key's call");
  t.equal(entries((await logOf("", owner.token)).body).length, 5, "the owner sees every key's");
});
