// Per-replica snapshots for the operator's console: each replica publishes
// what only it can see (its daprd's active actors per type, its circuit
// breakers) to the shared data store every CONSOLE_SNAPSHOT_INTERVAL_MS, and
// whichever replica serves /console reads them all back.
//
// Why the data store and not a fan-out: in the cluster a replica can ask only
// its own daprd (GET /v1.0/metadata is local to the sidecar), and replicas
// do not know each other's addresses (Kubernetes would need a headless
// service, the local cluster a peer list). The data store (Redis) is already
// shared by every replica, a snapshot is one small document with a TTL (a
// replica that stops simply ages out after three intervals), and the console
// then costs one read however many replicas there are. The price is that a
// row can be up to one interval old; each row shows its age.
import { z } from "zod";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../core/log.ts";
import type { DataStore } from "../../core/data-store.ts";

export const replicaSnapshot = z.object({
  replica: z.string(),
  mode: z.enum(["embedded", "dapr"]),
  updated_at: z.string(),
  actors: z.array(z.object({ type: z.string(), count: z.number() })),
  /** Undefined when daprd could not be asked (its error instead). */
  actors_error: z.string().optional(),
  breakers: z.array(z.object({ provider: z.string(), state: z.enum(["closed", "open", "half_open"]) })),
});
export type ReplicaSnapshot = z.infer<typeof replicaSnapshot>;

const indexKey = "console:replicas";
const snapshotKey = (replica: string) => `console:replica:${replica}`;

export interface SnapshotSources {
  replica: string;
  mode: "embedded" | "dapr";
  activeActors(): Promise<{ type: string; count: number }[]>;
  breakers(): { provider: string; state: "closed" | "open" | "half_open" }[];
}

/** This replica's snapshot, taken now. */
export async function takeSnapshot(sources: SnapshotSources, clock: Clock): Promise<ReplicaSnapshot> {
  let actors: { type: string; count: number }[] = [];
  let actorsError: string | undefined;
  try {
    actors = await sources.activeActors();
  } catch (error) {
    actorsError = error instanceof Error ? error.message : String(error);
  }
  return {
    replica: sources.replica,
    mode: sources.mode,
    updated_at: new Date(clock.now()).toISOString(),
    actors,
    ...(actorsError === undefined ? {} : { actors_error: actorsError }),
    breakers: sources.breakers(),
  };
}

/** Publishes this replica's snapshot on a timer; stop() ends it. */
export interface SnapshotPublisherDeps {
  store: DataStore;
  sources: SnapshotSources;
  clock: Clock;
  /** How often the snapshot is written; a row lives three intervals. */
  intervalMs: number;
  log: Logger;
}

export class SnapshotPublisher {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private readonly deps: SnapshotPublisherDeps;

  constructor(deps: SnapshotPublisherDeps) {
    this.deps = deps;
  }

  start(): void {
    void this.publish();
    this.timer = setInterval(() => void this.publish(), this.deps.intervalMs);
    this.timer.unref();
  }

  /** One publication (also what start() runs at once). Errors are logged: the console shows the row's age. */
  publish(): Promise<void> {
    this.running ??= (async () => {
      try {
        const snapshot = await takeSnapshot(this.deps.sources, this.deps.clock);
        await this.deps.store.apply([
          // Three intervals: one missed write does not drop the row; a stopped replica disappears.
          { op: "put", key: snapshotKey(snapshot.replica), value: snapshot, ttlMs: this.deps.intervalMs * 3 },
          { op: "index", key: indexKey, member: snapshot.replica, score: this.deps.clock.now() },
        ]);
      } catch (error) {
        this.deps.log.warn("console snapshot not published", { error });
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}

/** Every live replica's latest snapshot, ordered by replica name. */
export async function readSnapshots(store: DataStore): Promise<ReplicaSnapshot[]> {
  const replicas = (await store.page(indexKey, 100)).members;
  const docs = await store.getMany(replicas.map(snapshotKey));
  return docs
    .map((doc) => replicaSnapshot.safeParse(doc))
    .flatMap((parsed) => (parsed.success ? [parsed.data] : []))
    .sort((a, b) => a.replica.localeCompare(b.replica, "en", { numeric: true }));
}
