// Identifiers: UUIDs where the spec asks for them, otherwise prefixed ULIDs
// (`key_…`, `org_…`) which sort by creation time (docs/decisions.md, Ids).
// ULIDs come from the `ulid` package's monotonic factory: two made in the
// same millisecond still sort in creation order, so "newest first" lists
// are stable; and a time earlier than the last one's (an injected clock
// going back) keeps the last time and increments, so ids never sort before
// one made earlier in this process.
import { randomBytes, randomUUID } from "node:crypto";
import { monotonicFactory } from "ulid";

const monotonicUlid = monotonicFactory();

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
