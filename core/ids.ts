// Identifiers: UUIDs where the spec asks for them, otherwise prefixed ULIDs
// (`key_…`, `org_…`) which sort by creation time (lists are newest first). ULIDs are
// monotonic within a process: two made in the same millisecond still sort
// in creation order, so "newest first" lists are stable.
import { randomBytes, randomUUID } from "node:crypto";

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
let lastTime = -1;
let lastRandom: number[] = [];

function freshRandom(): number[] {
  const bytes = randomBytes(16);
  return Array.from(bytes, (b) => b % 32);
}

/** Adds one to the 80-bit random part, base 32, carrying left. */
function increment(digits: number[]): number[] {
  const next = [...digits];
  for (let i = next.length - 1; i >= 0; i--) {
    const d = (next[i] ?? 0) + 1;
    if (d < 32) {
      next[i] = d;
      return next;
    }
    next[i] = 0;
  }
  return freshRandom();
}

export function ulid(nowMs: number = Date.now()): string {
  if (nowMs === lastTime) lastRandom = increment(lastRandom);
  else {
    lastTime = nowMs;
    lastRandom = freshRandom();
  }
  let time = "";
  let t = nowMs;
  for (let i = 0; i < 10; i++) {
    time = crockford[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return time + lastRandom.map((d) => crockford[d]).join("");
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
