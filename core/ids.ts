// Identifiers: UUIDs where the spec asks for them, otherwise prefixed ULIDs
// (`key_…`, `org_…`) which sort by creation time (docs/decisions.md, Ids).
// The UUIDs are version 7 (RFC 9562): they sort by creation time too, which
// makes a new conversation's storage keys cheap to insert (uuid()).
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
import { createHash, randomBytes, randomFillSync } from "node:crypto";
import { monotonicFactory } from "ulid";

const randomPool = new Uint8Array(4096);
let randomPoolAt = randomPool.length;

function pooledRandomByte(): number {
  if (randomPoolAt === randomPool.length) {
    randomFillSync(randomPool);
    randomPoolAt = 0;
  }
  return randomPool[randomPoolAt++] ?? 0;
}

/** A uniform fraction in [0, 1) from the next pooled CSPRNG byte (ulid's PRNG: it takes ⌊fraction × 32⌋). */
export function pooledRandomFraction(): number {
  return pooledRandomByte() / 256;
}

const monotonicUlid = monotonicFactory(pooledRandomFraction);

export function ulid(nowMs: number = Date.now()): string {
  return monotonicUlid(nowMs);
}

export function prefixedId(prefix: string, nowMs?: number): string {
  return `${prefix}_${ulid(nowMs)}`;
}

const hexByte = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

/**
 * A version 7 UUID: the Unix time in milliseconds in its first 48 bits, then
 * the version, 74 random bits and the variant. Conversation, job and vector
 * record ids are storage keys as well (lmdb B-trees embedded): time-ordered
 * keys go in at the right edge of a tree, where random (version 4) keys
 * each copied and rewrote a random page. Measured with bench/agents.ts
 * --scale: 150,000 conversations created 45 % faster, at two thirds of the
 * CPU each (docs/benchmarks.md). Ids are not secrets: every read is checked
 * against the caller's organization and environment.
 */
export function uuid(nowMs: number = Date.now()): string {
  const timeByte = (shift: number) => hexByte[Math.floor(nowMs / 2 ** shift) % 256];
  let id = timeByte(40)! + timeByte(32) + timeByte(24) + timeByte(16) + "-" + timeByte(8) + timeByte(0);
  id += "-" + hexByte[0x70 | (pooledRandomByte() & 0x0f)] + hexByte[pooledRandomByte()];
  id += "-" + hexByte[0x80 | (pooledRandomByte() & 0x3f)] + hexByte[pooledRandomByte()] + "-";
  for (let i = 0; i < 6; i++) id += hexByte[pooledRandomByte()];
  return id;
}

/**
 * The same UUID-shaped id for the same name, for what a retry must find again
 * rather than make twice (a job's webhook event, an agent's memory): the
 * name's SHA-256 cut to 128 bits, marked version 5 and RFC 9562 variant
 * (so 122 of them are the hash's).
 */
export function nameUuid(name: string): string {
  const h = createHash("sha256").update(name).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h.slice(16, 18), 16) & 0x3f) | 0x80).toString(16)}${h.slice(18, 20)}-${h.slice(20, 32)}`;
}

/** An unguessable token: `bits` random bits in base64url. */
export function secretToken(bits = 256): string {
  return randomBytes(bits / 8).toString("base64url");
}
