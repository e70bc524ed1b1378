// Identifiers: UUIDs where the spec asks for them, otherwise prefixed ULIDs
// (`key_…`, `org_…`) which sort by creation time (docs/decisions.md, Ids).
// ULIDs come from the `ulid` package's monotonic factory: two made in the
// same millisecond still sort in creation order, so "newest first" lists
// are stable; and a time earlier than the last one's (an injected clock
// going back) keeps the last time and increments, so ids never sort before
// one made earlier in this process.
//
// A ULID made in a new millisecond draws 16 random characters. The ulid
// package's default source asks the CSPRNG for one byte per character
// (getRandomValues on a one-byte array, ~3 µs each: ~50 µs an id, measured
// 2026-11-27); the same CSPRNG's bytes drawn from a pool refilled 4 KiB at a
// time cost ~1 µs an id. Each byte is used once.
import { randomBytes, randomFillSync, randomUUID } from "node:crypto";
import { monotonicFactory } from "ulid";

const randomPool = new Uint8Array(4096);
let randomPoolAt = randomPool.length;

/** A uniform fraction in [0, 1) from the next pooled CSPRNG byte (ulid's PRNG: it takes ⌊fraction × 32⌋). */
export function pooledRandomFraction(): number {
  if (randomPoolAt === randomPool.length) {
    randomFillSync(randomPool);
    randomPoolAt = 0;
  }
  return (randomPool[randomPoolAt++] ?? 0) / 256;
}

const monotonicUlid = monotonicFactory(pooledRandomFraction);

export function ulid(nowMs: number = Date.now()): string {
  return monotonicUlid(nowMs);
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
