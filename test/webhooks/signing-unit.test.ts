// Webhook secrets and signatures (actors/webhooks/signing.ts), in process.
// What it proves:
// - a new secret is `whsec_` + base64 of 24 random bytes, a fresh one each call;
// - `webhook-signature` reproduces the Standard Webhooks specification's
//   published test vector, and equals `v1,` + base64 HMAC-SHA256 of
//   `{id}.{timestamp}.{body}` keyed with the bytes after `whsec_`, computed
//   here independently with node:crypto (id, timestamp and body each count);
// - `x-troupe-signature` is the hex HMAC-SHA256 of the body keyed with the
//   whole secret string;
// - signedHeaders gives exactly the four headers, the timestamp being the
//   given clock's time in whole seconds, rounded down (at / one ms under a
//   second boundary).
import { createHmac } from "node:crypto";
import t from "tap";
import { newWebhookSecret, secretPrefix, signedHeaders, standardSignature, troupeSignature } from "../../actors/webhooks/signing.ts";

/** The Standard Webhooks specification's test vector. */
const vector = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};

/** The clock the attempt is signed at (ms): 2026-12-04T18:00:00.000Z. */
const nowMs = 1_796_407_200_000;

const hmac = (key: string | Buffer, text: string, encoding: "hex" | "base64") => createHmac("sha256", key).update(text).digest(encoding);

t.test("a new secret is whsec_ + base64 of 24 random bytes, different each time", async (t) => {
  t.equal(secretPrefix, "whsec_");
  const secrets = [newWebhookSecret(), newWebhookSecret(), newWebhookSecret()];
  for (const secret of secrets) {
    t.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/, "the prefix, then 32 base64 characters (24 bytes, no padding)");
    const bytes = Buffer.from(secret.slice("whsec_".length), "base64");
    t.equal(bytes.length, 24, "24 bytes");
    t.equal(bytes.toString("base64"), secret.slice("whsec_".length), "exactly their base64");
  }
  t.equal(new Set(secrets).size, 3, "three calls, three secrets");
});

t.test("webhook-signature reproduces the Standard Webhooks test vector", async (t) => {
  t.equal(standardSignature(vector.secret, vector.id, vector.timestamp, vector.body), vector.signature);
});

t.test("webhook-signature is v1, + base64 HMAC-SHA256 of id.timestamp.body keyed with the secret's decoded bytes", async (t) => {
  const secret = "whsec_" + Buffer.from("a 24 byte webhook secret").toString("base64");
  const key = Buffer.from("a 24 byte webhook secret");
  const body = '{"id":"evt_1","type":"webhook.test"}';
  const signature = standardSignature(secret, "evt_1", 1_796_407_200, body);
  t.equal(signature, "v1," + hmac(key, `evt_1.1796407200.${body}`, "base64"), "the independently computed HMAC");
  t.not(signature, "v1," + hmac(secret, `evt_1.1796407200.${body}`, "base64"), "not keyed with the secret string");
  t.not(signature, "v1," + hmac(Buffer.from(secret, "base64"), `evt_1.1796407200.${body}`, "base64"), "not keyed with the prefix decoded too");
  t.not(standardSignature(secret, "evt_2", 1_796_407_200, body), signature, "the id is signed");
  t.not(standardSignature(secret, "evt_1", 1_796_407_201, body), signature, "the timestamp is signed");
  t.not(standardSignature(secret, "evt_1", 1_796_407_200, body + " "), signature, "the body is signed");
});

t.test("x-troupe-signature is the hex HMAC-SHA256 of the body keyed with the secret string as given", async (t) => {
  const body = '{"id":"evt_1"}';
  const signature = troupeSignature(vector.secret, body);
  t.equal(signature, hmac(vector.secret, body, "hex"));
  t.match(signature, /^[0-9a-f]{64}$/, "64 hex digits");
  t.equal(troupeSignature("key", "The quick brown fox jumps over the lazy dog"), "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8", "the well-known HMAC-SHA256 vector");
  t.not(troupeSignature(vector.secret, body + " "), signature, "the body is signed");
});

t.test("signedHeaders: exactly the four headers, at the clock's time in whole seconds", async (t) => {
  const body = '{"id":"evt_1","type":"webhook.test","data":{}}';
  const headers = signedHeaders(vector.secret, "evt_1", body, nowMs + 999);
  t.strictSame(headers, {
    "x-troupe-signature": hmac(vector.secret, body, "hex"),
    "webhook-id": "evt_1",
    "webhook-timestamp": "1796407200",
    "webhook-signature": "v1," + hmac(Buffer.from(vector.secret.slice(6), "base64"), `evt_1.1796407200.${body}`, "base64"),
  });
  t.equal(signedHeaders(vector.secret, "evt_1", body, nowMs)["webhook-timestamp"], "1796407200", "at the second");
  t.equal(signedHeaders(vector.secret, "evt_1", body, nowMs - 1)["webhook-timestamp"], "1796407199", "one ms before it: the second before");
  t.equal(signedHeaders(vector.secret, "evt_1", body, nowMs + 1000)["webhook-timestamp"], "1796407201", "one second on");
  t.strictSame(
    signedHeaders(vector.secret, vector.id, vector.body, vector.timestamp * 1000 + 500)["webhook-signature"],
    vector.signature,
    "the vector again, signed through the headers at a clock half a second into its timestamp",
  );
});
