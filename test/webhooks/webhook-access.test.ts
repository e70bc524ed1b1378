// Who may manage webhooks and which events each receives, over real HTTP
// against an embedded Troupe (docs/guides/access-control.md): owners and admins
// (session) and unscoped API keys manage them; a member's session is 403
// forbidden, a key limited to some categories 403 insufficient_scope. A
// webhook made with a session receives the organization's events; one made
// with a key only its key's environment's: a development key's webhook
// never sees a production job. Secrets are sealed at rest: no file under
// the data directory holds one, and a secret stored in the clear before
// encryption existed still signs, and is sealed by the actor's next turn.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { startWebhookReceiver, type WebhookReceiver } from "../fakes/webhook-receiver.ts";
import { waitFor } from "../support/net.ts";
import { field, signup, startTestTroupe, str, type TestTroupe } from "../support/troupe.ts";
import { startJob, watchJob } from "../jobs/job-suite.ts";
import { ActorStore } from "../../actors/hosts/embedded/store.ts";
import { WEBHOOK_ACTOR } from "../../actors/webhooks/webhook-actor.ts";
import { keyFileName } from "../../actors/webhooks/secret-box.ts";

t.setTimeout(120_000);
const env = {
  SIMULATED_VIDEO_DELAY_MS: "200",
  SIMULATED_VIDEO_DIR: mkdtempSync(join(tmpdir(), "troupe-simvid-")),
  OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost",
  WEBHOOK_RETRY_SCALE: "0.0002",
  WEBHOOK_TIMEOUT_MS: "2000",
};

async function create(troupe: TestTroupe, token: string, receiver: WebhookReceiver, path: string, query = "") {
  const res = await troupe.request("POST", `/v1/webhooks${query}`, { token, body: { url: `${receiver.url}${path}`, events: ["job.completed", "job.failed"] } });
  if (res.status === 201) receiver.secrets.set(new URL(`${receiver.url}${path}`).pathname, str(res.body, "secret"));
  return res;
}

/** Every byte under `dir`, as latin1 text (lmdb files included). */
function everyFile(dir: string): { path: string; text: string }[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile())
    .map((path) => ({ path, text: readFileSync(path).toString("latin1") }));
}

t.test("roles and scopes: members and scoped keys cannot manage webhooks", async (t) => {
  const troupe = await startTestTroupe(env);
  t.teardown(() => troupe.stop());
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  const owner = await signup(troupe, "hook-owner");
  const member = await signup(troupe, "hook-member");
  const admin = await signup(troupe, "hook-admin");
  for (const [who, role] of [
    [member, "member"],
    [admin, "admin"],
  ] as const) {
    const invite = await troupe.request("POST", `/v1/orgs/${owner.orgId}/invitations`, { token: owner.token, body: { email: who.email, role } });
    t.equal((await troupe.request("POST", "/v1/invitations/accept", { token: who.token, body: { token: str(invite.body, "token") } })).status, 200);
  }
  const inOrg = `?organization_id=${owner.orgId}`;
  const owners = await create(troupe, owner.token, receiver, "/owner");
  t.equal(owners.status, 201, "the owner's session creates");
  const ownersId = str(owners.body, "webhook", "id");

  const byMember = await create(troupe, member.token, receiver, "/member", inOrg);
  t.equal(byMember.status, 403, "a member's session does not create");
  t.equal(field(byMember.body, "error", "code"), "forbidden");
  for (const [method, path] of [
    ["GET", `/v1/webhooks${inOrg}`],
    ["GET", `/v1/webhooks/${ownersId}${inOrg}`],
    ["DELETE", `/v1/webhooks/${ownersId}${inOrg}`],
    ["POST", `/v1/webhooks/${ownersId}/test${inOrg}`],
    ["GET", `/v1/webhooks/${ownersId}/deliveries${inOrg}`],
  ] as const) {
    const res = await troupe.request(method, path, { token: member.token });
    t.equal(res.status, 403, `member: ${method} ${path}`);
    t.equal(field(res.body, "error", "code"), "forbidden");
  }
  const still = await troupe.request("GET", `/v1/webhooks/${ownersId}`, { token: owner.token });
  t.equal(field(still.body, "status"), "active", "the owner's webhook survived the member's DELETE");

  t.equal((await create(troupe, admin.token, receiver, "/admin", inOrg)).status, 201, "an admin's session creates");

  const scoped = await troupe.request("POST", `/v1/environments/${owner.developmentEnvId}/api-keys`, { token: owner.token, body: { name: "images only", scopes: ["images"] } });
  const scopedKey = str(scoped.body, "key");
  const byScoped = await create(troupe, scopedKey, receiver, "/scoped");
  t.equal(byScoped.status, 403, "a key limited to images does not create");
  t.equal(field(byScoped.body, "error", "code"), "insufficient_scope");
  t.equal((await troupe.request("GET", "/v1/webhooks", { token: scopedKey })).status, 403, "nor list");
  const allScopes = await troupe.request("POST", `/v1/environments/${owner.developmentEnvId}/api-keys`, {
    token: owner.token,
    body: { name: "every category named", scopes: ["chat", "images", "vision", "audio", "video", "embeddings", "translation", "agents"] },
  });
  t.equal((await create(troupe, str(allScopes.body, "key"), receiver, "/listed")).status, 403, "only the empty scope list counts as unscoped");
  t.equal((await create(troupe, owner.testKey, receiver, "/unscoped")).status, 201, "an unscoped key creates");
});

t.test("a key's webhook receives its environment's events only; a session's the organization's", async (t) => {
  const troupe = await startTestTroupe(env);
  t.teardown(() => troupe.stop());
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  const owner = await signup(troupe, "hook-envs");
  const live = await troupe.request("POST", `/v1/environments/${owner.productionEnvId}/api-keys`, { token: owner.token, body: { name: "prod", live: true } });
  t.equal(live.status, 201, live.text);
  const liveKey = str(live.body, "key");

  const devHook = str((await create(troupe, owner.testKey, receiver, "/dev")).body, "webhook", "id");
  await create(troupe, owner.token, receiver, "/org");
  const prodHook = str((await create(troupe, liveKey, receiver, "/prod")).body, "webhook", "id");

  // Each key lists (and reaches) only its environment's webhooks; the session all of them.
  const devList = await troupe.request("GET", "/v1/webhooks", { token: owner.testKey });
  t.same((field(devList.body, "data") as { id: string }[]).map((w) => w.id), [devHook]);
  t.equal((await troupe.request("GET", `/v1/webhooks/${prodHook}`, { token: owner.testKey })).status, 404, "a production webhook is 404 for a development key");
  t.equal((await troupe.request("DELETE", `/v1/webhooks/${prodHook}`, { token: owner.testKey })).status, 404);
  t.equal((field((await troupe.request("GET", "/v1/webhooks", { token: owner.token })).body, "data") as unknown[]).length, 3);

  const job = await startJob(troupe.request, liveKey, { prompt: "secret launch teaser", duration_seconds: 1, model: "simulated-video", routing_strategy: "manual" });
  t.equal((await watchJob(troupe.request, liveKey, job)).job.status, "completed");
  await waitFor(async () => receiver.received.filter((d) => d.type === "job.completed").length >= 2, 20_000, "the production job's event");
  await new Promise((resolve) => setTimeout(resolve, 500));
  const paths = receiver.received.filter((d) => d.type === "job.completed").map((d) => d.path);
  t.same(paths.sort(), ["/hook/org", "/hook/prod"], "the session's and the production key's webhooks, not the development key's");
  t.ok(receiver.received.every((d) => d.verified), "signed with each webhook's own secret");
});

t.test("secrets are sealed at rest, and plaintext ones from before are still read, then sealed", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "troupe-sealed-"));
  let troupe = await startTestTroupe({ ...env, TROUPE_DATA_DIR: dataDir });
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  const owner = await signup(troupe, "hook-sealed");
  const res = await create(troupe, owner.testKey, receiver, "/sealed");
  const id = str(res.body, "webhook", "id");
  const secret = str(res.body, "secret");
  const sent = await troupe.request("POST", `/v1/webhooks/${id}/test`, { token: owner.testKey });
  t.match(sent.body, { status: "succeeded" }, "it signs with the secret it returned");
  t.ok(receiver.received[0]?.verified);
  await troupe.stop();

  const key = statSync(join(dataDir, keyFileName));
  t.equal(key.mode & 0o777, 0o600, "the generated key file is private to its owner");
  const holding = everyFile(dataDir).filter((f) => f.text.includes(secret.slice("whsec_".length)));
  t.same(holding.map((f) => f.path), [], "no stored byte holds the secret");

  // As a webhook stored before encryption: its secret in the clear in the actor state.
  const store = new ActorStore(dataDir);
  const state = store.readState(WEBHOOK_ACTOR, id) as { webhook: { secret: string } };
  t.match(state.webhook.secret, /^v1\./, "the state holds the sealed form");
  state.webhook.secret = secret;
  await store.writeState(WEBHOOK_ACTOR, id, JSON.stringify(state));
  await store.close();
  t.equal(everyFile(dataDir).some((f) => f.text.includes(secret.slice("whsec_".length))), true, "the legacy state holds it in the clear");

  troupe = await startTestTroupe({ ...env, TROUPE_DATA_DIR: dataDir });
  const again = await troupe.request("POST", `/v1/webhooks/${id}/test`, { token: owner.testKey });
  t.match(again.body, { status: "succeeded" }, "a plaintext secret still signs");
  t.ok(receiver.received[1]?.verified, "verified with the original secret");
  await troupe.stop();
  const reopened = new ActorStore(dataDir);
  const migrated = reopened.readState(WEBHOOK_ACTOR, id) as { webhook: { secret: string } };
  await reopened.close();
  t.match(migrated.webhook.secret, /^v1\./, "that turn sealed it");
});
