// Webhook secrets and signatures (docs/api/webhooks.md#signatures). The
// secret is Standard Webhooks' format, `whsec_<base64 of 24 random bytes>`,
// and serves both signatures:
// - `X-Troupe-Signature`: hex HMAC-SHA256 of the raw body keyed with the
//   secret string exactly as returned (the interface contract's rule);
// - `webhook-signature`: `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`
//   keyed with the base64-decoded bytes after `whsec_` (Standard Webhooks),
//   so off-the-shelf verifiers work.
import { createHmac, randomBytes } from "node:crypto";

export const secretPrefix = "whsec_";

export function newWebhookSecret(): string {
  return secretPrefix + randomBytes(24).toString("base64");
}

export function troupeSignature(secret: string, body: string): string {
  return createHmac("sha256", secret).update(body).digest("hex");
}

export function standardSignature(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice(secretPrefix.length), "base64");
  return "v1," + createHmac("sha256", key).update(`${messageId}.${timestampSeconds}.${body}`).digest("base64");
}

/** Every signature header of one attempt; the timestamp is the attempt's own, the id the event's. */
export function signedHeaders(secret: string, eventId: string, body: string, nowMs: number): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000);
  return {
    "x-troupe-signature": troupeSignature(secret, body),
    "webhook-id": eventId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": standardSignature(secret, eventId, timestamp, body),
  };
}
