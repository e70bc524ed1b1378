// What one ledger append adds up before it writes (tenancy/embedded-ledger-store.ts):
// each counter changes once per append, however many records it holds.

/** What one append adds to one aggregate row or one key's/environment's usage to date. */
export interface Counts {
  c: number;
  i: number;
  o: number;
  u: number;
  n: number;
  /** Prompt-cache input tokens read (r) and written (w): parts of i. */
  r: number;
  w: number;
  last: string;
}

export function countsOf(map: Map<string, Counts>, key: string): Counts {
  let counts = map.get(key);
  if (!counts) {
    counts = { c: 0, i: 0, o: 0, u: 0, n: 0, r: 0, w: 0, last: "" };
    map.set(key, counts);
  }
  return counts;
}
