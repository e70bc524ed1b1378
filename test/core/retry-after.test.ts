// core/retry-after.ts, the one Retry-After parser: delay-seconds, and the
// three HTTP-date forms read against the caller's clock (never the wall
// clock: `now` here is years away from it); whatever else is unreadable.
import t from "tap";
import { parseRetryAfterMs } from "../../core/retry-after.ts";

const now = Date.parse("2041-03-10T12:00:00Z");

t.test("delay-seconds: whole seconds, a fraction to the nearest millisecond, spaces around ignored", async (t) => {
  t.equal(parseRetryAfterMs("120", now), 120_000);
  t.equal(parseRetryAfterMs("0", now), 0);
  t.equal(parseRetryAfterMs(" 7 ", now), 7_000);
  t.equal(parseRetryAfterMs("0.5", now), 500);
  t.equal(parseRetryAfterMs("1.1", now), 1_100);
  t.equal(parseRetryAfterMs("1.0004", now), 1_000);
});

t.test("an HTTP date is the time from the caller's now until it; a past one is now", async (t) => {
  t.equal(parseRetryAfterMs("Sun, 10 Mar 2041 12:00:30 GMT", now), 30_000, "IMF-fixdate");
  t.equal(parseRetryAfterMs(new Date(now + 90_000).toUTCString(), now), 90_000, "what Date#toUTCString writes");
  t.equal(parseRetryAfterMs("Sun, 10 Mar 2041 12:00:30 GMT", now + 10_000), 20_000, "read at a later now: less to wait");
  t.equal(parseRetryAfterMs("Sun, 10 Mar 2041 11:59:00 GMT", now), 0, "already past");
  t.equal(parseRetryAfterMs("sun, 10 mar 2041 12:00:30 gmt", now), 30_000, "names in any case");
});

t.test("the obsolete date forms recipients must still read", async (t) => {
  t.equal(parseRetryAfterMs("Sunday, 10-Mar-41 12:01:00 GMT", now), 60_000, "RFC 850, its two-digit year in this century");
  t.equal(parseRetryAfterMs("Sunday, 10-Mar-99 12:01:00 GMT", now), 0, "RFC 850: 58 years ahead is 1999, in the past");
  t.equal(parseRetryAfterMs("Sun Mar 10 12:00:05 2041", now), 5_000, "asctime, read as GMT whatever the process's time zone");
  t.equal(parseRetryAfterMs("Sun Mar  3 12:00:05 2041", now - 7 * 86_400_000), 5_000, "asctime with a one-digit day");
});

t.test("anything else is unreadable, never a guess", async (t) => {
  for (const value of [undefined, "", "  ", "soon", "-1", "1e3", "0x10", "1.", ".5", "Infinity", "1.5.2"]) {
    t.equal(parseRetryAfterMs(value, now), undefined, JSON.stringify(value));
  }
  for (const value of ["Thu, 31 Feb 2041 12:00:00 GMT", "Sun, 10 Mar 2041 24:00:00 GMT", "Sun, 10 Foo 2041 12:00:00 GMT", "Sun, 10 Mar 2041 12:00:30 UTC", "2041-03-10T12:00:30Z", "10 Mar 2041 12:00:30 GMT"]) {
    t.equal(parseRetryAfterMs(value, now), undefined, `not an HTTP date: ${value}`);
  }
});
