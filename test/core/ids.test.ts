// Ids (core/ids.ts): ULIDs from the `ulid` package, monotonic in one
// process, in Crockford base32 with the time first; prefixed ids; UUIDs.
import t from "tap";
import { decodeTime, isValid } from "ulid";
import { prefixedId, secretToken, ulid, uuid } from "../../core/ids.ts";

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
  t.match(uuid(), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.match(secretToken(), /^[A-Za-z0-9_-]{43}$/, "256 bits in base64url");
  t.match(secretToken(128), /^[A-Za-z0-9_-]{22}$/);
});
