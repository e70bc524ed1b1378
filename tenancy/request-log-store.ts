// The request log's embedded store: its own lmdb file under the data
// directory (<data dir>/request-log), apart from the tenancy records, so a
// busy log never grows or slows the store accounts and keys live in.
//
// Retention works as the ledger's entries do (tenancy/ledger-entry.ts): the
// retention window is cut in G generations, an entry goes into the
// generation of the time its request arrived, and a generation is dropped
// whole (one named lmdb database) once it lies entirely outside the window,
// never entry by entry; reads never show an entry older than the window, so
// what a caller sees expires exactly at the retention. The size is bounded
// too: past `maxEntries` the oldest generations are dropped early, and a
// current generation that alone holds `maxEntries` takes no more until the
// next one begins.
//
// Each generation records its own time span (["spans"]: start ms → [end ms,
// entries]) rather than a number derived from the retention: a restart with
// another retention then still knows which times each generation holds, so
// the old ones expire at the new retention, neither all at once (a shorter
// one read as generation numbers) nor never (a longer one). A new generation
// is clipped to the spans already held, so spans never overlap and a page
// reads them newest first in order.
//
// In each generation, an entry is ["e", project, request id] and each filter
// the API offers is an index row ["i", project, field, value, created ms,
// request id], so a filtered page is one reverse range read per generation.
// A page reads at most `scanLimit` index rows: a rare combination of filters
// answers a short page with a cursor instead of walking the whole log.
//
// Content (the prompt and the answer, when the project logs it) lives in the
// entry itself and expires before it: each entry with content has a row
// ["x", expires ms, project, request id] in its generation; reads never show
// content past its expiry, and the minute's sweep rewrites such entries
// without it (metadata only) and removes their rows. A page never carries
// content; only `get` does.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { open, type Database, type RootDatabase } from "lmdb";
import type { Clock } from "../core/clock.ts";
import { decodeCursor, encodeCursor } from "../core/data-store.ts";
import { addToBucket, bucketStart, emptyBucket, keptMs, mergeBucket, resolutions, seriesPoints, scopesOf, type Bucket, type Resolution, type SeriesPoint } from "./request-log-aggregates.ts";
import { entryFromStored, storedEntry, withoutContent, type RequestLogEntry } from "./request-log-entry.ts";

export const generationsPerWindow = 4;

/** The fields a page can be filtered by, each with its own index (`all` is the unfiltered one). */
const indexedFields = ["api_key_id", "model", "provider", "status", "error_code"] as const;
type IndexedField = (typeof indexedFields)[number];

export interface RequestLogFilter {
  /** Inclusive, epoch ms. */
  fromMs?: number | undefined;
  /** Inclusive, epoch ms. */
  toMs?: number | undefined;
  api_key_id?: string | undefined;
  model?: string | undefined;
  provider?: string | undefined;
  status?: number | undefined;
  error_code?: string | undefined;
  /** Only these keys' entries (a member's own keys); undefined: every key. */
  keyIds?: ReadonlySet<string> | undefined;
}

export interface RequestLogPage {
  entries: RequestLogEntry[];
  /** Pass back as `after`; null once the (filtered) log is read to its end. */
  nextCursor: string | null;
}

export interface RequestLogStoreOptions {
  retentionMs: number;
  maxEntries: number;
  /** Index rows one page reads at most before answering with a cursor. */
  scanLimit?: number;
}

type IndexKey = [string, string, string, string, number, string];

interface Span {
  start: number;
  end: number;
  n: number;
}

function fieldValue(e: RequestLogEntry, field: IndexedField): string | null {
  const v = e[field];
  return v === null ? null : String(v);
}

export class RequestLogStore {
  private readonly root: RootDatabase;
  /** Generation start ms → [end ms, entries written into it]. */
  private readonly spanDb: Database<[number, number], number>;
  /** [resolution, scope, bucket start] → bucket; ["x", resolution, start, scope] → true (the sweep's order). */
  private readonly aggregates: Database<Bucket | true, (string | number)[]>;
  private readonly generations = new Map<number, Database<unknown, (string | number)[]>>();
  private readonly clock: Clock;
  private readonly retentionMs: number;
  private readonly generationMs: number;
  private readonly maxEntries: number;
  private readonly scanLimit: number;
  private lastSweepMs = 0;
  /**
   * The spans as last committed, so a flush and a page do not read them from
   * lmdb each time (two range reads were a fixed cost of every flush). Only
   * this store writes them. Every change bumps `spanVersion`; any but an
   * append also clears the copy before its transaction (readers then read
   * lmdb). An append keeps the copy while it runs (it is what is committed
   * until it commits), reads it in its transaction only when no other append
   * is in flight, and puts back what it committed only if no change began
   * meanwhile (else clears it).
   */
  private committedSpans: Span[] | undefined;
  private spanVersion = 0;
  private appendsInFlight = 0;
  /** Entries refused because the current generation alone reached maxEntries. */
  dropped = 0;

  constructor(dataDir: string, clock: Clock, options: RequestLogStoreOptions) {
    const dir = join(dataDir, "request-log");
    mkdirSync(dir, { recursive: true });
    this.clock = clock;
    this.retentionMs = Math.max(1, options.retentionMs);
    this.generationMs = Math.max(1, Math.floor(options.retentionMs / generationsPerWindow));
    this.maxEntries = options.maxEntries;
    this.scanLimit = options.scanLimit ?? 5_000;
    this.root = open({ path: join(dir, "request-log.lmdb"), compression: false, remapChunks: true, maxDbs: 64 });
    this.spanDb = this.root.openDB<[number, number], number>({ name: "spans", encoding: "msgpack" });
    this.aggregates = this.root.openDB<Bucket | true, (string | number)[]>({ name: "aggregates", encoding: "msgpack" });
    this.dropNumberedGenerations();
  }

  /**
   * The first format numbered its generations by the retention in force
   * ("generations": number → entries), which a change of retention misreads;
   * such generations cannot be placed in time, so they are dropped.
   */
  private dropNumberedGenerations(): void {
    const legacy = this.root.openDB<number, number>({ name: "generations", encoding: "msgpack" });
    for (const g of [...legacy.getKeys()]) {
      this.root.openDB({ name: `g${g}`, encoding: "msgpack" }).dropSync();
      legacy.removeSync(g);
    }
  }

  /** Held generations, oldest first (copies: a caller may change them in its transaction). */
  private spans(): Span[] {
    // Never filled here: a read while a change is in flight must not keep the state before it.
    return this.committedSpans?.map((s) => ({ ...s })) ?? this.storedSpans();
  }

  private storedSpans(): Span[] {
    return [...this.spanDb.getRange()].map(({ key, value }) => ({ start: key, end: value[0], n: value[1] }));
  }

  /** Before a write (not an append) that changes the spans: they are read from lmdb until an append puts a committed state back. */
  private spansChanging(): void {
    this.committedSpans = undefined;
    this.spanVersion += 1;
  }

  /** The earliest time a read shows: exactly the retention back. */
  private cutoff(nowMs: number): number {
    return nowMs - this.retentionMs;
  }

  /** The span that holds `ms`: a held one, or a new one of the current length clipped to its neighbours (added to `spans`). */
  private spanFor(spans: Span[], ms: number): Span {
    let start = Math.floor(ms / this.generationMs) * this.generationMs;
    let end = start + this.generationMs;
    for (const s of spans) {
      if (s.start <= ms && ms < s.end) return s;
      if (s.end <= ms) start = Math.max(start, s.end);
      else end = Math.min(end, s.start);
    }
    const span = { start, end, n: 0 };
    spans.push(span);
    spans.sort((a, b) => a.start - b.start);
    return span;
  }

  private generation(g: number): Database<unknown, (string | number)[]> {
    let db = this.generations.get(g);
    if (!db) {
      db = this.root.openDB<unknown, (string | number)[]>({ name: `g${g}`, encoding: "msgpack" });
      this.generations.set(g, db);
    }
    return db;
  }

  /** Generations (their start ms) holding times within the window, newest first. */
  private liveGenerations(nowMs: number): number[] {
    const cutoff = this.cutoff(nowMs);
    return this.spans()
      .filter((s) => s.end > cutoff)
      .map((s) => s.start)
      .reverse();
  }

  /** Writes a batch (one lmdb transaction); entries older than the window are not written. */
  async append(entries: readonly RequestLogEntry[]): Promise<void> {
    const nowMs = this.clock.now();
    const cutoff = this.cutoff(nowMs);
    const buckets = new Map<string, { key: (string | number)[]; bucket: Bucket }>();
    // The charts count each request once: an entry whose request id is
    // already stored (a retried append) is not counted again. An entry the
    // log has no room for, or that is past its retention, is still traffic
    // and stays in the charts (docs/decisions.md).
    const count = (e: RequestLogEntry): void => {
      for (const resolution of resolutions) {
        const start = bucketStart(e.created_ms, resolution);
        if (start < nowMs - keptMs[resolution]) continue;
        for (const scope of scopesOf(e)) {
          const id = `${resolution}\t${scope}\t${start}`;
          let b = buckets.get(id);
          if (!b) buckets.set(id, (b = { key: [resolution, scope, start], bucket: emptyBucket() }));
          addToBucket(b.bucket, e);
        }
      }
    };
    const version = ++this.spanVersion;
    let committed: Span[] = [];
    this.appendsInFlight += 1;
    try {
      await this.root.transaction(() => {
        // Another append in flight may have written spans this transaction sees and the copy does not.
        const spans = this.appendsInFlight === 1 ? this.spans() : this.storedSpans();
        committed = spans;
        let total = spans.reduce((sum, s) => sum + s.n, 0);
        const written = new Set<Span>();
        // Built here, in the transaction that sees what is stored: a retried transaction starts it over.
        buckets.clear();
        for (const e of entries) {
          if (e.created_ms < cutoff) {
            count(e);
            continue;
          }
          const span = this.spanFor(spans, e.created_ms);
          const db = this.generation(span.start);
          if (db.doesExist(["e", e.project_id, e.request_id])) continue;
          count(e);
          if (total >= this.maxEntries && spans.length === 1 && span.end > nowMs) {
            this.dropped += 1;
            continue;
          }
          db.put(["e", e.project_id, e.request_id], storedEntry(e));
          if (e.content) db.put(["x", e.content.expires_ms, e.project_id, e.request_id], 1);
          db.put(["i", e.project_id, "all", "", e.created_ms, e.request_id], 1);
          for (const field of indexedFields) {
            const v = fieldValue(e, field);
            if (v !== null) db.put(["i", e.project_id, field, v, e.created_ms, e.request_id], 1);
          }
          span.n += 1;
          written.add(span);
          total += 1;
        }
        for (const s of written) this.spanDb.put(s.start, [s.end, s.n]);
        for (const { key, bucket } of buckets.values()) {
          const previous = this.aggregates.get(key);
          if (Array.isArray(previous)) mergeBucket(bucket, previous);
          else this.aggregates.put(["x", key[0] ?? "", key[2] ?? 0, key[1] ?? ""], true);
          this.aggregates.put(key, bucket);
        }
      });
      this.committedSpans = this.spanVersion === version ? committed : undefined;
    } catch (error) {
      this.committedSpans = undefined;
      throw error;
    } finally {
      this.appendsInFlight -= 1;
    }
    await this.dropGenerations(nowMs);
    if (nowMs - this.lastSweepMs >= 60_000) {
      await this.sweepAggregates(nowMs);
      await this.sweepContent(nowMs);
    }
  }

  /** Rewrites every entry whose content expired by `nowMs` without it; resolves to the entries rewritten. */
  async sweepContent(nowMs = this.clock.now()): Promise<number> {
    let swept = 0;
    await this.root.transaction(() => {
      for (const span of this.spans()) {
        const db = this.generation(span.start);
        for (const key of [...db.getKeys({ start: ["x", 0], end: ["x", nowMs + 1] })]) {
          const entryKey = ["e", String(key[2]), String(key[3])];
          const kept = withoutContent(db.get(entryKey));
          if (kept) {
            db.put(entryKey, kept);
            swept += 1;
          }
          db.remove(key);
        }
      }
    });
    return swept;
  }

  /** Drops generations wholly outside the window, then the oldest ones while more than maxEntries are held (never the current one). */
  private async dropGenerations(nowMs: number): Promise<void> {
    const cutoff = this.cutoff(nowMs);
    const held = this.spans();
    let total = held.reduce((sum, s) => sum + s.n, 0);
    for (const { start, end, n } of held) {
      if (end > cutoff && (total <= this.maxEntries || end > nowMs)) continue;
      this.spansChanging();
      await this.generation(start).drop();
      this.generations.delete(start);
      await this.spanDb.remove(start);
      total -= n;
    }
  }

  private async sweepAggregates(nowMs: number): Promise<void> {
    this.lastSweepMs = nowMs;
    await this.root.transaction(() => {
      for (const resolution of resolutions) {
        const cutoff = nowMs - keptMs[resolution];
        for (const key of this.aggregates.getKeys({ start: ["x", resolution, 0], end: ["x", resolution, cutoff] })) {
          this.aggregates.remove(key);
          this.aggregates.remove([resolution, key[3] ?? "", key[2] ?? 0]);
        }
      }
    });
  }

  /**
   * Erases an organization's entries (its projects' ranges in every
   * generation) and its aggregates (the organization's, its projects' and
   * their keys' buckets). Organization deletion calls it: the log is not the
   * usage ledger, nothing of it is kept.
   */
  async eraseOrganization(orgId: string, projectIds: readonly string[]): Promise<number> {
    let erased = 0;
    const scopes = new Set([`org:${orgId}`, ...projectIds.map((p) => `project:${p}`)]);
    this.spansChanging();
    await this.root.transaction(() => {
      for (const span of this.spans()) {
        const db = this.generation(span.start);
        let removed = 0;
        for (const projectId of projectIds) {
          for (const kind of ["e", "i"]) {
            // Every key ["e"|"i", projectId, …] sorts after [kind, projectId] and before [kind, projectId + "\0"].
            const found = [...db.getRange({ start: [kind, projectId], end: [kind, `${projectId}\u0000`] })];
            for (const { key, value } of found) {
              if (kind === "e") {
                removed += 1;
                const entry = entryFromStored(projectId, String(key[2]), value);
                if (entry) scopes.add(`key:${entry.api_key_id}`);
                if (entry?.content) db.remove(["x", entry.content.expires_ms, projectId, entry.request_id]);
              }
              db.remove(key);
            }
          }
        }
        if (removed > 0) this.spanDb.put(span.start, [span.end, Math.max(0, span.n - removed)]);
        erased += removed;
      }
      for (const resolution of resolutions) {
        for (const scope of scopes) {
          for (const key of [...this.aggregates.getKeys({ start: [resolution, scope], end: [resolution, `${scope}\u0000`] })]) {
            this.aggregates.remove(key);
            this.aggregates.remove(["x", resolution, key[2] ?? 0, scope]);
          }
        }
      }
    });
    return erased;
  }

  /** Entries and generations on disk (the expired ones too, until they are dropped). */
  size(): { entries: number; generations: number } {
    let entries = 0;
    let generations = 0;
    for (const s of this.spans()) {
      entries += s.n;
      generations += 1;
    }
    return { entries, generations };
  }

  get(projectId: string, requestId: string): RequestLogEntry | undefined {
    const nowMs = this.clock.now();
    for (const g of this.liveGenerations(nowMs)) {
      const found = entryFromStored(projectId, requestId, this.generation(g).get(["e", projectId, requestId]));
      if (!found) continue;
      if (found.created_ms < this.cutoff(nowMs)) return undefined;
      if (found.content && found.content.expires_ms <= nowMs) delete found.content;
      return found;
    }
    return undefined;
  }

  /** Newest first, from `after` (a cursor of an earlier page). */
  page(projectId: string, filter: RequestLogFilter, limit: number, after?: string | null): RequestLogPage {
    const nowMs = this.clock.now();
    // The most selective index the filter names; the other filters are checked on the entries read.
    const field = indexedFields.find((f) => filter[f] !== undefined);
    const value = field === undefined ? "" : String(filter[field]);
    const indexName = field ?? "all";
    const position = after ? decodeCursor(after) : undefined;
    const toMs = Math.min(filter.toMs ?? Number.MAX_SAFE_INTEGER, position?.score ?? Number.MAX_SAFE_INTEGER);
    const fromMs = Math.max(filter.fromMs ?? 0, this.cutoff(nowMs));
    const entries: RequestLogEntry[] = [];
    let scanned = 0;
    let last: { ms: number; id: string } | undefined;
    for (const span of this.spans().reverse()) {
      if (span.end <= fromMs || span.start > toMs) continue;
      const db = this.generation(span.start);
      const start: IndexKey = position && position.score === toMs ? ["i", projectId, indexName, value, toMs, position.member] : ["i", projectId, indexName, value, toMs + 1, ""];
      for (const { key } of db.getRange({ start, end: ["i", projectId, indexName, value, fromMs], reverse: true })) {
        const ms = Number(key[4]);
        const id = String(key[5]);
        if (position && ms === position.score && id === position.member) continue;
        if (scanned >= this.scanLimit) return { entries, nextCursor: last ? encodeCursor(last.ms, last.id) : null };
        scanned += 1;
        last = { ms, id };
        const entry = entryFromStored(projectId, id, db.get(["e", projectId, id]));
        if (!entry || !matches(entry, filter)) continue;
        delete entry.content;
        if (entries.length === limit) return { entries, nextCursor: encodeCursor(entries[limit - 1]?.created_ms ?? 0, entries[limit - 1]?.request_id ?? "") };
        entries.push(entry);
      }
    }
    return { entries, nextCursor: null };
  }

  /** A scope's buckets (`org:<id>` or `project:<id>`) from `fromMs` to `toMs`, every bucket present (empty ones as zeros). */
  series(scope: string, resolution: Resolution, fromMs: number, toMs: number): SeriesPoint[] {
    return seriesPoints(this.buckets(scope, resolution, fromMs, toMs), resolution, fromMs, toMs);
  }

  /** The raw buckets behind `series`, by start ms, only those written to: what another replica adds to its own (tenancy/request-log-series.ts). */
  buckets(scope: string, resolution: Resolution, fromMs: number, toMs: number): Map<number, Bucket> {
    const found = new Map<number, Bucket>();
    for (const { key, value } of this.aggregates.getRange({ start: [resolution, scope, bucketStart(fromMs, resolution)], end: [resolution, scope, toMs + 1] })) {
      if (Array.isArray(value)) found.set(Number(key[2]), value);
    }
    return found;
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}

function matches(e: RequestLogEntry, f: RequestLogFilter): boolean {
  if (f.keyIds && !f.keyIds.has(e.api_key_id)) return false;
  if (f.api_key_id !== undefined && e.api_key_id !== f.api_key_id) return false;
  if (f.model !== undefined && e.model !== f.model) return false;
  if (f.provider !== undefined && e.provider !== f.provider) return false;
  if (f.status !== undefined && e.status !== f.status) return false;
  if (f.error_code !== undefined && e.error_code !== f.error_code) return false;
  if (f.fromMs !== undefined && e.created_ms < f.fromMs) return false;
  if (f.toMs !== undefined && e.created_ms > f.toMs) return false;
  return true;
}
