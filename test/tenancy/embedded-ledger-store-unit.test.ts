// The embedded ledger's holds of calls in flight, one store in process: the
// cases the shared suite (ledger-store-suite.ts) leaves open, found by
// mutation testing (docs/testing.md): a key's holds apart from its
// project's, a hold released by a settle and by a release of its own id
// only, the boundaries of "spent + reserved < limit" and of a hold's
// expiry, and a restored part's renewed expiry.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import type { StoredBudget } from "../../tenancy/ledger.ts";
import { usageRecord } from "../support/usage-record.ts";

const at = Date.UTC(2026, 2, 15);
const minute = 60_000;

/** 10,000 nano-dollars a month. */
const budget = (hard: boolean): StoredBudget => ({ monthly_limit_usd: 0.00001, alert_thresholds: [], hard_limit: hard, updated_at: "2026-03-01T00:00:00.000Z" });

function ledger(t: Test): EmbeddedLedgerStore {
  const store = new EmbeddedLedgerStore(mkdtempSync(join(tmpdir(), "troupe-ledger-unit-")));
  t.teardown(() => store.close());
  return store;
}

t.test("a key's holds count against the key's budget only, the project's against the project's", async (t) => {
  const store = ledger(t);
  await store.putBudget("prj_a", budget(true));
  await store.putBudget("prj_a", budget(true), "key_a");
  const project = { project_id: "prj_a", period: "2026-03" };
  const key = { ...project, api_key_id: "key_a" };
  t.same(await store.reserve({ ...key, id: "k1" }, 10_000, at + minute, at), { admitted: true });
  t.same(await store.reserve({ ...project, id: "p1" }, 1, at + minute, at), { admitted: true }, "the key's 10,000 held is not the project's");
  t.same(await store.reserve({ ...key, id: "k2" }, 1, at + minute, at), { admitted: false, spent_nanos: 0, reserved_nanos: 10_000, limit_nanos: 10_000 });
  t.same(await store.reserve({ ...project, id: "p2" }, 1, at + minute, at), { admitted: true }, "1 held < 10,000");
  // Another period is another budget month: nothing held there.
  t.same(await store.reserve({ ...key, period: "2026-04", id: "k3" }, 1, at + minute, at), { admitted: true });
  // Releasing the key's hold frees the key's budget, not the project's.
  await store.release({ ...key, id: "k1" });
  t.same(await store.reserve({ ...key, id: "k4" }, 1, at + minute, at), { admitted: true }, "the key's budget is free again");
});

t.test("a key's parts are held against the key's budget, and released by their own id", async (t) => {
  const store = ledger(t);
  await store.putBudget("prj_b", budget(true), "key_b");
  const key = { project_id: "prj_b", period: "2026-03", api_key_id: "key_b" };
  t.same(await store.reserveParts(key, [{ id: "j:0", amount_nanos: 6000 }, { id: "j:1", amount_nanos: 4000 }], at + minute, at, false), { admitted: true });
  t.same(await store.reserveParts(key, [{ id: "x:0", amount_nanos: 0 }], at + minute, at, false), { admitted: false, spent_nanos: 0, reserved_nanos: 10_000, limit_nanos: 10_000 });
  await store.release({ ...key, id: "j:1" });
  t.same(await store.reserveParts(key, [{ id: "y:0", amount_nanos: 4001 }], at + minute, at, false), { admitted: false, spent_nanos: 0, reserved_nanos: 6000, limit_nanos: 10_000 }, "j:0 still held");
  t.same(await store.reserveParts(key, [{ id: "y:1", amount_nanos: 4000 }], at + minute, at, false), { admitted: true });
  // The project has no budget of its own: its parts are admitted unchecked.
  t.same(await store.reserveParts({ project_id: "prj_b", period: "2026-03" }, [{ id: "p:0", amount_nanos: 50_000 }], at + minute, at, false), { admitted: true });
});

t.test("a settle releases its own reservation only, and with the record counted", async (t) => {
  const store = ledger(t);
  await store.putBudget("prj_c", budget(true));
  const res = (id: string) => ({ project_id: "prj_c", period: "2026-03", id });
  t.same(await store.reserve(res("a"), 4000, at + minute, at), { admitted: true });
  t.same(await store.reserve(res("b"), 3000, at + minute, at), { admitted: true });
  await store.append([usageRecord({ project_id: "prj_c", cost_nanos: 2000, usage_key: "a" })], res("a"));
  t.same(await store.reserve(res("probe"), 0, at + minute, at), { admitted: true }, "2,000 spent + 3,000 held < 10,000");
  t.same(await store.reserve(res("c"), 8000, at + minute, at), { admitted: true });
  t.same(await store.reserve(res("d"), 1, at + minute, at), { admitted: false, spent_nanos: 2000, reserved_nanos: 11_000, limit_nanos: 10_000 }, "b and c held, a gone");
  await store.append([], res("b"));
  t.same(await store.reserve(res("e"), 1, at + minute, at), { admitted: false, spent_nanos: 2000, reserved_nanos: 8000, limit_nanos: 10_000 }, "a settle without a record releases b, and b only");
});

t.test("a call is admitted one nano-dollar under the limit, refused at it", async (t) => {
  const store = ledger(t);
  await store.putBudget("prj_d", budget(true));
  const res = (id: string) => ({ project_id: "prj_d", period: "2026-03", id });
  await store.append([usageRecord({ project_id: "prj_d", cost_nanos: 6000, usage_key: "spent" })]);
  t.same(await store.reserve(res("a"), 3999, at + minute, at), { admitted: true });
  t.same(await store.reserve(res("b"), 1, at + minute, at), { admitted: true }, "9,999 < 10,000");
  t.same(await store.reserve(res("c"), 1, at + minute, at), { admitted: false, spent_nanos: 6000, reserved_nanos: 4000, limit_nanos: 10_000 });
  await store.putBudget("prj_d", budget(false));
  t.same(await store.reserve(res("c"), 1, at + minute, at), { admitted: true }, "no hard limit: admitted");
  t.same(await store.reserveParts({ project_id: "prj_d", period: "2026-03" }, [{ id: "big", amount_nanos: 1e9 }], at + minute, at, false), { admitted: true });
});

t.test("parts fit when spent + held + their sum reaches the limit exactly, not one more", async (t) => {
  const store = ledger(t);
  await store.putBudget("prj_e", budget(true));
  const place = { project_id: "prj_e", period: "2026-03" };
  await store.append([usageRecord({ project_id: "prj_e", cost_nanos: 1000, usage_key: "spent" })]);
  t.same(await store.reserve({ ...place, id: "call" }, 2000, at + minute, at), { admitted: true });
  t.same(await store.reserveParts(place, [{ id: "a:0", amount_nanos: 3000 }, { id: "a:1", amount_nanos: 4001 }], at + minute, at, false), { admitted: false, spent_nanos: 1000, reserved_nanos: 2000, limit_nanos: 10_000 });
  t.same(await store.reserveParts(place, [{ id: "b:0", amount_nanos: 3000 }, { id: "b:1", amount_nanos: 4000 }], at + minute, at, false), { admitted: true }, "1,000 + 2,000 + 7,000 = 10,000");
  t.same(await store.reserve({ ...place, id: "after" }, 1, at + minute, at), { admitted: false, spent_nanos: 1000, reserved_nanos: 9000, limit_nanos: 10_000 }, "both parts held at their amounts");
});

t.test("a hold ends at its expiry: held one millisecond before, gone at it", async (t) => {
  const store = ledger(t);
  await store.putBudget("prj_f", budget(true));
  const res = (id: string) => ({ project_id: "prj_f", period: "2026-03", id });
  t.same(await store.reserve(res("short"), 10_000, at + 1000, at), { admitted: true });
  t.same(await store.reserve(res("x"), 1, at + minute, at + 999), { admitted: false, spent_nanos: 0, reserved_nanos: 10_000, limit_nanos: 10_000 });
  t.same(await store.reserve(res("y"), 7, at + minute, at + 1000), { admitted: true }, "expired at its expiry");
  t.same(await store.reserveParts({ project_id: "prj_f", period: "2026-03" }, [{ id: "p", amount_nanos: 9994 }], at + minute, at + 1000, false), { admitted: false, spent_nanos: 0, reserved_nanos: 7, limit_nanos: 10_000 }, "only y is held");
});

t.test("restoring a part still held renews its expiry and keeps its amount", async (t) => {
  const store = ledger(t);
  await store.putBudget("prj_g", budget(true));
  const place = { project_id: "prj_g", period: "2026-03" };
  t.same(await store.reserveParts(place, [{ id: "j:0", amount_nanos: 6000 }], at + 1000, at, false), { admitted: true });
  t.same(await store.reserveParts(place, [{ id: "j:0", amount_nanos: 1 }, { id: "j:1", amount_nanos: 5000 }], at + minute, at, true), { admitted: true }, "restored unchecked");
  t.same(
    await store.reserve({ ...place, id: "probe" }, 1, at + minute, at + 2000),
    { admitted: false, spent_nanos: 0, reserved_nanos: 11_000, limit_nanos: 10_000 },
    "j:0 outlives its first expiry, at 6,000, and j:1 is held too",
  );
});

t.test("a part whose hold expired is held anew when restored, at the restored amount", async (t) => {
  const store = ledger(t);
  await store.putBudget("prj_h", budget(true));
  const place = { project_id: "prj_h", period: "2026-03" };
  t.same(await store.reserveParts(place, [{ id: "j:0", amount_nanos: 6000 }], at + 1000, at, false), { admitted: true });
  // The probe at at + 2000 drops the expired hold; the restore then holds j:0 as a new part.
  t.same(await store.reserve({ ...place, id: "probe" }, 0, at + minute, at + 2000), { admitted: true });
  t.same(await store.reserveParts(place, [{ id: "j:0", amount_nanos: 2000 }], at + minute, at + 2000, true), { admitted: true });
  t.same(await store.reserve({ ...place, id: "after" }, 1, at + minute, at + 2000), { admitted: true });
  t.same(await store.reserveParts(place, [{ id: "k:0", amount_nanos: 8000 }], at + minute, at + 2000, false), { admitted: false, spent_nanos: 0, reserved_nanos: 2001, limit_nanos: 10_000 }, "j:0 held at 2,000, not 6,000");
});
