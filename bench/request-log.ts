// The request log's read path at scale: fills the store with N entries
// (default 1,000,000) of one project over the retention window, then times
// filtered pages of 50 — as GET /v1/projects/{id}/requests reads them — and
// prints p50/p99 per filter. The target is ≤ 50 ms p99 at 1,000,000.
// With --soak SECONDS it instead writes 2,000 entries a second for that long
// on the real clock with a short retention (--retention SECONDS, default 12)
// and prints, every 5 s, the entries held, the generations and the file's
// size: after one retention window both stay flat (generations are dropped
// whole and lmdb reuses their pages).
// With --write FLUSHES it instead times the write path as the gateway drives
// it: FLUSHES batches of --batch entries (default 20; the writer flushes
// every 500 ms whatever calls ended) at the current time, and prints the
// main thread's busy time per entry (event-loop utilization: the append's
// encoding and lmdb puts, not the commit's own thread).
// Usage: npm run bench:request-log -- [--entries N] [--queries Q] | [--soak SECONDS [--retention SECONDS]] | [--write FLUSHES [--batch B]]
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fmt, summarize } from "../load/stats.ts";
import type { RequestLogEntry } from "../tenancy/request-log-entry.ts";
import { RequestLogStore, type RequestLogFilter } from "../tenancy/request-log-store.ts";

const { values } = parseArgs({
  options: { entries: { type: "string", default: "1000000" }, queries: { type: "string", default: "200" }, soak: { type: "string" }, write: { type: "string" }, batch: { type: "string", default: "20" }, retention: { type: "string", default: "12" } },
});
const total = Number(values.entries);
const queries = Number(values.queries);
const day = 86_400_000;
const now = Date.UTC(2030, 5, 15);
const clock = { now: () => now };
const dir = mkdtempSync(join(tmpdir(), "bench-request-log-"));
const store = new RequestLogStore(dir, clock, { retentionMs: 7 * day, maxEntries: total * 2 });
const keys = Array.from({ length: 20 }, (_, i) => `key_${i}`);
const models = ["gpt-4.1", "gpt-4.1-mini", "claude-sonnet-4", "gemini-2.5-flash", "mistral-small"];
const providers = ["openai", "anthropic", "gemini"];

function entry(n: number): RequestLogEntry {
  // Spread over the last 6 days, newest last; 1 in 50 calls fails upstream, 1 in 200 is a 400.
  const failed = n % 50 === 0;
  const invalid = n % 200 === 7;
  return {
    request_id: `req_${n.toString(36)}`,
    created_ms: now - 6 * day + Math.floor((n / total) * 6 * day),
    organization_id: "org_bench",
    project_id: "prj_bench",
    environment_id: "env_bench",
    api_key_id: keys[n % keys.length] ?? "",
    live: true,
    method: "POST",
    route: "/v1/chat/completions",
    model: models[n % models.length] ?? null,
    provider: providers[n % providers.length] ?? null,
    deployment: null,
    status: failed ? 502 : invalid ? 400 : 200,
    error_code: failed ? "provider_error" : invalid ? "invalid_request" : null,
    latency_ms: 20 + (n % 900),
    ttfb_ms: 10,
    input_tokens: 100,
    output_tokens: 40,
    cached_input_tokens: 0,
    cost_nanos: 12_345,
    cache: null,
    byok: null,
  };
}

if (values.soak !== undefined) {
  await soak(Number(values.soak), Number(values.retention));
  process.exit(0);
}

if (values.write !== undefined) {
  await write(Number(values.write), Number(values.batch));
  process.exit(0);
}

async function write(flushes: number, size: number): Promise<void> {
  const writeDir = mkdtempSync(join(tmpdir(), "bench-request-log-write-"));
  const writeStore = new RequestLogStore(writeDir, clock, { retentionMs: 7 * day, maxEntries: 10_000_000 });
  let n = 0;
  const batchAt = (): RequestLogEntry[] => Array.from({ length: size }, () => ({ ...entry(n), request_id: `req_write_${n++}`, created_ms: now }));
  // A warm-up of a tenth, so the figures are the JIT-compiled path's.
  for (let i = 0; i < Math.max(1, flushes / 10); i++) await writeStore.append(batchAt());
  const batches = Array.from({ length: flushes }, batchAt);
  const before = performance.eventLoopUtilization();
  const t0 = performance.now();
  for (const b of batches) await writeStore.append(b);
  const wallMs = performance.now() - t0;
  const busy = performance.eventLoopUtilization(before);
  const entries = flushes * size;
  console.log(`write: ${flushes} flushes of ${size}: main thread ${fmt((busy.active * 1000) / entries, 1)} us/entry busy, ${fmt((wallMs * 1000) / entries, 1)} us/entry wall`);
  await writeStore.close();
  rmSync(writeDir, { recursive: true, force: true });
}

async function soak(seconds: number, retentionS: number): Promise<void> {
  const soakDir = mkdtempSync(join(tmpdir(), "bench-request-log-soak-"));
  const soakStore = new RequestLogStore(soakDir, { now: () => Date.now() }, { retentionMs: retentionS * 1000, maxEntries: 10_000_000 });
  const file = join(soakDir, "request-log", "request-log.lmdb");
  const endAt = Date.now() + seconds * 1000;
  let n = 0;
  let nextReport = Date.now() + 5000;
  console.log(`soak: ${seconds} s, 2,000 entries/s, retention ${retentionS} s`);
  console.log(`${"t (s)".padStart(6)} ${"written".padStart(9)} ${"held".padStart(8)} ${"gens".padStart(5)} ${"file MB".padStart(8)}`);
  const began = Date.now();
  while (Date.now() < endAt) {
    const tick = Date.now();
    await soakStore.append(Array.from({ length: 200 }, () => ({ ...entry(n), request_id: `req_soak_${n++}`, created_ms: Date.now() })));
    if (Date.now() >= nextReport) {
      nextReport += 5000;
      const size = soakStore.size();
      console.log(`${fmt((Date.now() - began) / 1000, 0).padStart(6)} ${String(n).padStart(9)} ${String(size.entries).padStart(8)} ${String(size.generations).padStart(5)} ${fmt(statSync(file).size / 1e6, 1).padStart(8)}`);
    }
    await new Promise((r) => setTimeout(r, Math.max(0, 100 - (Date.now() - tick))));
  }
  await soakStore.close();
  rmSync(soakDir, { recursive: true, force: true });
}

const fillStart = performance.now();
const batch = 10_000;
for (let i = 0; i < total; i += batch) {
  await store.append(Array.from({ length: Math.min(batch, total - i) }, (_, j) => entry(i + j)));
}
const fillS = (performance.now() - fillStart) / 1000;
console.log(`filled ${store.size().entries.toLocaleString("en")} entries in ${fmt(fillS, 1)} s (${fmt(total / fillS, 0)}/s)`);

const filters: [string, RequestLogFilter][] = [
  ["none", {}],
  ["api_key_id", { api_key_id: "key_3" }],
  ["model", { model: "claude-sonnet-4" }],
  ["status=502", { status: 502 }],
  ["error_code=invalid_request", { error_code: "invalid_request" }],
  ["model + provider", { model: "gpt-4.1", provider: "openai" }],
  ["api_key_id + status=502", { api_key_id: "key_0", status: 502 }],
  ["last day (from/to)", { fromMs: now - day, toMs: now - day / 2 }],
  ["a member's 2 keys", { keyIds: new Set(["key_1", "key_2"]) }],
];
console.log(`${"filter".padEnd(28)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)}  rows/page (${queries} pages of 50 each)`);
for (const [name, filter] of filters) {
  const ms: number[] = [];
  let rows = 0;
  let after: string | null = null;
  for (let q = 0; q < queries; q++) {
    const t0 = performance.now();
    const page = store.page("prj_bench", filter, 50, after);
    ms.push(performance.now() - t0);
    rows += page.entries.length;
    // Half the reads are first pages, half follow the cursor (deeper pages cost the same).
    after = q % 2 === 0 ? page.nextCursor : null;
  }
  const s = summarize(ms);
  // The first read of a filter is shown apart: it pages the index's lmdb pages in from disk (a cold cache).
  console.log(`${name.padEnd(28)} ${fmt(s.p50).padStart(8)} ${fmt(s.p99).padStart(8)}  ${fmt(rows / queries, 1)}   first: ${fmt(ms[0] ?? 0)} ms`);
}
await store.close();
rmSync(dir, { recursive: true, force: true });
