// Time is injected so tests control it.
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

// A turn or a call stamps several things in the same millisecond (messages,
// the conversation, its usage record): the last one's text is kept.
let lastMs = Number.NaN;
let lastText = "";

export function isoTime(ms: number): string {
  // NaN never equals itself, so an invalid time still throws as toISOString does.
  if (ms !== lastMs) {
    lastText = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastText;
}
