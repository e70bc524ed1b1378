// The merge of several replicas' pages (tenancy/request-log-replicas.ts),
// on two real stores read in bounded steps: a replica whose page stopped
// short at its scan limit holds the merged page at its position, so a rare
// filter paged to its end lists every match of both, newest first, once.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import type { RequestLogEntry } from "../../tenancy/request-log-entry.ts";
import { mergePages } from "../../tenancy/request-log-replicas.ts";
import { RequestLogStore, type RequestLogFilter } from "../../tenancy/request-log-store.ts";
import { logEntry } from "../support/request-log-entry.ts";

const start = Date.UTC(2030, 0, 10, 12, 0, 0);
const clock = { now: () => start + 1000 * 1000 };

function entry(id: string, createdMs: number, status: number): RequestLogEntry {
  return logEntry(id, createdMs, { status });
}

function open(): RequestLogStore {
  // A page reads at most 10 index rows per store.
  const store = new RequestLogStore(mkdtempSync(join(tmpdir(), "reqlog-replicas-")), clock, { retentionMs: 86_400_000, maxEntries: 1_000_000, scanLimit: 10 });
  t.teardown(() => store.close());
  return store;
}

t.test("a rare filter paged across two replicas in bounded steps: every match once, newest first", async (t) => {
  const a = open();
  const b = open();
  // Replica a: an answer a second for 100 s, a 502 every 8th (its 10 rows a page span 10 s); replica b: a 502 every 5 s (its 4 a page span 20 s).
  const atA = Array.from({ length: 100 }, (_, i) => entry(`a${String(i).padStart(3, "0")}`, start + i * 1000 + 1, i % 8 === 0 ? 502 : 200));
  const atB = Array.from({ length: 20 }, (_, i) => entry(`b${String(i).padStart(2, "0")}`, start + i * 5000, 502));
  await a.append(atA);
  await b.append(atB);
  const filter: RequestLogFilter = { status: 502, api_key_id: "key_a" };
  const expected = [...atA, ...atB]
    .filter((e) => e.status === 502)
    .sort((x, y) => y.created_ms - x.created_ms)
    .map((e) => e.request_id);
  t.equal(expected.length, 33, "13 of a's and 20 of b's");

  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const merged = mergePages([a.page("prj_a", filter, 4, cursor), b.page("prj_a", filter, 4, cursor)], 4);
    t.ok(merged.entries.length <= 4, "never past the limit");
    seen.push(...merged.entries.map((e) => e.request_id));
    cursor = merged.nextCursor;
    pages += 1;
  } while (cursor !== null && pages < 100);
  t.same(seen, expected, "the merged pages are the filtered log of both, in order");
});
