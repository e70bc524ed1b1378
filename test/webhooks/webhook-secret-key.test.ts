// The key webhook secrets are sealed with (WEBHOOK_SECRET_KEY): parsed once
// in core/config.ts (required with TROUPE_MODE=dapr, 32 bytes as base64 or
// hex), generated once into a 0600 file of the data directory when unset in
// embedded mode; AES-256-GCM sealing that refuses a tampered value and reads
// a legacy plaintext secret; and, over HTTP, a webhook whose secret was
// sealed under another key is disabled with the reason instead of failing
// every turn.
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { loadConfig } from "../../gateway/config.ts";
import { createSecretBox, keyFileName, webhookSecretKey } from "../../actors/webhooks/secret-box.ts";
import { startWebhookReceiver } from "../fakes/webhook-receiver.ts";
import { waitFor } from "../support/net.ts";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";

t.test("config: required in distributed mode, 32 bytes as base64 or hex", async (t) => {
  t.throws(() => loadConfig({ TROUPE_MODE: "dapr" }), /WEBHOOK_SECRET_KEY is required/);
  const base64 = randomBytes(32).toString("base64");
  t.equal(loadConfig({ TROUPE_MODE: "dapr", WEBHOOK_SECRET_KEY: base64 }).webhooks.secretKey, base64);
  t.ok(loadConfig({ WEBHOOK_SECRET_KEY: randomBytes(32).toString("hex") }), "hex");
  t.equal(loadConfig({}).webhooks.secretKey, undefined, "optional when embedded");
  for (const bad of ["short", randomBytes(16).toString("base64"), randomBytes(33).toString("hex")]) {
    t.throws(() => loadConfig({ WEBHOOK_SECRET_KEY: bad }), /WEBHOOK_SECRET_KEY/, `refused: ${bad.length} characters`);
  }
});

t.test("sealing: AES-256-GCM, a fresh nonce each time, tampering refused, plaintext read as is", async (t) => {
  const box = createSecretBox(randomBytes(32));
  const secret = "whsec_" + randomBytes(24).toString("base64");
  const a = box.seal(secret);
  const b = box.seal(secret);
  t.not(a, b, "two seals of one secret differ");
  t.notOk(a.includes(secret.slice(6)), "the sealed form does not contain it");
  t.equal(box.open(a), secret);
  t.ok(box.isSealed(a));
  const [version, iv, tag, body] = a.split(".");
  const flipped = Buffer.from(body!, "base64");
  flipped[0] = flipped[0]! ^ 1;
  t.throws(() => box.open([version, iv, tag, flipped.toString("base64")].join(".")), "a tampered value does not open");
  t.throws(() => createSecretBox(randomBytes(32)).open(a), "nor under another key");
  t.equal(box.open(secret), secret, "a plaintext secret from before is read as is");
  t.notOk(box.isSealed(secret));
});

t.test("embedded without a key: generated once into a 0600 file", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-key-"));
  const first = webhookSecretKey(undefined, dir);
  t.equal(first.length, 32);
  t.equal(statSync(join(dir, keyFileName)).mode & 0o777, 0o600);
  t.same(webhookSecretKey(undefined, dir), first, "the next start reads the same key");
  const configured = randomBytes(32);
  t.same(webhookSecretKey(configured.toString("base64"), dir), configured, "a configured key wins");
  const elsewhere = mkdtempSync(join(tmpdir(), "troupe-key-"));
  webhookSecretKey(configured.toString("hex"), elsewhere);
  t.notOk(existsSync(join(elsewhere, keyFileName)), "no file when the key is configured");
});

t.test("a webhook sealed under another key is disabled with the reason", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "troupe-rekey-"));
  const env = { OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost", WEBHOOK_TIMEOUT_MS: "2000", TROUPE_DATA_DIR: dataDir };
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  let troupe = await startTestTroupe({ ...env, WEBHOOK_SECRET_KEY: randomBytes(32).toString("base64") });
  const user = await signup(troupe, "rekey");
  const created = await troupe.request("POST", "/v1/webhooks", { token: user.testKey, body: { url: receiver.url, events: ["job.completed"] } });
  const id = str(created.body, "webhook", "id");
  receiver.secret = str(created.body, "secret");
  t.match((await troupe.request("POST", `/v1/webhooks/${id}/test`, { token: user.testKey })).body, { status: "succeeded" });
  await troupe.stop();

  troupe = await startTestTroupe({ ...env, WEBHOOK_SECRET_KEY: randomBytes(32).toString("base64") });
  t.teardown(() => troupe.stop());
  const sent = await troupe.request("POST", `/v1/webhooks/${id}/test`, { token: user.testKey });
  t.equal(sent.status, 200);
  t.match(sent.body, { status: "failed", error: /disabled/ }, "the attempt ends, unsent");
  await waitFor(async () => field((await troupe.request("GET", `/v1/webhooks/${id}`, { token: user.testKey })).body, "status") === "disabled", 5000, "disabled");
  const got = await troupe.request("GET", `/v1/webhooks/${id}`, { token: user.testKey });
  t.match(field(got.body, "disabled_reason"), /WEBHOOK_SECRET_KEY/);
  t.equal(receiver.received.length, 1, "nothing was sent under the new key");
});
