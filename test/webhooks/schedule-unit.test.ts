// The retry schedule (actors/webhooks/schedule.ts) against docs/api/webhooks.md,
// as plain numbers: the nine waits (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h,
// 20 h, 24 h), ten attempts, the 24 h cap on Retry-After; nextDelayMs for
// every attempt count from 0 (none made: no wait in the schedule) to 10
// (exhausted), WEBHOOK_RETRY_SCALE applied and rounded to the nearest ms
// (half up), and a Retry-After taken only when longer than the scheduled
// wait, capped at 24 h, each boundary one ms either side.
import t from "tap";
import { documentedDelaysMs, hour } from "../support/documented-webhook-schedule.ts";
import { maxAttempts, nextDelayMs, retryAfterCapMs, retryDelaysMs } from "../../actors/webhooks/schedule.ts";

const documented = documentedDelaysMs;

t.test("the constants: the documented nine waits, ten attempts, Retry-After capped at 24 h", async (t) => {
  t.strictSame(retryDelaysMs, [5000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 86_400_000]);
  t.strictSame(retryDelaysMs, documented);
  t.equal(maxAttempts, 10);
  t.equal(retryAfterCapMs, 86_400_000);
});

t.test("nextDelayMs: after n failed attempts the nth wait; none before the first attempt or after the tenth", async (t) => {
  t.equal(nextDelayMs(0, 1, undefined), undefined, "no attempt made: nothing in the schedule");
  for (let n = 1; n <= 9; n++) t.equal(nextDelayMs(n, 1, undefined), documented[n - 1], `after attempt ${n}`);
  t.equal(nextDelayMs(10, 1, undefined), undefined, "the tenth failed: exhausted");
  t.equal(nextDelayMs(11, 1, undefined), undefined);
  t.equal(nextDelayMs(10, 1, 1000), undefined, "a Retry-After does not extend the schedule");
});

t.test("the scale multiplies each wait, rounded to the nearest ms, half up", async (t) => {
  t.equal(nextDelayMs(1, 0.001, undefined), 5);
  t.equal(nextDelayMs(2, 2, undefined), 600_000);
  t.equal(nextDelayMs(1, 0.0001, undefined), 1, "0.5 ms: up to 1");
  t.equal(nextDelayMs(1, 0.00028, undefined), 1, "1.4 ms: down to 1");
  t.equal(nextDelayMs(1, 0.00032, undefined), 2, "1.6 ms: up to 2");
  t.equal(nextDelayMs(1, 0, undefined), 0, "scale 0: at once");
});

t.test("a Retry-After longer than the wait postpones the attempt, up to 24 h; a shorter one is ignored", async (t) => {
  t.equal(nextDelayMs(1, 1, 4999), 5000, "shorter: the scheduled wait");
  t.equal(nextDelayMs(1, 1, 5000), 5000);
  t.equal(nextDelayMs(1, 1, 5001), 5001, "longer: the receiver's");
  t.equal(nextDelayMs(1, 1, 0), 5000);
  t.equal(nextDelayMs(1, 1, retryAfterCapMs - 1), retryAfterCapMs - 1);
  t.equal(nextDelayMs(1, 1, retryAfterCapMs), retryAfterCapMs);
  t.equal(nextDelayMs(1, 1, retryAfterCapMs + 1), retryAfterCapMs, "capped at 24 h");
  t.equal(nextDelayMs(1, 1, 7 * 24 * hour), retryAfterCapMs);
  t.equal(nextDelayMs(9, 2, 30 * hour), 48 * hour, "the cap bounds the Retry-After, not a scaled wait");
  t.equal(nextDelayMs(2, 0.001, 1000), 1000, "compared with the scaled wait");
});
