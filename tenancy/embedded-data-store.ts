// Embedded tenancy store on lmdb under the data directory. Each batch is one
// lmdb write transaction; its promise resolves only after the commit is
// flushed to disk, so an acknowledged write survives `kill -9`.
import { EventEmitter } from "node:events";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { open, type Database, type RootDatabase } from "lmdb";
import type { Clock } from "../core/clock.ts";
import { dataKind, SCHEMA_VERSION, upgrade } from "../core/schema-version.ts";
import {
  backoffWaitMs,
  ClaimTakenError,
  decodeCursor,
  pageOf,
  type BackoffAdmission,
  type BackoffPolicy,
  type DataStore,
  type IndexPage,
  type StoreOp,
} from "../core/data-store.ts";

interface Envelope {
  v: unknown;
  /** Expiry in epoch ms, for documents written with a ttl. */
  e?: number;
  /** The schema version `v` was written with; absent: version 0 (core/schema-version.ts). */
  s?: number;
}

type IndexKey = [string, number, string];

export class EmbeddedDataStore implements DataStore {
  readonly kind = "embedded" as const;
  private readonly root: RootDatabase;
  private readonly docs: Database<Envelope, string>;
  private readonly claims: Database<string, string>;
  private readonly index: Database<true, IndexKey>;
  private readonly indexScore: Database<number, [string, string]>;
  private readonly counters = new Map<string, { count: number; resetAt: number }>();
  /** Backoff state lives in memory like the counters: embedded mode is one process. */
  private readonly backoffs = new Map<string, { attempts: number; lastAt: number; forgetAt: number }>();
  private readonly channels = new EventEmitter();
  private readonly clock: Clock;

  constructor(dataDir: string, clock: Clock) {
    const dir = join(dataDir, "tenancy");
    mkdirSync(dir, { recursive: true });
    this.clock = clock;
    // Mapped in chunks (remapChunks), as the actor store is: a whole-file map kept ~2.4× the file in RSS
    // (measured: 2,430 MiB mapped for a 1,007 MB file at ~920,000 conversations; bench/agents.ts --scale).
    this.root = open({ path: join(dir, "tenancy.lmdb"), compression: false, remapChunks: true });
    this.docs = this.root.openDB<Envelope, string>({ name: "docs", encoding: "msgpack" });
    this.claims = this.root.openDB<string, string>({ name: "claims", encoding: "string" });
    this.index = this.root.openDB<true, IndexKey>({ name: "index", encoding: "msgpack" });
    this.indexScore = this.root.openDB<number, [string, string]>({ name: "index-score", encoding: "msgpack" });
    this.channels.setMaxListeners(0);
  }

  async get(key: string): Promise<unknown> {
    return this.read(key);
  }

  async getMany(keys: string[]): Promise<unknown[]> {
    return keys.map((k) => this.read(k));
  }

  private read(key: string): unknown {
    const envelope = this.docs.get(key);
    if (!envelope) return undefined;
    if (envelope.e !== undefined && envelope.e <= this.clock.now()) return undefined;
    return envelope.s === SCHEMA_VERSION ? envelope.v : upgrade(dataKind(key), envelope.s ?? 0, envelope.v);
  }

  async lookup(claimKey: string): Promise<string | undefined> {
    return this.claims.get(claimKey);
  }

  async apply(ops: StoreOp[]): Promise<void> {
    let taken: string | undefined;
    await this.root.transaction(() => {
      for (const op of ops) {
        if (op.op === "claim" && this.claims.get(op.key) !== undefined) {
          taken = op.key;
          return;
        }
      }
      for (const op of ops) this.applyOne(op);
    });
    if (taken !== undefined) throw new ClaimTakenError(taken);
  }

  private applyOne(op: StoreOp): void {
    switch (op.op) {
      case "put": {
        const envelope: Envelope = { v: op.value, s: SCHEMA_VERSION };
        if (op.ttlMs !== undefined) envelope.e = this.clock.now() + op.ttlMs;
        this.docs.put(op.key, envelope);
        return;
      }
      case "delete":
        this.docs.remove(op.key);
        return;
      case "claim":
        this.claims.put(op.key, op.value);
        return;
      case "release":
        this.claims.remove(op.key);
        return;
      case "index": {
        const previous = this.indexScore.get([op.key, op.member]);
        if (previous !== undefined) this.index.remove([op.key, previous, op.member]);
        this.index.put([op.key, op.score, op.member], true);
        this.indexScore.put([op.key, op.member], op.score);
        return;
      }
      case "unindex": {
        const score = this.indexScore.get([op.key, op.member]);
        if (score === undefined) return;
        this.index.remove([op.key, score, op.member]);
        this.indexScore.remove([op.key, op.member]);
        return;
      }
    }
  }

  async page(indexKey: string, limit: number, cursor?: string | null): Promise<IndexPage> {
    const after = cursor ? decodeCursor(cursor) : undefined;
    const start: IndexKey = after ? [indexKey, after.score, after.member] : [indexKey, Number.MAX_VALUE, ""];
    const members: { score: number; member: string }[] = [];
    for (const { key } of this.index.getRange({ start, end: [indexKey, -Number.MAX_VALUE, ""], reverse: true })) {
      const [, score, member] = key;
      if (after && score === after.score && member === after.member) continue;
      members.push({ score, member });
      if (members.length > limit) break;
    }
    return pageOf(members, limit);
  }

  async hit(counterKey: string, windowMs: number, by = 1): Promise<{ count: number; resetInMs: number }> {
    return this.hitLocal(counterKey, windowMs, by);
  }

  hitLocal(counterKey: string, windowMs: number, by = 1): { count: number; resetInMs: number } {
    const now = this.clock.now();
    let counter = this.counters.get(counterKey);
    if (!counter || counter.resetAt <= now) {
      counter = { count: 0, resetAt: now + windowMs };
      this.counters.set(counterKey, counter);
      if (this.counters.size > 100_000) this.sweepCounters(now);
    }
    counter.count += by;
    return { count: counter.count, resetInMs: counter.resetAt - now };
  }

  private sweepCounters(now: number): void {
    for (const [k, c] of this.counters) if (c.resetAt <= now) this.counters.delete(k);
  }

  async backoffAttempt(key: string, policy: BackoffPolicy, now: number): Promise<BackoffAdmission> {
    let state = this.backoffs.get(key);
    if (state && state.forgetAt <= now) state = undefined;
    const attempts = state?.attempts ?? 0;
    const waitUntil = state ? state.lastAt + backoffWaitMs(attempts, policy) : now;
    if (waitUntil > now) return { admitted: false, retryInMs: waitUntil - now, attempts };
    this.backoffs.set(key, { attempts: attempts + 1, lastAt: now, forgetAt: now + policy.forgetMs });
    if (this.backoffs.size > 100_000) for (const [k, s] of this.backoffs) if (s.forgetAt <= now) this.backoffs.delete(k);
    return { admitted: true, retryInMs: 0, attempts: attempts + 1 };
  }

  async backoffRefund(key: string): Promise<void> {
    const state = this.backoffs.get(key);
    if (state && state.attempts > 0) state.attempts -= 1;
  }

  async backoffClear(key: string): Promise<void> {
    this.backoffs.delete(key);
  }

  async publish(channel: string, message: string): Promise<void> {
    this.channels.emit(channel, message);
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.channels.on(channel, onMessage);
  }

  async unsubscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.channels.off(channel, onMessage);
  }

  async close(): Promise<void> {
    this.channels.removeAllListeners();
    await this.root.close();
  }
}
