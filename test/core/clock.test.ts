// isoTime (core/clock.ts): the text of a millisecond, kept for the next call
// with the same one.
import t from "tap";
import { isoTime } from "../../core/clock.ts";

t.test("each millisecond's own text, repeated or not", async (t) => {
  const at = Date.UTC(2026, 10, 27, 15, 0, 0, 123);
  t.equal(isoTime(at), "2026-11-27T15:00:00.123Z");
  t.equal(isoTime(at), "2026-11-27T15:00:00.123Z", "the same millisecond again");
  t.equal(isoTime(at + 1), "2026-11-27T15:00:00.124Z", "the next one");
  t.equal(isoTime(at), "2026-11-27T15:00:00.123Z", "and back");
});

t.test("an invalid time throws as Date's toISOString does, every time", async (t) => {
  t.throws(() => isoTime(Number.NaN), RangeError);
  t.throws(() => isoTime(Number.NaN), RangeError, "not remembered");
  t.equal(isoTime(0), "1970-01-01T00:00:00.000Z");
});
