// When a failed delivery is tried again (docs/api/webhooks.md; close to
// Standard Webhooks): immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
// 14 h, 20 h and 24 h after each failure — ten attempts over ~3 days. A
// `Retry-After` longer than the scheduled wait postpones the attempt (capped
// at 24 h). WEBHOOK_RETRY_SCALE multiplies every scheduled wait, so tests and
// benchmarks run the whole schedule in seconds without editing code.

const second = 1000;
const minute = 60 * second;
const hour = 60 * minute;

/** Wait before attempt n+2, after attempt n+1 failed. */
export const retryDelaysMs: readonly number[] = [5 * second, 5 * minute, 30 * minute, 2 * hour, 5 * hour, 10 * hour, 14 * hour, 20 * hour, 24 * hour];

/** Attempts per event, the first included. */
export const maxAttempts = retryDelaysMs.length + 1;

export const retryAfterCapMs = 24 * hour;

/** Ms until the next attempt after `attemptsMade` failed ones, or undefined when the schedule is exhausted. */
export function nextDelayMs(attemptsMade: number, scale: number, retryAfterMs: number | undefined): number | undefined {
  const scheduled = retryDelaysMs[attemptsMade - 1];
  if (scheduled === undefined) return undefined;
  const wait = Math.round(scheduled * scale);
  return retryAfterMs === undefined ? wait : Math.max(wait, Math.min(retryAfterMs, retryAfterCapMs));
}
