// A running clock for tests that read a month (budgets, usage periods) while
// time passes: it reads noon on the 15th of next month (UTC) when made, then
// runs at the real pace, so a test of a few minutes never crosses a month end
// whatever the real date. Ahead of the real clock, never behind: a Redis
// expiry (PEXPIREAT) set from it lies in Redis's future, as it does from the
// real clock.
import type { Clock } from "../../core/clock.ts";

export function midMonthClock(): Clock {
  const startedMs = Date.now();
  const today = new Date(startedMs);
  const midNextMonthMs = Date.UTC(today.getUTCFullYear(), today.getUTCMonth() + 1, 15, 12);
  return { now: () => midNextMonthMs + (Date.now() - startedMs) };
}
