// The ledger's compact per-call entry and its generations, as plain
// functions: the cases the store tests (embedded-ledger-store*.test.ts,
// ledger-retention.test.ts) reach only through whole appends, found by
// mutation testing (docs/testing.md). Every time here is a number handed in:
// the generations follow the numbers given, never today's date.
import t from "tap";
import { SCHEMA_VERSION } from "../../core/schema-version.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import {
  byCreation,
  compactEntry,
  defaultRetentionMs,
  dimensionKey,
  entryText,
  expandEntry,
  generationExpiresAtMs,
  generationMs,
  generationOf,
  generationStartMs,
  generationsPerWindow,
  liveGenerations,
  parseDimensionKey,
  parseEntryText,
  type CompactEntry,
  type Dimension,
} from "../../tenancy/ledger-entry.ts";
import { usageRecord } from "../support/usage-record.ts";

const base = "org_1\tenv_1\tkey_1\t1\tchat\tgpt-4.1-mini\topenai";

t.test("the retention defaults: 7 days, cut in 4 generations, 5 of them live", async (t) => {
  t.equal(defaultRetentionMs, 604_800_000);
  t.equal(generationsPerWindow, 4);
  t.equal(liveGenerations, 5);
});

t.test("a dimension's key: the seven shared fields, and two more for a cache hit or a BYOK call", async (t) => {
  t.equal(dimensionKey(usageRecord()), base);
  t.equal(dimensionKey(usageRecord({ live: false, category: "images", model: "dall-e-3" })), "org_1\tenv_1\tkey_1\t0\timages\tdall-e-3\topenai");
  t.equal(dimensionKey(usageRecord({ cache: "hit" })), `${base}\thit\t`);
  t.equal(dimensionKey(usageRecord({ byok: true })), `${base}\t\t1`);
  t.equal(dimensionKey(usageRecord({ cache: "hit", byok: true })), `${base}\thit\t1`);
  t.equal(dimensionKey(usageRecord({ cache: undefined, byok: undefined })), base, "absent fields keep the key calls always had");
});

t.test("a dimension's key reads back as the dimension", async (t) => {
  const plain: Dimension = {
    organization_id: "org_1",
    project_id: "prj_9",
    environment_id: "env_1",
    api_key_id: "key_1",
    live: true,
    category: "chat",
    model: "gpt-4.1-mini",
    provider: "openai",
  };
  t.strictSame(parseDimensionKey("prj_9", base), plain);
  t.strictSame(parseDimensionKey("prj_9", `${base}\thit\t`), { ...plain, cache: "hit" });
  t.strictSame(parseDimensionKey("prj_9", `${base}\t\t1`), { ...plain, byok: true });
  t.strictSame(parseDimensionKey("prj_9", `${base}\thit\t1`), { ...plain, cache: "hit", byok: true });
  // Fields other than the exact marks are no mark at all: no key for them, not an undefined one.
  const other = parseDimensionKey("prj_9", `${base}\tmiss\ttrue`);
  t.notOk("cache" in other, "a cache field other than hit is no cache hit");
  t.notOk("byok" in other, "a byok field other than 1 is no BYOK call");
  t.equal(parseDimensionKey("prj_9", "org\tenv\tkey\t0\tvideo\tm\tp").live, false);
  t.equal(parseDimensionKey("prj_9", "org\tenv\tkey\ttrue\tvideo\tm\tp").live, false, "only 1 is live");
  // A key short of fields (none written so, but never a throw): the missing ones take their defaults.
  t.strictSame(parseDimensionKey("prj_9", ""), {
    organization_id: "",
    project_id: "prj_9",
    environment_id: "",
    api_key_id: "",
    live: false,
    category: "chat",
    model: "",
    provider: "",
  });
  t.strictSame(parseDimensionKey("prj_9", "org\tenv\tkey\t1"), { organization_id: "org", project_id: "prj_9", environment_id: "env", api_key_id: "key", live: true, category: "chat", model: "", provider: "" });
  for (const r of [usageRecord({ project_id: "prj_9" }), usageRecord({ project_id: "prj_9", cache: "hit", byok: true, live: false, category: "agents" })]) {
    const { input_tokens: _i, output_tokens: _o, units: _u, cost_usd: _c, cost_nanos: _n, request_id: _r, usage_key: _k, created_at: _t, ...dimension } = r;
    t.strictSame(parseDimensionKey("prj_9", dimensionKey(r)), dimension, "a record's dimension round-trips");
  }
});

t.test("a compact entry: the call's own figures, the version seventh, cache counts only when there are some", async (t) => {
  const r = usageRecord({ input_tokens: 120, output_tokens: 34, units: 1.5, cost_nanos: 7777, created_at: "2026-03-15T10:00:00.000Z" });
  const createdMs = Date.UTC(2026, 2, 15, 10);
  t.strictSame(compactEntry(r, 3), [3, createdMs, 120, 34, 1_500_000, 7777, SCHEMA_VERSION], "created_at parsed when not handed in");
  t.strictSame(compactEntry(r, 3, 42), [3, 42, 120, 34, 1_500_000, 7777, SCHEMA_VERSION], "a created time handed in is used as is");
  t.strictSame(compactEntry({ ...r, cached_input_tokens: 0, cache_write_input_tokens: 0 }, 3, 42), [3, 42, 120, 34, 1_500_000, 7777, SCHEMA_VERSION], "zero counts write the old format");
  t.strictSame(compactEntry({ ...r, cached_input_tokens: 60 }, 3, 42), [3, 42, 120, 34, 1_500_000, 7777, SCHEMA_VERSION, 60, 0], "read tokens only");
  t.strictSame(compactEntry({ ...r, cache_write_input_tokens: 20 }, 3, 42), [3, 42, 120, 34, 1_500_000, 7777, SCHEMA_VERSION, 0, 20], "written tokens only");
  t.strictSame(compactEntry({ ...r, cached_input_tokens: 60, cache_write_input_tokens: 20 }, 3, 42), [3, 42, 120, 34, 1_500_000, 7777, SCHEMA_VERSION, 60, 20]);
});

t.test("an entry as text: comma-separated, and read back with the missing fields defaulted", async (t) => {
  const seven: CompactEntry = [3, 42, 120, 34, 1_500_000, 7777, 1];
  const nine: CompactEntry = [3, 42, 120, 34, 1_500_000, 7777, 1, 60, 20];
  t.equal(entryText(seven), "3,42,120,34,1500000,7777,1");
  t.equal(entryText(nine), "3,42,120,34,1500000,7777,1,60,20");
  t.strictSame(parseEntryText("3,42,120,34,1500000,7777,1"), seven);
  t.strictSame(parseEntryText("3,42,120,34,1500000,7777,1,60,20"), nine);
  t.strictSame(parseEntryText("3,42,120,34,1500000,7777,1,0,0"), seven, "two zero counts read as the old format");
  t.strictSame(parseEntryText("3,42,120,34,1500000,7777,1,60,0"), [3, 42, 120, 34, 1_500_000, 7777, 1, 60, 0]);
  t.strictSame(parseEntryText("3,42,120,34,1500000,7777,1,0,20"), [3, 42, 120, 34, 1_500_000, 7777, 1, 0, 20]);
  t.strictSame(parseEntryText("3,42"), [3, 42, 0, 0, 0, 0, SCHEMA_VERSION], "a short entry: zero figures, today's version");
  t.strictSame(parseEntryText("3,42,120,34,1500000,7777,2"), [3, 42, 120, 34, 1_500_000, 7777, 2], "the version as written");
});

t.test("an entry expands to the usage record it stands for", async (t) => {
  const dimension = parseDimensionKey("prj_9", base);
  const createdMs = Date.UTC(2026, 2, 15, 10, 30, 15, 250);
  t.strictSame(expandEntry("req_7#2", [3, createdMs, 120, 34, 1_500_000, 7777, 1], dimension), {
    ...dimension,
    input_tokens: 120,
    output_tokens: 34,
    units: 1.5,
    cost_usd: 0.000007777,
    cost_nanos: 7777,
    request_id: "req_7",
    usage_key: "req_7#2",
    created_at: "2026-03-15T10:30:15.250Z",
  });
  const cached = expandEntry("req_7", [3, createdMs, 120, 34, 0, 2_000_000_000, 1, 60, 20], dimension);
  t.equal(cached.cached_input_tokens, 60);
  t.equal(cached.cache_write_input_tokens, 20);
  t.equal(cached.cost_usd, 2);
  t.equal(cached.units, 0);
  t.equal(cached.request_id, "req_7", "no call number: the usage key is the request id");
  const readOnly = expandEntry("req_7", [3, createdMs, 120, 34, 0, 0, 1, 60, 0], dimension);
  t.equal(readOnly.cached_input_tokens, 60);
  t.notOk("cache_write_input_tokens" in readOnly, "no written tokens: no field");
  const writtenOnly = expandEntry("req_7", [3, createdMs, 120, 34, 0, 0, 1, 0, 20], dimension);
  t.notOk("cached_input_tokens" in writtenOnly, "no read tokens: no field");
  t.equal(writtenOnly.cache_write_input_tokens, 20);
  t.equal(expandEntry("turn#1#3", [3, 0, 0, 0, 0, 0, 1], dimension).request_id, "turn#1", "the call number is after the last #");
  t.equal(expandEntry("#3", [3, 0, 0, 0, 0, 0, 1], dimension).request_id, "#3", "a # at the start is no call number");
  t.equal(expandEntry("a#3", [3, 0, 0, 0, 0, 0, 1], dimension).request_id, "a", "one character before the #");
});

t.test("an entry round-trips a record through text", async (t) => {
  const r = usageRecord({ project_id: "prj_9", usage_key: "req_x#4", request_id: "req_x", cached_input_tokens: 5, cache_write_input_tokens: 6, units: 0.25, cost_nanos: 123_456, cost_usd: 0.000123456 });
  t.strictSame(expandEntry(r.usage_key, parseEntryText(entryText(compactEntry(r, 8))), parseDimensionKey("prj_9", dimensionKey(r))), r);
});

t.test("generations: a quarter of the window each, numbered from time 0", async (t) => {
  t.equal(generationMs(60_000), 15_000);
  t.equal(generationMs(61_003), 15_250, "rounded down");
  t.equal(generationMs(7), 1);
  t.equal(generationMs(3), 1, "never under 1 ms");
  t.equal(generationMs(0), 1);
  t.equal(generationStartMs(0, 60_000), 0);
  t.equal(generationStartMs(3, 60_000), 45_000);
  t.equal(generationStartMs(3, 3), 3, "of 1 ms generations");
  t.equal(generationOf(0, 60_000), 0);
  t.equal(generationOf(14_999, 60_000), 0);
  t.equal(generationOf(15_000, 60_000), 1);
  t.equal(generationOf(29_999, 60_000), 1);
  t.equal(generationOf(30_000, 60_000), 2);
  t.equal(generationOf(5, 3), 5, "of 1 ms generations");
  // Generation g is deleted once g + G + 1 begins: generation 2 (30–45 s) at 105 s, its last entry then 60 s old.
  t.equal(generationExpiresAtMs(2, 60_000), 105_000);
  t.equal(generationExpiresAtMs(0, 60_000), 75_000);
  t.equal(generationExpiresAtMs(2, 3), 7);
  const now = Date.UTC(2026, 2, 15, 10);
  const g = generationOf(now, defaultRetentionMs);
  t.ok(generationStartMs(g, defaultRetentionMs) <= now && now < generationStartMs(g + 1, defaultRetentionMs), "a time falls within its generation");
});

t.test("entries sort by creation, then by usage key", async (t) => {
  const at = (created_at: string, usage_key: string): UsageRecord => usageRecord({ created_at, usage_key });
  const early = "2026-03-15T10:00:00.000Z";
  const late = "2026-03-15T10:00:00.001Z";
  t.equal(byCreation(at(early, "b"), at(late, "a")), -1, "earlier first, whatever the keys");
  t.equal(byCreation(at(late, "a"), at(early, "b")), 1);
  t.equal(byCreation(at(early, "a"), at(early, "b")), -1, "the same time: by usage key");
  t.equal(byCreation(at(early, "b"), at(early, "a")), 1);
  t.equal(byCreation(at(early, "a"), at(early, "a")), 0);
  const sorted = [at(late, "a"), at(early, "c"), at(early, "a"), at(late, "0")].sort(byCreation).map((r) => `${r.created_at.slice(-6)} ${r.usage_key}`);
  t.strictSame(sorted, ["0.000Z a", "0.000Z c", "0.001Z 0", "0.001Z a"]);
});
