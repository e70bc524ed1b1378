// The webhook retry schedule as docs/api/webhooks.md states it, written out
// here rather than imported from actors/webhooks/schedule.ts, so the tests
// check the module against the document.
export const second = 1000;
export const minute = 60 * second;
export const hour = 60 * minute;

/** The nine waits between the ten attempts. */
export const documentedDelaysMs = [5 * second, 5 * minute, 30 * minute, 2 * hour, 5 * hour, 10 * hour, 14 * hour, 20 * hour, 24 * hour];
