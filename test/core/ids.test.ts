// Ids (core/ids.ts): ULIDs from the `ulid` package, monotonic in one
// process, in Crockford base32 with the time first; prefixed ids; UUIDs.
import t from "tap";
import { decodeTime, isValid } from "ulid";
import { pooledRandomFraction, prefixedId, secretToken, ulid, uuid } from "../../core/ids.ts";

const ulidFormat = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

t.test("a ULID is 26 Crockford base32 characters whose first ten are the time", async (t) => {
  const at = Date.UTC(2026, 10, 25, 12, 0, 0);
  const id = ulid(at);
  t.match(id, ulidFormat);
  t.ok(isValid(id));
  t.equal(decodeTime(id), at, "the time part decodes to the time given");
});

t.test("ULIDs made in the same millisecond sort in creation order", async (t) => {
  const at = Date.UTC(2026, 10, 25, 12, 0, 1);
  const ids = Array.from({ length: 1000 }, () => ulid(at));
  t.same([...ids].sort(), ids, "sorted as made");
  t.equal(new Set(ids).size, ids.length, "all different");
  t.ok(ids.every((id) => decodeTime(id) === at), "all carry the same time");
});

t.test("a clock that goes back never makes an id that sorts before an earlier one", async (t) => {
  const later = ulid(Date.UTC(2026, 10, 25, 12, 0, 5));
  const earlier = ulid(Date.UTC(2026, 10, 25, 12, 0, 4));
  t.ok(earlier > later, `${earlier} sorts after ${later}`);
});

t.test("ids across milliseconds sort by time", async (t) => {
  const a = ulid(Date.UTC(2026, 10, 25, 13, 0, 0));
  const b = ulid(Date.UTC(2026, 10, 25, 13, 0, 0) + 1);
  t.ok(a < b);
});

t.test("prefixed ids, UUIDs and secret tokens", async (t) => {
  t.match(prefixedId("key"), /^key_[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
  t.match(secretToken(), /^[A-Za-z0-9_-]{43}$/, "256 bits in base64url");
  t.match(secretToken(128), /^[A-Za-z0-9_-]{22}$/);
});

const uuidV7Format = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

t.test("a UUID is version 7: the time in milliseconds first, so UUIDs sort by the time they were made", async (t) => {
  const at = Date.UTC(2026, 10, 27, 21, 40, 0, 123);
  const id = uuid(at);
  t.match(id, uuidV7Format);
  t.equal(Number.parseInt(id.replaceAll("-", "").slice(0, 12), 16), at, "the first 48 bits are the time given");
  t.match(uuid(0), /^00000000-0000-7/, "the epoch");
  t.match(uuid(2 ** 48 - 1), /^ffffffff-ffff-7/, "the last millisecond 48 bits hold");
  const times = Array.from({ length: 500 }, (_, i) => at + i * 7919);
  const ids = times.map((time) => uuid(time));
  t.same([...ids].sort(), ids, "ids of later milliseconds sort later");
  t.ok(ids.every((made) => uuidV7Format.test(made)));
});

t.test("UUIDs of one millisecond differ in their 74 random bits", async (t) => {
  const at = Date.UTC(2026, 10, 27, 21, 40, 1);
  const ids = Array.from({ length: 2000 }, () => uuid(at));
  t.equal(new Set(ids).size, ids.length, "all different");
  t.equal(new Set(ids.map((id) => id.slice(0, 13))).size, 1, "one time part");
  // Every hex digit of the random part occurs, at about 1/16 each (variant nibble aside).
  const counts = new Map<string, number>();
  for (const id of ids) for (const digit of id.slice(24)) counts.set(digit, (counts.get(digit) ?? 0) + 1);
  t.equal(counts.size, 16);
  t.ok([...counts.values()].every((n) => n > 1200 && n < 1800), `each digit 1,200-1,800 times of 1,500: ${[...counts.values()].join(", ")}`);
});

t.test("ids made in different milliseconds differ in their random part, whose characters are spread evenly", async (t) => {
  // Later than any id made before in this process (earlier tests use the real clock), so each is a fresh draw, not an increment.
  const start = Date.UTC(2099, 0, 1);
  // 600 ids x 16 characters: more bytes than one 4 KiB pool holds, so the pool is refilled on the way.
  const randomParts = Array.from({ length: 600 }, (_, i) => ulid(start + i * 1000).slice(10));
  t.equal(new Set(randomParts).size, randomParts.length, "no random part repeats");
  const counts = new Map<string, number>();
  for (const char of randomParts.join("")) counts.set(char, (counts.get(char) ?? 0) + 1);
  t.equal(counts.size, 32, "every base32 character occurs");
  // 9,600 characters over 32: 300 each expected; a draw outside 200-400 is astronomically unlikely for a uniform source.
  t.ok([...counts.values()].every((n) => n > 200 && n < 400), `each character 200-400 times: ${[...counts.values()].join(", ")}`);
});

t.test("the pooled fractions are bytes over 256: in [0, 1), on a 1/256 grid", async (t) => {
  const fractions = Array.from({ length: 5000 }, () => pooledRandomFraction());
  t.ok(fractions.every((f) => f >= 0 && f < 1 && Number.isInteger(f * 256)));
  t.ok(new Set(fractions).size > 200, "nearly all 256 values occur");
});
