// Secrets at rest (docs/guides/access-control.md): the WebhookActor keeps a
// webhook's signing secret, and tenancy/provider-credentials.ts an
// organization's own provider keys (docs/operations/byok.md), sealed with
// AES-256-GCM under WEBHOOK_SECRET_KEY, so the stores (lmdb files, Redis)
// never hold them in the clear. In core/ because both tenancy/ and actors/ seal.
// A sealed value is `v1.<base64 iv>.<base64 tag>.<base64 ciphertext>`; a
// value without that form is a secret stored before encryption existed
// (plaintext `whsec_…`): `open` still reads it, and the actor seals it again
// in its next turn (migration on read).
//
// Without WEBHOOK_SECRET_KEY (embedded mode only; distributed mode refuses
// to start without it) the key is generated once and kept in
// `<data dir>/webhook-secret.key` (mode 0600), so a restart still opens what
// was sealed before.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { decodeSecretKey } from "./config.ts";

const version = "v1";
/** 12 bytes: GCM's recommended nonce length. */
const ivBytes = 12;
export const keyFileName = "webhook-secret.key";

export interface SecretBox {
  seal(plaintext: string): string;
  /** The secret, from a sealed value or a legacy plaintext one; throws if sealed under another key. */
  open(stored: string): string;
  isSealed(stored: string): boolean;
}

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error("the webhook secret key must be 32 bytes");
  const isSealed = (stored: string) => stored.startsWith(`${version}.`);
  return {
    isSealed,
    seal(plaintext) {
      const iv = randomBytes(ivBytes);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return [version, iv.toString("base64"), cipher.getAuthTag().toString("base64"), body.toString("base64")].join(".");
    },
    open(stored) {
      if (!isSealed(stored)) return stored;
      const [, iv, tag, body] = stored.split(".");
      if (iv === undefined || tag === undefined || body === undefined) throw new Error("a malformed sealed webhook secret");
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64"));
      decipher.setAuthTag(Buffer.from(tag, "base64"));
      return Buffer.concat([decipher.update(Buffer.from(body, "base64")), decipher.final()]).toString("utf8");
    },
  };
}

/**
 * The configured key, else the data directory's key file (created with a
 * fresh random key, mode 0600, the first time).
 */
export function webhookSecretKey(configured: string | undefined, dataDir: string): Buffer {
  if (configured !== undefined) return decodeSecretKey(configured);
  const path = join(dataDir, keyFileName);
  try {
    return decodeSecretKey(readFileSync(path, "utf8").trim());
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw new Error(`${path}: ${(error as Error).message}`);
  }
  const key = randomBytes(32);
  mkdirSync(dataDir, { recursive: true });
  // wx: two processes starting on one data directory never overwrite each other's key.
  try {
    writeFileSync(path, key.toString("base64") + "\n", { mode: 0o600, flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return decodeSecretKey(readFileSync(path, "utf8").trim());
    throw error;
  }
  return key;
}
