// Identifiers: UUIDs where the spec asks for them, otherwise prefixed ULIDs
// (`key_…`, `org_…`) which sort by creation time (DESIGN.md §4).
import { randomBytes, randomUUID } from "node:crypto";

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

export function ulid(nowMs: number = Date.now()): string {
  let time = "";
  let t = nowMs;
  for (let i = 0; i < 10; i++) {
    time = crockford[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(16);
  let random = "";
  for (let i = 0; i < 16; i++) random += crockford[(bytes[i] ?? 0) % 32];
  return time + random;
}

export function prefixedId(prefix: string, nowMs?: number): string {
  return `${prefix}_${ulid(nowMs)}`;
}

export function uuid(): string {
  return randomUUID();
}

/** An unguessable token: `bits` random bits in base64url. */
export function secretToken(bits = 256): string {
  return randomBytes(bits / 8).toString("base64url");
}
