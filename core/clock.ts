// Time is injected so tests control it.
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}
