// Verifying a webhook delivery on the receiving side. Every attempt carries
// two signatures over the raw body, both keyed with the webhook's secret
// (`whsec_<base64>`, returned once at creation):
// - `X-Troupe-Signature`: hex HMAC-SHA256 of the body, keyed with the secret
//   string exactly as returned;
// - Standard Webhooks: `webhook-signature: v1,<base64 HMAC-SHA256 of
//   "{webhook-id}.{webhook-timestamp}.{body}">` keyed with the bytes the
//   base64 after `whsec_` decodes to; the timestamp bounds replays.
// Comparisons are constant-time. Verify the raw bytes received, before any
// JSON parsing re-serializes them.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { WebhookEvent } from "./types.ts";

const secretPrefix = "whsec_";

/** Default tolerance between `webhook-timestamp` and now, as Standard Webhooks' own libraries use. */
export const defaultToleranceSeconds = 300;

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** Accepted distance between the delivery's timestamp and now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** The current time in ms (tests). */
  now?: number;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === wanted) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

function bytes(body: string | Uint8Array): Buffer {
  return typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** `X-Troupe-Signature`: true when `signature` is the hex HMAC-SHA256 of the body under the secret. */
export function verifyTroupeSignature(secret: string, body: string | Uint8Array, signature: string | undefined): boolean {
  if (!signature) return false;
  const expected = createHmac("sha256", secret).update(bytes(body)).digest("hex");
  return sameBytes(Buffer.from(expected), Buffer.from(signature.trim().toLowerCase()));
}

/** Standard Webhooks: throws unless one `v1,` signature matches and the timestamp is within the tolerance. */
export function verifyStandardSignature(secret: string, body: string | Uint8Array, headers: WebhookHeaders, options: VerifyOptions = {}): void {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature");
  const seconds = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || !Number.isSafeInteger(seconds)) throw new WebhookVerificationError("webhook-timestamp is not a number of seconds");
  const tolerance = options.toleranceSeconds ?? defaultToleranceSeconds;
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  if (Math.abs(now - seconds) > tolerance) throw new WebhookVerificationError(`webhook-timestamp is more than ${tolerance} s from now`);
  const key = Buffer.from(secret.startsWith(secretPrefix) ? secret.slice(secretPrefix.length) : secret, "base64");
  const expected = createHmac("sha256", key)
    .update(Buffer.concat([Buffer.from(`${id}.${timestamp}.`), bytes(body)]))
    .digest();
  // Several space-separated `v1,<base64>` entries may be sent during a secret rotation.
  for (const entry of signatures.split(" ")) {
    const [version, value] = entry.split(",", 2);
    if (version === "v1" && value && sameBytes(expected, Buffer.from(value, "base64"))) return;
  }
  throw new WebhookVerificationError("no webhook-signature matches");
}

/**
 * Verifies a delivery and returns its event: every signature scheme present
 * must match (X-Troupe-Signature, and the Standard Webhooks headers with
 * their timestamp tolerance), and at least one must be present.
 */
export function verifyWebhook(secret: string, body: string | Uint8Array, headers: WebhookHeaders, options: VerifyOptions = {}): WebhookEvent {
  const troupe = header(headers, "x-troupe-signature");
  const standard = header(headers, "webhook-signature");
  if (troupe === undefined && standard === undefined) throw new WebhookVerificationError("no signature header (X-Troupe-Signature or webhook-signature)");
  if (troupe !== undefined && !verifyTroupeSignature(secret, body, troupe)) throw new WebhookVerificationError("X-Troupe-Signature does not match");
  if (standard !== undefined) verifyStandardSignature(secret, body, headers, options);
  const event: unknown = JSON.parse(bytes(body).toString("utf8"));
  if (typeof event !== "object" || event === null || typeof (event as { id?: unknown }).id !== "string" || typeof (event as { type?: unknown }).type !== "string") {
    throw new WebhookVerificationError("the body is not a webhook event");
  }
  return event as WebhookEvent;
}
