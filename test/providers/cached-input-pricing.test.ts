// Prompt-cache tokens are billed at the catalogue's cached and cache-write
// prices: the catalogue's prices, a usage record's cost, and the ledger
// entry that keeps the counts (old entries, without them, still read).
import t from "tap";
import { Catalogue, priceOf } from "../../providers/catalogue.ts";
import { usageRecord, type UsageContext } from "../../providers/usage.ts";
import { compactEntry, entryText, expandEntry, parseDimensionKey, parseEntryText, type CompactEntry } from "../../tenancy/ledger-entry.ts";

const catalogue = Catalogue.load();
const context: UsageContext = { organization_id: "org_1", project_id: "prj_1", environment_id: "env_1", api_key_id: "key_1", live: true, request_id: "req_1" };

t.test("every priced text model has a cached price at the published ratio", async (t) => {
  const ratios: Record<string, number> = { "gpt-4.1": 0.25, "gpt-4.1-mini": 0.25, "gpt-4.1-nano": 0.25, "gpt-4o": 0.5, "gpt-4o-mini": 0.5, "claude-sonnet-4-5": 0.1, "claude-opus-4-1": 0.1, "claude-haiku-4-5": 0.1, "gemini-2.5-pro": 0.25, "gemini-2.5-flash": 0.25, "gemini-2.5-flash-lite": 0.25 };
  for (const [id, ratio] of Object.entries(ratios)) {
    const p = catalogue.get(id)!.pricing;
    t.equal(p.cached_input_usd_per_unit, Math.round((p.input_usd_per_unit ?? 0) * ratio * 1e6) / 1e6, `${id}: cached = ${ratio}x input`);
    if (id.startsWith("claude")) t.equal(p.cache_write_input_usd_per_unit, (p.input_usd_per_unit ?? 0) * 1.25, `${id}: 5-minute write = 1.25x input`);
    else t.equal(p.cache_write_input_usd_per_unit, undefined, `${id}: no write price (the input price)`);
  }
});

t.test("cached and written tokens are priced apart from the rest of the input", async (t) => {
  const haiku = catalogue.get("claude-haiku-4-5")!;
  // 200 plain × $1 + 600 read × $0.10 + 200 written × $1.25 + 100 out × $5, per 1M tokens.
  t.equal(priceOf(haiku, { input_tokens: 1000, cached_input_tokens: 600, cache_write_input_tokens: 200, output_tokens: 100 }), 0.00101);
  t.equal(priceOf(haiku, { input_tokens: 1000, output_tokens: 100 }), 0.0015, "without cache counts: all input at the input price");
  // A model with no cache prices bills them at its input price.
  const compatible = { ...haiku, pricing: { unit: "1M tokens", input_usd_per_unit: 1, output_usd_per_unit: 5 } };
  t.equal(priceOf(compatible, { input_tokens: 1000, cached_input_tokens: 600, cache_write_input_tokens: 200, output_tokens: 100 }), 0.0015);
  // A report claiming more than the input bills no more than the input, reads first.
  t.equal(priceOf(haiku, { input_tokens: 100, cached_input_tokens: 150, cache_write_input_tokens: 50 }), 0.00001);
  t.equal(priceOf(haiku, { input_tokens: 100, cached_input_tokens: 60, cache_write_input_tokens: 90 }), (60 * 0.1 + 40 * 1.25) / 1e6);
});

t.test("a chat result's extras reach the record: exact nano-dollars, counts kept", async (t) => {
  const r = usageRecord(catalogue, context, "chat", { model: "gpt-4.1", provider: "openai", input_tokens: 2048, output_tokens: 10, extras: { cached_input_tokens: 1024 } }, 0);
  // 1024 × $2 + 1024 × $0.50 + 10 × $8, per 1M tokens = 2,640,000 nano-dollars.
  t.equal(r.cost_nanos, 2_640_000);
  t.equal(r.cached_input_tokens, 1024);
  t.equal(r.cache_write_input_tokens, undefined);
  const test = usageRecord(catalogue, { ...context, live: false }, "chat", { model: "gpt-4.1", provider: "openai", input_tokens: 2048, output_tokens: 10, extras: { cached_input_tokens: 1024 } }, 0);
  t.equal(test.cost_nanos, 0, "a test key is recorded unbilled");
  t.equal(test.cached_input_tokens, 1024, "with its counts");
});

t.test("ledger entries keep the counts after the version; entries without them read as before", async (t) => {
  const dimension = parseDimensionKey("prj_1", "org_1\tenv_1\tkey_1\t1\tchat\tclaude-haiku-4-5\tanthropic");
  const r = usageRecord(catalogue, context, "chat", { model: "claude-haiku-4-5", provider: "anthropic", input_tokens: 1000, output_tokens: 100, extras: { cached_input_tokens: 600, cache_write_input_tokens: 200 } }, 0);
  const entry = compactEntry(r, 3);
  t.same(entry.slice(6), [1, 600, 200], "version seventh, then read and written");
  const back = expandEntry("req_1", parseEntryText(entryText(entry)), dimension);
  t.equal(back.cached_input_tokens, 600);
  t.equal(back.cache_write_input_tokens, 200);
  t.equal(back.cost_nanos, 1_010_000);
  // What the previous release wrote: seven fields.
  const old: CompactEntry = [3, 0, 1000, 100, 0, 1_500_000, 1];
  t.same(parseEntryText("3,0,1000,100,0,1500000,1"), old);
  const oldRecord = expandEntry("req_1", old, dimension);
  t.equal(oldRecord.cached_input_tokens, undefined);
  t.equal(oldRecord.cost_nanos, 1_500_000);
  const plain = usageRecord(catalogue, context, "chat", { model: "claude-haiku-4-5", provider: "anthropic", input_tokens: 1000, output_tokens: 100 }, 0);
  t.equal(compactEntry(plain, 3).length, 7, "a call without cache counts writes the previous format");
});
