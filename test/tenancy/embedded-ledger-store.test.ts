import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { EmbeddedLedgerStore } from "../../tenancy/embedded-ledger-store.ts";
import type { LedgerStore } from "../../tenancy/ledger.ts";
import { ledgerSuite } from "./ledger-store-suite.ts";

const dirs = new WeakMap<LedgerStore, string>();

ledgerSuite(t, {
  name: "embedded",
  async create() {
    const dir = mkdtempSync(join(tmpdir(), "troupe-ledger-"));
    const store = new EmbeddedLedgerStore(dir);
    dirs.set(store, dir);
    return store;
  },
  async reopen(store) {
    const dir = dirs.get(store);
    if (!dir) throw new Error("unknown store");
    await store.close();
    const reopened = new EmbeddedLedgerStore(dir);
    dirs.set(reopened, dir);
    return reopened;
  },
});
