// The request log read across replicas (docs/operations/request-log.md,
// docs/decisions.md "The request log across replicas"): each replica keeps
// the entries of the calls it served in its own lmdb file, and a read (a
// page, one entry by id) is answered by asking every live replica through
// the shared data store (Redis): a query on one publish/subscribe channel,
// each replica's answer on the asker's own reply channel.
//
// Replicas find each other in a registry kept in the data store: each one
// writes a document with a TTL of three heartbeats (a replica that stops
// without saying so ages out) and its id in an index. A read waits for every
// registered replica; one that does not answer within `answerTimeoutMs`
// makes the read 503 service_unavailable rather than a page that silently
// lacks its entries.
//
// Every replica orders its entries the same way (arrival ms, then request id,
// newest first), so one position is a cursor for all of them: the asker
// merges the pages, keeps what lies at or above the least advanced replica's
// position (below it that replica has not read yet), and pages on from there.
// The cursor keeps the single-store format (cursorPattern).
//
// The console's series (charts, key use) are asked the same way: each
// replica answers its raw buckets and the asker adds them
// (tenancy/request-log-series.ts), so a silent replica 503s them too.
import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { Clock } from "../core/clock.ts";
import { decodeCursor, encodeCursor, indexMembers, type DataStore } from "../core/data-store.ts";
import { TroupeError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { entryFromStored, storedEntry, type RequestLogEntry } from "./request-log-entry.ts";
import type { SeriesPoint } from "./request-log-aggregates.ts";
import type { RequestLogFilter, RequestLogPage, RequestLogStore } from "./request-log-store.ts";
import { bucketsOf, mergeSeries, seriesBucketsWire, seriesReadWire, type RequestLogSeriesReads, type SeriesRead } from "./request-log-series.ts";

/** The reads the log's routes make: one replica's store, or every replica's through RequestLogReplicas. */
export interface RequestLogReads {
  page(projectId: string, filter: RequestLogFilter, limit: number, after?: string | null): RequestLogPage | Promise<RequestLogPage>;
  get(projectId: string, requestId: string): RequestLogEntry | undefined | Promise<RequestLogEntry | undefined>;
}

const queryChannel = "request-log:query";
const replyChannel = (replica: string) => `request-log:reply:${replica}`;
const registryIndex = "request-log:replicas";
const registryDoc = (replica: string) => `request-log:replica:${replica}`;

const filterWire = z.object({
  fromMs: z.number().optional(),
  toMs: z.number().optional(),
  api_key_id: z.string().optional(),
  model: z.string().optional(),
  provider: z.string().optional(),
  status: z.number().optional(),
  error_code: z.string().optional(),
  keyIds: z.array(z.string()).optional(),
});
const queryMessage = z.object({
  id: z.string(),
  reply_to: z.string(),
  project_id: z.string(),
  read: z.discriminatedUnion("kind", [
    z.object({ kind: z.literal("page"), filter: filterWire, limit: z.number().int().min(1), after: z.string().nullable() }),
    z.object({ kind: z.literal("get"), request_id: z.string() }),
    z.object({ kind: z.literal("series"), reads: z.array(seriesReadWire) }),
  ]),
});
type QueryMessage = z.infer<typeof queryMessage>;
/** Entries travel in their stored form ([request id, stored array]), parsed back by the same schema the store reads with. */
const replyMessage = z.object({
  id: z.string(),
  replica: z.string(),
  entries: z.array(z.tuple([z.string(), z.unknown()])),
  next_cursor: z.string().nullable(),
  /** A series read's answer: per read asked, in order, this replica's buckets. */
  series: z.array(seriesBucketsWire).optional(),
});
type ReplyMessage = z.infer<typeof replyMessage>;

interface Position {
  ms: number;
  id: string;
}

/** Newest first: arrival ms, then request id (as the store's index orders them). */
function compare(a: Position, b: Position): number {
  if (a.ms !== b.ms) return b.ms - a.ms;
  return Buffer.compare(Buffer.from(b.id), Buffer.from(a.id));
}

/**
 * One page from every replica's page read from the same position: entries
 * at or above the least advanced replica's cursor (each replica has read
 * everything down to its cursor), newest first, at most `limit`.
 */
export function mergePages(pages: readonly RequestLogPage[], limit: number): RequestLogPage {
  let frontier: Position | undefined;
  for (const p of pages) {
    const c = p.nextCursor === null ? undefined : decodeCursor(p.nextCursor);
    if (!c) continue;
    const at = { ms: c.score, id: c.member };
    if (!frontier || compare(at, frontier) < 0) frontier = at;
  }
  const seen = new Set<string>();
  const kept: RequestLogEntry[] = [];
  for (const e of pages.flatMap((p) => p.entries)) {
    if (seen.has(e.request_id)) continue;
    seen.add(e.request_id);
    if (frontier && compare({ ms: e.created_ms, id: e.request_id }, frontier) > 0) continue;
    kept.push(e);
  }
  kept.sort((a, b) => compare({ ms: a.created_ms, id: a.request_id }, { ms: b.created_ms, id: b.request_id }));
  if (kept.length > limit) {
    const entries = kept.slice(0, limit);
    const last = entries[limit - 1];
    return { entries, nextCursor: last ? encodeCursor(last.created_ms, last.request_id) : null };
  }
  return { entries: kept, nextCursor: frontier ? encodeCursor(frontier.ms, frontier.id) : null };
}

export interface RequestLogReplicasOptions {
  store: DataStore;
  local: RequestLogStore;
  clock: Clock;
  log: Logger;
  /** How often this replica renews its registration; it is taken for gone after three (5 s). */
  heartbeatMs?: number;
  /** How long a read waits for the other replicas' answers (2 s). */
  answerTimeoutMs?: number;
}

interface Pending {
  waiting: Set<string>;
  replies: ReplyMessage[];
  /** A one-entry read ends at the first replica that has it. */
  firstFound: boolean;
  done: (replies: ReplyMessage[]) => void;
  fail: (error: Error) => void;
}

export class RequestLogReplicas implements RequestLogReads, RequestLogSeriesReads {
  /** This process's id in the registry (not TROUPE_REPLICA, which replicas may share). */
  readonly id = randomUUID();
  private readonly o: Required<RequestLogReplicasOptions>;
  private readonly pending = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;

  constructor(options: RequestLogReplicasOptions) {
    this.o = { heartbeatMs: 5_000, answerTimeoutMs: 2_000, ...options };
  }

  /** Subscribes first, then registers: a replica is asked only once it can answer. */
  async start(): Promise<void> {
    await this.o.store.subscribe(queryChannel, this.onQuery);
    await this.o.store.subscribe(replyChannel(this.id), this.onReply);
    await this.heartbeat();
    this.timer = setInterval(() => void this.heartbeat().catch((error: unknown) => this.o.log.warn("request log: the replica registration was not renewed", { error: String(error) })), this.o.heartbeatMs);
    this.timer.unref();
  }

  private heartbeat(): Promise<void> {
    const now = this.o.clock.now();
    return this.o.store.apply([
      { op: "put", key: registryDoc(this.id), value: { replica: this.id, at: now }, ttlMs: this.o.heartbeatMs * 3 },
      { op: "index", key: registryIndex, member: this.id, score: now },
    ]);
  }

  /** Leaves the registry, so no read waits for this replica. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.o.store.apply([{ op: "delete", key: registryDoc(this.id) }, { op: "unindex", key: registryIndex, member: this.id }]).catch(() => undefined);
    await this.o.store.unsubscribe(queryChannel, this.onQuery).catch(() => undefined);
    await this.o.store.unsubscribe(replyChannel(this.id), this.onReply).catch(() => undefined);
    for (const p of this.pending.values()) p.fail(new TroupeError("service_unavailable", "the request log is stopping"));
  }

  /** The other registered replicas whose registration is alive; the aged-out ones are taken out of the index. */
  private async others(): Promise<string[]> {
    const members = await indexMembers(this.o.store, registryIndex);
    const docs = await this.o.store.getMany(members.map(registryDoc));
    const gone = members.filter((_, i) => docs[i] === undefined || docs[i] === null);
    if (gone.length > 0) await this.o.store.apply(gone.map((m) => ({ op: "unindex" as const, key: registryIndex, member: m }))).catch(() => undefined);
    return members.filter((m, i) => m !== this.id && docs[i] !== undefined && docs[i] !== null);
  }

  async page(projectId: string, filter: RequestLogFilter, limit: number, after?: string | null): Promise<RequestLogPage> {
    const here = this.o.local.page(projectId, filter, limit, after);
    const wire: z.infer<typeof filterWire> = {};
    for (const k of ["fromMs", "toMs", "status"] as const) if (filter[k] !== undefined) wire[k] = filter[k];
    for (const k of ["api_key_id", "model", "provider", "error_code"] as const) if (filter[k] !== undefined) wire[k] = filter[k];
    if (filter.keyIds) wire.keyIds = [...filter.keyIds];
    const replies = await this.ask(projectId, { kind: "page", filter: wire, limit, after: after ?? null }, false);
    const pages = replies.map((r) => ({ entries: entriesOf(projectId, r), nextCursor: r.next_cursor }));
    return mergePages([here, ...pages], limit);
  }

  async get(projectId: string, requestId: string): Promise<RequestLogEntry | undefined> {
    const here = this.o.local.get(projectId, requestId);
    if (here) return here;
    const replies = await this.ask(projectId, { kind: "get", request_id: requestId }, true);
    return replies.flatMap((r) => entriesOf(projectId, r))[0];
  }

  /** The project is not part of a series read (its scopes name what they count); the query's project is left empty. */
  async series(reads: readonly SeriesRead[]): Promise<SeriesPoint[][]> {
    if (reads.length === 0) return [];
    const here = reads.map((r) => bucketsOf(this.o.local, r));
    const replies = await this.ask("", { kind: "series", reads: [...reads] }, false);
    return reads.map((r, i) => mergeSeries(r, [here[i] ?? [], ...replies.map((reply) => reply.series?.[i] ?? [])]));
  }

  /** Publishes a query and waits for every other live replica's answer (or, with `firstFound`, the first that found one). */
  private async ask(projectId: string, read: QueryMessage["read"], firstFound: boolean): Promise<ReplyMessage[]> {
    const others = await this.others();
    if (others.length === 0) return [];
    const id = randomUUID();
    const answered = new Promise<ReplyMessage[]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new TroupeError("service_unavailable", "a replica holding part of the request log did not answer; retry"));
      }, this.o.answerTimeoutMs);
      const end = () => {
        clearTimeout(timer);
        this.pending.delete(id);
      };
      this.pending.set(id, {
        waiting: new Set(others),
        replies: [],
        firstFound,
        done: (replies) => {
          end();
          resolve(replies);
        },
        fail: (error) => {
          end();
          reject(error);
        },
      });
    });
    const message: QueryMessage = { id, reply_to: this.id, project_id: projectId, read };
    await this.o.store.publish(queryChannel, JSON.stringify(message)).catch((error: unknown) => this.pending.get(id)?.fail(error instanceof Error ? error : new Error(String(error))));
    return answered;
  }

  private readonly onReply = (text: string): void => {
    const parsed = replyMessage.safeParse(parseJson(text));
    if (!parsed.success) return this.o.log.warn("request log: a malformed replica answer was ignored", {});
    const p = this.pending.get(parsed.data.id);
    if (!p || !p.waiting.delete(parsed.data.replica)) return;
    p.replies.push(parsed.data);
    if (p.waiting.size === 0 || (p.firstFound && parsed.data.entries.length > 0)) p.done(p.replies);
  };

  private readonly onQuery = (text: string): void => {
    const parsed = queryMessage.safeParse(parseJson(text));
    if (!parsed.success) return this.o.log.warn("request log: a malformed replica query was ignored", {});
    const q = parsed.data;
    if (q.reply_to === this.id) return;
    let reply: ReplyMessage;
    if (q.read.kind === "get") {
      const entry = this.o.local.get(q.project_id, q.read.request_id);
      reply = { id: q.id, replica: this.id, entries: entry ? [[entry.request_id, storedEntry(entry)]] : [], next_cursor: null };
    } else if (q.read.kind === "series") {
      reply = { id: q.id, replica: this.id, entries: [], next_cursor: null, series: q.read.reads.map((r) => bucketsOf(this.o.local, r)) };
    } else {
      const { keyIds, ...rest } = q.read.filter;
      const page = this.o.local.page(q.project_id, { ...rest, ...(keyIds ? { keyIds: new Set(keyIds) } : {}) }, q.read.limit, q.read.after);
      reply = { id: q.id, replica: this.id, entries: page.entries.map((e) => [e.request_id, storedEntry(e)]), next_cursor: page.nextCursor };
    }
    void this.o.store.publish(replyChannel(q.reply_to), JSON.stringify(reply)).catch((error: unknown) => this.o.log.warn("request log: an answer to another replica was not sent", { error: String(error) }));
  };
}

function entriesOf(projectId: string, reply: ReplyMessage): RequestLogEntry[] {
  return reply.entries.flatMap(([requestId, stored]) => {
    const entry = entryFromStored(projectId, requestId, stored);
    return entry ? [entry] : [];
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
