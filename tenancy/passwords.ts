// Passwords: scrypt with a per-password random salt (a slow, memory-hard
// hash), compared in constant time. Format: scrypt$N$r$p$salt$hash (base64url).
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from "node:crypto";

/**
 * The longest password, in code points (signup's limit, and login's: no
 * account can have a longer one). scrypt's cost grows with the password's
 * length, so the routes refuse a longer one before anything is hashed.
 */
export const MAX_PASSWORD_CHARS = 1024;

const params = { N: 16384, r: 8, p: 1 } as const; // ~50 ms per hash on these machines
const keyLength = 32;

function scrypt(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCallback(password, salt, keyLength, { ...options, maxmem: 64 * 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, params);
  return ["scrypt", params.N, params.r, params.p, salt.toString("base64url"), hash.toString("base64url")].join("$");
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, "base64url");
  const actual = await scrypt(password, Buffer.from(salt, "base64url"), { N: Number(n), r: Number(r), p: Number(p) });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** Spends the same time as a real check, so unknown emails can't be told apart by timing. */
let dummyHash: Promise<string> | undefined;
export async function verifyAgainstDummy(password: string): Promise<false> {
  dummyHash ??= hashPassword("troupe-timing-equalizer");
  await verifyPassword(password, await dummyHash);
  return false;
}
