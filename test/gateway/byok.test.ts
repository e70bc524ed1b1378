// Bring your own key (docs/operations/byok.md) through a real gateway and
// the OpenAI fake: an organization's stored key reaches the fake on its
// calls (Authorization checked at the fake) and never on another
// organization's; the answers show only its last four characters; a key the
// provider refuses is 403 provider_credential_rejected naming it, or Troupe's
// key with allow_fallback; usage is marked byok and costs 0; members may not
// manage keys; the key is nowhere in the data directory in clear, hex or
// base64; deleting the organization removes it.
import t from "tap";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { UsageRecord } from "../../providers/usage.ts";
import { startOpenAIFake } from "../fakes/openai-fake.ts";
import { projectWithLiveKey } from "../support/billing.ts";
import { signup, startTestTroupe, field } from "../support/troupe.ts";

t.setTimeout(120_000);
const fake = await startOpenAIFake();
t.teardown(() => fake.close());
const troupeKey = "sk-troupe-own-key-000";
const orgKey = "sk-org-a-secret-9f8e7d6c5b4a3210";
const records: UsageRecord[] = [];
const troupe = await startTestTroupe(
  { OPENAI_API_KEY: troupeKey, OPENAI_BASE_URL: `${fake.url}/v1`, PROVIDER_MAX_ATTEMPTS: "1" },
  { usage: { record: (r) => void records.push(r) } },
);
let stopped = false;
t.teardown(() => (stopped ? undefined : troupe.stop()));

const a = await signup(troupe, "byok-a");
const b = await signup(troupe, "byok-b");
const pa = await projectWithLiveKey(troupe, a.token, a.orgId);
const pb = await projectWithLiveKey(troupe, b.token, b.orgId);
const body = { model: "gpt-4o-mini", routing_strategy: "manual", messages: [{ role: "user", content: "hello" }] };
const chat = (key: string) => troupe.request("POST", "/v1/chat/completions", { token: key, body });
const credentialPath = (orgId: string) => `/v1/orgs/${orgId}/provider-credentials/openai`;

t.test("stored write-only: the answers show its last four characters, never the key", async (t) => {
  const put = await troupe.request("PUT", credentialPath(a.orgId), { token: a.token, body: { api_key: orgKey } });
  t.equal(put.status, 200, put.text);
  t.match(put.body, { credential: { provider: "openai", environment_id: null, last4: "3210", allow_fallback: false } });
  const list = await troupe.request("GET", `/v1/orgs/${a.orgId}/provider-credentials`, { token: a.token });
  t.equal(list.status, 200);
  t.same(field(list.body, "data", 0, "last4"), "3210");
  for (const text of [put.text, list.text]) t.notOk(text.includes(orgKey.slice(0, -4)), "no part of the key but its last four");
  t.equal((await troupe.request("GET", `/v1/orgs/${a.orgId}/provider-credentials`, { token: b.token })).status, 404, "another organization's user: 404");
  t.equal((await troupe.request("PUT", "/v1/orgs/" + a.orgId + "/provider-credentials/nope", { token: a.token, body: { api_key: orgKey } })).status, 404, "unknown provider");
  const short = await troupe.request("PUT", credentialPath(a.orgId), { token: a.token, body: { api_key: "x" } });
  t.equal(short.status, 400);
  t.match(short.text, /api_key/);
});

t.test("the organization's calls reach the fake with its key; another organization's never do", async (t) => {
  fake.requests.length = 0;
  records.length = 0;
  for (let i = 0; i < 5; i++) t.equal((await chat(pa.liveKey)).status, 200);
  const fromA = fake.requests.map((r) => r.headers.authorization);
  for (let i = 0; i < 5; i++) t.equal((await chat(pb.liveKey)).status, 200);
  const fromB = fake.requests.slice(5).map((r) => r.headers.authorization);
  t.same(fromA, Array(5).fill(`Bearer ${orgKey}`));
  t.same(fromB, Array(5).fill(`Bearer ${troupeKey}`));
  await new Promise((resolve) => setTimeout(resolve, 300));
  const ofA = records.filter((r) => r.organization_id === a.orgId);
  const ofB = records.filter((r) => r.organization_id === b.orgId);
  t.equal(ofA.length, 5);
  t.ok(ofA.every((r) => r.byok === true && r.cost_usd === 0 && r.cost_nanos === 0), "A's usage: byok, billed 0");
  t.ok(ofB.every((r) => r.byok === undefined && r.cost_usd > 0), "B's usage: Troupe's key, billed");
});

t.test("a streamed call and the OpenAI-compatible mount go out with the organization's key too", async (t) => {
  fake.requests.length = 0;
  records.length = 0;
  const streamed = await troupe.request("POST", "/v1/chat/completions", { token: pa.liveKey, body: { ...body, stream: true } });
  t.equal(streamed.status, 200);
  t.match(streamed.text, /finish_reason/);
  const compat = await troupe.request("POST", "/openai/v1/chat/completions", { token: pa.liveKey, body: { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] } });
  t.equal(compat.status, 200, compat.text);
  t.same(fake.requests.map((r) => r.headers.authorization), [`Bearer ${orgKey}`, `Bearer ${orgKey}`]);
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.same(records.map((r) => [r.byok, r.cost_usd]), [[true, 0], [true, 0]]);
});

t.test("a key the provider refuses is 403 provider_credential_rejected naming it; with allow_fallback, Troupe's key serves", async (t) => {
  fake.requests.length = 0;
  fake.faults.queue.push({ kind: "status", status: 401, message: "Incorrect API key provided" });
  const refused = await chat(pa.liveKey);
  t.equal(refused.status, 403);
  t.match(refused.body, { error: { code: "provider_credential_rejected", message: /…3210 stored for the organization/ } });
  t.equal(fake.requests.length, 1, "no fallback to Troupe's key");

  t.equal((await troupe.request("PUT", credentialPath(a.orgId), { token: a.token, body: { api_key: orgKey, allow_fallback: true } })).status, 200);
  fake.requests.length = 0;
  records.length = 0;
  fake.faults.queue.push({ kind: "status", status: 401 });
  t.equal((await chat(pa.liveKey)).status, 200);
  t.same(fake.requests.map((r) => r.headers.authorization), [`Bearer ${orgKey}`, `Bearer ${troupeKey}`]);
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.equal(records[0]?.byok, undefined, "served by Troupe's key: not byok, billed");
  t.ok((records[0]?.cost_usd ?? 0) > 0);
});

t.test("an environment's credential wins for its keys", async (t) => {
  const envKey = "sk-env-only-key-aaaa5555";
  const put = await troupe.request("PUT", credentialPath(a.orgId), { token: a.token, body: { api_key: envKey, environment_id: pa.productionEnvId } });
  t.equal(put.status, 200, put.text);
  t.equal((await troupe.request("PUT", credentialPath(a.orgId), { token: a.token, body: { api_key: envKey, environment_id: pb.productionEnvId } })).status, 404, "another organization's environment");
  fake.requests.length = 0;
  t.equal((await chat(pa.liveKey)).status, 200);
  t.equal(fake.requests[0]?.headers.authorization, `Bearer ${envKey}`);
  t.equal((await troupe.request("DELETE", `${credentialPath(a.orgId)}?environment_id=${pa.productionEnvId}`, { token: a.token })).status, 204);
  fake.requests.length = 0;
  t.equal((await chat(pa.liveKey)).status, 200);
  t.equal(fake.requests[0]?.headers.authorization, `Bearer ${orgKey}`, "back to the organization's");
});

t.test("deleting the organization removes its stored credentials", async (t) => {
  const c = await signup(troupe, "byok-c");
  t.equal((await troupe.request("PUT", credentialPath(c.orgId), { token: c.token, body: { api_key: "sk-org-c-key-bbbb7777" } })).status, 200);
  const stored = `pcred:${c.orgId}:org:openai`;
  t.not(await troupe.services.store.get(stored), undefined, "stored under its key");
  const del = await troupe.request("DELETE", `/v1/orgs/${c.orgId}`, { token: c.token, body: { confirm: c.orgId } });
  t.equal(del.status, 200, del.text);
  t.equal(await troupe.services.store.get(stored), undefined, "gone with the organization");
  t.same(await troupe.services.store.page(`pcred-index:${c.orgId}`, 10), { members: [], nextCursor: null });
});

t.test("the stored key appears nowhere in the data directory (clear, hex, base64)", async (t) => {
  const forms = [orgKey, Buffer.from(orgKey).toString("hex"), Buffer.from(orgKey).toString("base64"), Buffer.from(orgKey).toString("base64url"), Buffer.from(orgKey, "utf16le").toString("latin1")];
  const needles = forms.map((f) => Buffer.from(f, f === forms[4] ? "latin1" : "utf8"));
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else files.push(p);
    }
  };
  await troupe.stop();
  stopped = true;
  walk(troupe.dataDir);
  t.ok(files.length > 0, `${files.length} files scanned`);
  const found = files.filter((f) => {
    const bytes = readFileSync(f);
    return needles.some((n) => bytes.includes(n));
  });
  t.same(found, [], "no file holds the key in any form");
});
