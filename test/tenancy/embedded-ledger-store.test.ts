import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import { directoryTarget, ledgerSuite, usage } from "./ledger-store-suite.ts";

ledgerSuite(t, directoryTarget("embedded", (dir) => new EmbeddedLedgerStore(dir)));

// The embedded store queues its writes for lmdb's write thread and reads
// back what it wrote until lmdb commits it. Appends that overlap (the usage
// flush, a settle, a video scene) must neither double-bill nor lose a sum.
t.test("embedded: overlapping appends read each other's uncommitted writes", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-ledger-"));
  const ledger = new EmbeddedLedgerStore(dir);
  await ledger.putBudget("prj_overlap", { monthly_limit_usd: 0.0001, alert_thresholds: [0.5], hard_limit: true, updated_at: "2026-03-01T00:00:00.000Z" });
  const replay = usage({ project_id: "prj_overlap" });
  const first = ledger.append([replay]);
  t.equal(await ledger.spent("prj_overlap", "2026-03"), 1000, "an append's spend reads back before its commit");
  const again = ledger.append([replay]);
  const appends: Array<Promise<unknown>> = [first, again];
  for (let i = 0; i < 99; i++) {
    appends.push(ledger.append([usage({ project_id: "prj_overlap" })]));
    // Half of them in later event turns, while earlier commits are still on their way.
    if (i % 2) await new Promise((resolve) => setImmediate(resolve));
  }
  const alerts = (await Promise.all(appends)).flat();
  t.equal(await ledger.spent("prj_overlap", "2026-03"), 100_000, "100 distinct records, the replay counted once, no sum lost");
  t.equal(alerts.length, 1, "the 50 % threshold claimed once");
  t.equal((await ledger.records("prj_overlap", "2026-03")).length, 100, "one ledger record per usage key");
  const reopened = new EmbeddedLedgerStore(dir);
  await ledger.close();
  t.equal(await reopened.spent("prj_overlap", "2026-03"), 100_000, "what was read back is what was committed");
  t.equal((await reopened.usageToDate(["key_1"])).get("key_1")?.calls, 100);
  await reopened.close();
});

// A hard-limited call is answered after its settle: the settle resolves
// once every later call reads it (spent counts it, its reservation is gone)
// and it is committed. `records` reads committed data only. On the ledger's
// own thread an append is one synchronous transaction, so a plain append (a
// usage flush, a video scene) and a settle alike resolve committed.
t.test("embedded: a settle and a plain append each resolve once committed", async (t) => {
  const ledger = new EmbeddedLedgerStore(mkdtempSync(join(tmpdir(), "troupe-ledger-")));
  t.teardown(() => ledger.close());
  await ledger.putBudget("prj_settle", { monthly_limit_usd: 0.0000015, alert_thresholds: [1], hard_limit: true, updated_at: "2026-03-01T00:00:00.000Z" });
  const reservation = { project_id: "prj_settle", period: "2026-03", id: "rsv_1" };
  t.same(await ledger.reserve(reservation, 1000, Date.now() + 60_000, Date.now()), { admitted: true });
  await ledger.append([usage({ project_id: "prj_settle" })], reservation);
  t.equal(await ledger.spent("prj_settle", "2026-03"), 1000, "spent counts the settled record at once");
  t.equal((await ledger.records("prj_settle", "2026-03")).length, 1, "resolved once committed");
  const second = { ...reservation, id: "rsv_2" };
  t.same(await ledger.reserve(second, 1000, Date.now() + 60_000, Date.now()), { admitted: true }, "the first reservation is released: 1,000 spent + 1,000 reserved < 1,500");
  t.match(await ledger.reserve({ ...reservation, id: "rsv_3" }, 1, Date.now() + 60_000, Date.now()), { admitted: false, spent_nanos: 1000, reserved_nanos: 1000 });
  await ledger.append([usage({ project_id: "prj_settle" })]);
  t.equal((await ledger.records("prj_settle", "2026-03")).length, 2, "a plain append resolves once committed");
});

t.test("embedded: an append whose transaction aborts leaves no dimension in memory that the disk lacks", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-ledger-"));
  let ledger = new EmbeddedLedgerStore(dir);
  // The counters' write fails mid-transaction (a full disk, say), after the call's new dimension was assigned an id.
  const counters = (ledger as unknown as { counters: { putSync: (...args: unknown[]) => unknown } }).counters;
  const putSync = counters.putSync;
  counters.putSync = () => {
    throw new Error("disk full");
  };
  const aborted = usage({ project_id: "prj_abort", model: "gpt-4.1" });
  await t.rejects(ledger.append([aborted]), /disk full/);
  counters.putSync = putSync;
  // The same dimension again, now committed: its text must be written with it.
  const committed = usage({ project_id: "prj_abort", model: "gpt-4.1" });
  await ledger.append([committed]);
  await ledger.close();
  ledger = new EmbeddedLedgerStore(dir);
  t.same(
    (await ledger.records("prj_abort", committed.created_at.slice(0, 7))).map((r) => [r.usage_key, r.model]),
    [[committed.usage_key, "gpt-4.1"]],
    "after a restart the committed call reads back with its dimension; the aborted one was never written",
  );
  await ledger.close();
});
