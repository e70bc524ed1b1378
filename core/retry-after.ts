// Retry-After (RFC 9110 §10.2.3), read one way for every caller: the router
// waiting out an upstream's 429/503, the webhook outbox postponing a
// delivery. The value is delay-seconds or an HTTP-date; a date is read
// against the caller's clock (`nowMs`, injected, never read here), and one
// already past means "now". Only the forms the RFC defines are read:
// Date.parse would also take "1.5" or "2030" as dates, and reads the
// zoneless asctime form in the process's local time zone.

const secondMs = 1000;
const months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

// Whole seconds per the RFC; a fraction is read too, to the millisecond ("0.5": 500 ms), as some upstreams send one.
const delaySeconds = /^\d+(?:\.\d+)?$/;
// Sun, 06 Nov 1994 08:49:37 GMT (IMF-fixdate, the form senders must use)
const imfFixdate = /^(?:mon|tue|wed|thu|fri|sat|sun), (\d{2}) ([a-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) gmt$/i;
// Sunday, 06-Nov-94 08:49:37 GMT (obsolete RFC 850 form, which recipients must still read)
const rfc850Date = /^(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday), (\d{2})-([a-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) gmt$/i;
// Sun Nov  6 08:49:37 1994 (obsolete asctime form: no zone, and it is GMT)
const asctimeDate = /^(?:mon|tue|wed|thu|fri|sat|sun) ([a-z]{3}) ( \d|\d{2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/i;

/** Ms from `nowMs` until the retry Retry-After asks for; undefined when absent or unreadable. */
export function parseRetryAfterMs(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (delaySeconds.test(text)) return Math.round(Number(text) * secondMs);
  const at = httpDateMs(text, nowMs);
  return at === undefined ? undefined : Math.max(0, at - nowMs);
}

/** An HTTP-date in ms since the epoch; undefined when `text` is none of its three forms or names no real time. */
function httpDateMs(text: string, nowMs: number): number | undefined {
  let m = imfFixdate.exec(text);
  if (m) return utcMs(Number(m[3]), m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
  m = rfc850Date.exec(text);
  if (m) return utcMs(fullYear(Number(m[3]), nowMs), m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
  m = asctimeDate.exec(text);
  if (m) return utcMs(Number(m[6]), m[1]!, Number(m[2]!.trim()), m[3]!, m[4]!, m[5]!);
  return undefined;
}

/** RFC 9110 §5.6.7: a two-digit year more than 50 years ahead of now is the latest past year ending in those digits. */
function fullYear(twoDigits: number, nowMs: number): number {
  const thisYear = new Date(nowMs).getUTCFullYear();
  const year = thisYear - (thisYear % 100) + twoDigits;
  return year > thisYear + 50 ? year - 100 : year;
}

function utcMs(year: number, monthName: string, day: number, hours: string, minutes: string, seconds: string): number | undefined {
  const month = months.indexOf(monthName.toLowerCase());
  const [h, min, s] = [Number(hours), Number(minutes), Number(seconds)];
  // 60: a leap second, read as the last second of its minute.
  if (month < 0 || h > 23 || min > 59 || s > 60) return undefined;
  const ms = Date.UTC(year, month, day, h, min, Math.min(s, 59));
  const date = new Date(ms);
  // 31 Feb and the like roll into the next month: not a date.
  return date.getUTCMonth() === month && date.getUTCDate() === day ? ms : undefined;
}
