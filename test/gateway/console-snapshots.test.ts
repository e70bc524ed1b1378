// Replica snapshots through the embedded data store: published with a TTL
// of three intervals (a stopped replica ages out), read back sorted by
// replica, a daprd that cannot be asked shown as the row's error, and a
// store that refuses the write logged, never thrown.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { createLogger } from "../../core/log.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { readSnapshots, SnapshotPublisher, type SnapshotSources } from "../../gateway/console/replica-snapshots.ts";

let nowMs = Date.UTC(2026, 10, 23, 12, 0, 0);
const clock = { now: () => nowMs };
const store = new EmbeddedDataStore(mkdtempSync(join(tmpdir(), "troupe-snapshots-")), clock);
t.teardown(() => store.close());
const lines: string[] = [];
const log = createLogger("warn", {}, (line) => lines.push(line));

const sources = (replica: string, actors: () => Promise<{ type: string; count: number }[]>): SnapshotSources => ({
  replica,
  mode: "dapr",
  activeActors: actors,
  breakers: () => [{ provider: "simulated", state: "closed" }],
});

t.test("every replica's row, sorted; a failing daprd is the row's error; stale rows age out", async (t) => {
  const r10 = new SnapshotPublisher({ store, sources: sources("10", async () => [{ type: "ConversationActor", count: 3 }]), clock, intervalMs: 1000, log });
  const r2 = new SnapshotPublisher({ store, sources: sources("2", async () => Promise.reject(new Error("daprd is not answering"))), clock, intervalMs: 1000, log });
  await r10.publish();
  await r2.publish();
  const rows = await readSnapshots(store);
  t.same(rows.map((r) => r.replica), ["2", "10"], "numeric order");
  t.same(rows[1]?.actors, [{ type: "ConversationActor", count: 3 }]);
  t.equal(rows[0]?.actors_error, "daprd is not answering");
  t.same(rows[0]?.actors, []);
  t.equal(rows[1]?.updated_at, new Date(nowMs).toISOString());
  nowMs += 2_000;
  await r10.publish();
  nowMs += 1_500; // replica 2 last wrote 3.5 s (> 3 intervals) ago; replica 10 1.5 s ago
  t.same((await readSnapshots(store)).map((r) => r.replica), ["10"], "a replica that stopped publishing disappears");
});

t.test("start() publishes at once; a write the store refuses is logged", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-snapshots-closed-"));
  const closed = new EmbeddedDataStore(dir, clock);
  await closed.close();
  const publisher = new SnapshotPublisher({ store: closed, sources: sources("3", async () => []), clock, intervalMs: 60_000, log });
  publisher.start();
  await publisher.publish();
  await publisher.stop();
  t.ok(lines.some((l) => l.includes("console snapshot not published")), "logged as a warning");
});
