// The data store: one interface for the gateway's records (accounts, keys,
// sessions, but also conversation summaries, usage batches, the file index
// and the actors' directories), with an embedded (lmdb) and a Redis
// implementation in tenancy/ run by one shared test suite. The interface is
// in core/ because layers below tenancy/ keep records in it too (media/'s
// file index and retention sweep).
// It is deliberately small:
// JSON documents by key, unique claims (email, key hash) that make a whole
// batch fail, sorted membership indexes for lists, counters for rate limits
// and a broadcast channel for cache invalidation across replicas. Every
// multi-record change is one atomic batch, so nothing is ever half-written.

export type StoreOp =
  /** Writes a JSON document; with ttlMs it expires (sessions). */
  | { op: "put"; key: string; value: unknown; ttlMs?: number }
  | { op: "delete"; key: string }
  /** Claims a unique name for an id; the whole batch fails if it is taken. */
  | { op: "claim"; key: string; value: string }
  | { op: "release"; key: string }
  /** Adds a member to a sorted index (score = creation time in ms). */
  | { op: "index"; key: string; member: string; score: number }
  | { op: "unindex"; key: string; member: string };

export interface IndexPage {
  members: string[];
  /** Opaque: pass back to get the next (older) page; null at the end. */
  nextCursor: string | null;
}

export class ClaimTakenError extends Error {
  readonly key: string;
  constructor(key: string) {
    super(`unique claim already taken: ${key}`);
    this.name = "ClaimTakenError";
    this.key = key;
  }
}

/** Growing waits between attempts on one key (login throttling). */
export interface BackoffPolicy {
  /** Attempts allowed before the first wait. */
  free: number;
  /** The first wait; each further attempt doubles it… */
  baseMs: number;
  /** …up to this cap, so no key is ever locked for longer. */
  capMs: number;
  /** The count is forgotten this long after the last admitted attempt. */
  forgetMs: number;
}

export interface BackoffAdmission {
  admitted: boolean;
  /** When refused: ms until the next attempt is admitted. */
  retryInMs: number;
  /** Attempts counted on the key, this one included when admitted. */
  attempts: number;
}

/** The wait owed after `attempts` counted attempts. */
export function backoffWaitMs(attempts: number, policy: BackoffPolicy): number {
  if (attempts < policy.free) return 0;
  return Math.min(policy.capMs, policy.baseMs * 2 ** (attempts - policy.free));
}

export interface DataStore {
  readonly kind: "embedded" | "redis";
  get(key: string): Promise<unknown>;
  getMany(keys: string[]): Promise<unknown[]>;
  /** The id a unique claim points at. */
  lookup(claimKey: string): Promise<string | undefined>;
  /** Applies every op or none; throws ClaimTakenError when a claim is taken. Resolves once durable. */
  apply(ops: StoreOp[]): Promise<void>;
  /** Newest first (highest score first). */
  page(indexKey: string, limit: number, cursor?: string | null): Promise<IndexPage>;
  /** Adds `by` (default 1; 0 reads) to a fixed-window counter; returns the count in this window and ms until it resets. */
  hit(counterKey: string, windowMs: number, by?: number): Promise<{ count: number; resetInMs: number }>;
  /** The same, synchronously, for stores that count in process (the embedded one). */
  hitLocal?(counterKey: string, windowMs: number, by?: number): { count: number; resetInMs: number };
  /**
   * Atomically: refuses while the key still owes its wait (backoffWaitMs after
   * its last admitted attempt), otherwise counts one attempt. Counting at
   * admission, before the outcome is known, is what keeps parallel guesses
   * from slipping through together.
   */
  backoffAttempt(key: string, policy: BackoffPolicy, now: number): Promise<BackoffAdmission>;
  /** Takes back one counted attempt (it turned out not to be a guess). */
  backoffRefund(key: string): Promise<void>;
  /** Forgets the key's attempts. */
  backoffClear(key: string): Promise<void>;
  publish(channel: string, message: string): Promise<void>;
  /** Resolves once subscribed: every message published after that reaches `onMessage`. */
  subscribe(channel: string, onMessage: (message: string) => void): Promise<void>;
  /** Ends that handler's subscription; the channel's last handler gone, the process stops receiving it. */
  unsubscribe(channel: string, onMessage: (message: string) => void): Promise<void>;
  close(): Promise<void>;
}

/**
 * Cursor = "<score>.<member as base64url>" of the last item of the previous
 * page. Every string matching `cursorPattern` decodes to a position, so the
 * gateway can document and enforce the format with one pattern: a cursor
 * either has the format (and pages from there) or is a 400, never silently
 * the first page. Scores are integer milliseconds.
 */
export const cursorPattern = /^[0-9]{1,16}\.[A-Za-z0-9_-]{1,400}$/;

export function encodeCursor(score: number, member: string): string {
  return `${Math.max(0, Math.trunc(score))}.${Buffer.from(member).toString("base64url")}`;
}

/**
 * An index page from the members a store read after the cursor, newest
 * first, one past `limit` when it could (that one says more follow): the
 * first `limit`, and the cursor of the last of them.
 */
export function pageOf(found: readonly { score: number; member: string }[], limit: number): IndexPage {
  const items = found.slice(0, limit);
  const last = items[items.length - 1];
  return { members: items.map((m) => m.member), nextCursor: found.length > limit && last ? encodeCursor(last.score, last.member) : null };
}

export function decodeCursor(cursor: string): { score: number; member: string } | undefined {
  if (!cursorPattern.test(cursor)) return undefined;
  const dot = cursor.indexOf(".");
  return { score: Number(cursor.slice(0, dot)), member: Buffer.from(cursor.slice(dot + 1), "base64url").toString("utf8") };
}

/** Every member of an index, newest first as `page` gives them (read in pages of 500). */
export async function indexMembers(store: DataStore, key: string): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await store.page(key, 500, cursor);
    out.push(...page.members);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return out;
}
