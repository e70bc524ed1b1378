// The per-call ledger entry as stored, in one place for both ledger stores:
// a compact form of a UsageRecord, and the generations that bound how long
// entries are kept (docs/operations/usage-retention.md).
//
// Compact: the fields every call of one key, model and provider repeats
// (organization, environment, key, live, category, model, provider) are one
// small integer, a "dimension" stored once per project; the entry keeps the
// call's own figures only. Usage reports never read entries: they come from
// the aggregate counters (one row per day × live × category × model ×
// environment × key), so entries serve idempotency and audits.
//
// Generations: an entry is written into the generation of the time it is
// appended (the retention window cut in G = generationsPerWindow parts), and
// a generation is deleted whole once the (G + 1)th after it begins. So every
// entry is kept at least the retention window and at most 1 + 1/G times it,
// and deleting is one drop per generation (lmdb) or one key expiry (Redis),
// never a scan. What is held at any moment is the calls of the last window
// plus at most 1/G of one: the finer the generations, the smaller the saw
// tooth (G = 2 held 1–1.5 windows), at the price of G + 1 lookups per
// record for the idempotency check (docs/operations/usage-retention.md).
// The entry is also the usage_key's idempotency mark: a record appended
// again while any live generation holds its key is not billed again.
import { SCHEMA_VERSION } from "../core/schema-version.ts";
import type { UsageCategory, UsageRecord } from "../providers/usage.ts";
import { unitsMicro } from "./ledger.ts";

/** USAGE_RECORD_RETENTION_SECONDS's default: 7 days. */
export const defaultRetentionMs = 7 * 24 * 3600_000;

/** The retention window is cut in this many generations (the held amount varies by 1/G of a window). */
export const generationsPerWindow = 4;

/** Live generations: the current one and the G before it (the oldest is still within the window). */
export const liveGenerations = generationsPerWindow + 1;

/** The fields an entry shares with every call of its dimension. */
export type Dimension = Pick<
  UsageRecord,
  "organization_id" | "project_id" | "environment_id" | "api_key_id" | "live" | "category" | "model" | "provider" | "cache" | "byok"
>;

/**
 * A call's own figures: [dimension id, created_at (ms), input tokens, output
 * tokens, units (millionths), cost (nano-dollars), schema version]. The
 * version comes seventh, so a later format can add fields before it and
 * still tell its entries from these (core/schema-version.ts).
 *
 * A call with prompt-cache counts appends them after the version: [...,
 * cached input tokens, cache-written input tokens]. Optional trailing
 * fields need no new version: an entry without them (every one written
 * before, and a call that used no cache) reads as 0 of each, and a reader
 * of the previous release takes the first seven and ignores the rest.
 */
export type CompactEntry = [number, number, number, number, number, number, number] | [number, number, number, number, number, number, number, number, number];

/** A dimension's identity within its project (tabs never occur in ids or model names). */
export function dimensionKey(r: UsageRecord): string {
  const base = `${r.organization_id}\t${r.environment_id}\t${r.api_key_id}\t${r.live ? "1" : "0"}\t${r.category}\t${r.model}\t${r.provider}`;
  // Cache hits and BYOK calls are dimensions of their own, named by two trailing fields; every other call keeps the key it always had.
  return r.cache || r.byok ? `${base}\t${r.cache ?? ""}\t${r.byok ? "1" : ""}` : base;
}

export function parseDimensionKey(projectId: string, key: string): Dimension {
  const [organization_id = "", environment_id = "", api_key_id = "", live = "0", category = "chat", model = "", provider = "", cache = "", byok = ""] = key.split("\t");
  return {
    ...{ organization_id, project_id: projectId, environment_id, api_key_id, live: live === "1", category: category as UsageCategory, model, provider },
    ...(cache === "hit" ? { cache: "hit" as const } : {}),
    ...(byok === "1" ? { byok: true as const } : {}),
  };
}

/** `createdMs`: the record's created_at, already parsed by a caller that needed it too. */
export function compactEntry(r: UsageRecord, dimension: number, createdMs = Date.parse(r.created_at)): CompactEntry {
  const cached = r.cached_input_tokens ?? 0;
  const written = r.cache_write_input_tokens ?? 0;
  if (cached === 0 && written === 0) return [dimension, createdMs, r.input_tokens, r.output_tokens, unitsMicro(r), r.cost_nanos, SCHEMA_VERSION];
  return [dimension, createdMs, r.input_tokens, r.output_tokens, unitsMicro(r), r.cost_nanos, SCHEMA_VERSION, cached, written];
}

/** Redis keeps an entry as one short string. */
export function entryText(entry: CompactEntry): string {
  return entry.join(",");
}

export function parseEntryText(text: string): CompactEntry {
  const [d = 0, t = 0, i = 0, o = 0, u = 0, c = 0, s = SCHEMA_VERSION, r = 0, w = 0] = text.split(",").map(Number);
  return r === 0 && w === 0 ? [d, t, i, o, u, c, s] : [d, t, i, o, u, c, s, r, w];
}

/** The usage record an entry stands for (request_id: the usage_key up to its call number). */
export function expandEntry(usageKey: string, entry: CompactEntry, dimension: Dimension): UsageRecord {
  const [, createdMs, input, output, units, cost, , cached = 0, written = 0] = entry;
  const hash = usageKey.lastIndexOf("#");
  return {
    ...dimension,
    input_tokens: input,
    ...(cached > 0 ? { cached_input_tokens: cached } : {}),
    ...(written > 0 ? { cache_write_input_tokens: written } : {}),
    output_tokens: output,
    units: units / 1_000_000,
    cost_usd: cost / 1e9,
    cost_nanos: cost,
    request_id: hash > 0 ? usageKey.slice(0, hash) : usageKey,
    usage_key: usageKey,
    created_at: new Date(createdMs).toISOString(),
  };
}

/** A generation lasts 1/G of the retention window. */
export function generationMs(retentionMs: number): number {
  return Math.max(1, Math.floor(retentionMs / generationsPerWindow));
}

/** When generation `g` begins (ms): Redis names a generation's hash by it, a time whatever the generation length. */
export function generationStartMs(g: number, retentionMs: number): number {
  return g * generationMs(retentionMs);
}

export function generationOf(nowMs: number, retentionMs: number): number {
  return Math.floor(nowMs / generationMs(retentionMs));
}

/** When generation `g` may be deleted: once generation g + G + 1 begins (its last entry is then older than the window). */
export function generationExpiresAtMs(g: number, retentionMs: number): number {
  return (g + liveGenerations) * generationMs(retentionMs);
}

/** Audits read entries in the order calls were made. */
export function byCreation(a: UsageRecord, b: UsageRecord): number {
  return a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.usage_key < b.usage_key ? -1 : a.usage_key > b.usage_key ? 1 : 0;
}
