// `node bench/ledger-append.ts [--records=100000] [--batch=1024] [--per-commit=1] [--root=<checkout>]`:
// what the embedded ledger's thread pays per usage record. Appends chat
// records (one live key of four, a ULID request id each) in appends of
// --batch records, --per-commit appends in flight at once (1: each awaited
// before the next, as the usage recorder's one-write-at-a-time flushes send
// them; more let an asynchronous store share one commit among them), and
// prints the CPU time of this process per record (the thread's reads, sums
// and encoding, plus the commits) and the ledger's bytes on disk per record.
// --root measures another checkout's EmbeddedLedgerStore the same way.
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { prefixedId } from "../core/ids.ts";
import type { UsageRecord } from "../providers/usage.ts";
import type { LedgerStore } from "../tenancy/ledger.ts";
import { chatUsageRecord } from "./lib/usage-records.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string | undefined]));
const total = Number(args.get("records") ?? 100_000);
const root = resolve(args.get("root") ?? join(import.meta.dirname, ".."));
const { EmbeddedLedgerStore } = (await import(join(root, "tenancy", "embedded-ledger-store.ts"))) as { EmbeddedLedgerStore: new (dir: string) => LedgerStore };

const project = prefixedId("prj");
const organization = prefixedId("org");
const environment = prefixedId("env");
const keys = Array.from({ length: 4 }, () => prefixedId("key"));

const record = (i: number): UsageRecord =>
  chatUsageRecord({ organization_id: organization, project_id: project, environment_id: environment, api_key_id: keys[i % keys.length] ?? "" }, prefixedId("req"));

const dir = mkdtempSync(join(tmpdir(), "troupe-ledger-append-"));
const ledger = new EmbeddedLedgerStore(dir);
const batches: UsageRecord[][] = [];
const batchSize = Number(args.get("batch") ?? 1024);
for (let i = 0; i < total; i += batchSize) batches.push(Array.from({ length: batchSize }, (_, j) => record(i + j)));
const cpu = process.cpuUsage();
const started = performance.now();
const perCommit = Number(args.get("per-commit") ?? 1);
for (let b = 0; b < batches.length; b += perCommit) await Promise.all(batches.slice(b, b + perCommit).map((batch) => ledger.append(batch)));
const elapsed = performance.now() - started;
const used = process.cpuUsage(cpu);
await ledger.close();
const bytes = statSync(join(dir, "billing", "ledger.lmdb")).blocks * 512;
const n = batches.length * batchSize;
console.log(`${root}: ${n} records, ${(((used.user + used.system) / n) as number).toFixed(1)} µs CPU per record (${((elapsed * 1000) / n).toFixed(1)} µs wall), ledger file ${(bytes / n).toFixed(0)} bytes per record`);
