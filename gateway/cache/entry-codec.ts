// How a cache entry is written to a store and read back: JSON, deflated
// (answers are text; a 2 KB answer stores in well under 1 KB), parsed with
// zod on the way back (a corrupt or foreign value is a miss, never an
// answer). Small values are (de)compressed inline — a few microseconds —
// larger ones on libuv's thread pool so no request stalls the event loop.
import { promisify } from "node:util";
import { deflate, deflateSync, inflate, inflateSync } from "node:zlib";
import { z } from "zod";
import { chatResultSchema, embedResultSchema } from "../../providers/types.ts";
import type { CacheEntry } from "./types.ts";

const deflateAsync = promisify(deflate);
const inflateAsync = promisify(inflate);
/** Above this many bytes the work goes to the thread pool (16 KiB: ~50 µs of deflate inline). */
const inlineBytes = 16 * 1024;

const reasoningBlockSchema = z.object({ provider: z.string(), text: z.string(), signature: z.string().optional(), redacted: z.string().optional() });
const extrasSchema = z
  .object({
    reasoning: z.array(reasoningBlockSchema).optional(),
    cached_input_tokens: z.number().optional(),
    cache_write_input_tokens: z.number().optional(),
    reasoning_tokens: z.number().optional(),
  })
  .optional();

const scopeSchema = z.object({ organization_id: z.string(), project_id: z.string(), environment_id: z.string() });
export const cacheEntrySchema = z.object({
  scope: scopeSchema,
  answer: z.discriminatedUnion("kind", [
    z.object({ kind: z.literal("chat"), result: chatResultSchema.extend({ extras: extrasSchema }) }),
    z.object({ kind: z.literal("embedding"), result: embedResultSchema }),
  ]),
  stored_ms: z.number(),
  expires_ms: z.number(),
});

/** The stored bytes of an entry, and the size of its JSON (what the per-entry limit bounds, before any work on it). */
export async function encodeEntry(entry: CacheEntry): Promise<{ bytes: Buffer; jsonBytes: number }> {
  const json = Buffer.from(JSON.stringify(entry));
  const bytes = json.length <= inlineBytes ? deflateSync(json) : await deflateAsync(json);
  return { bytes, jsonBytes: json.length };
}

/** The entry these bytes hold; undefined when they are not one (the caller counts it as a miss). */
export function decodeEntry(bytes: Buffer): CacheEntry | undefined | Promise<CacheEntry | undefined> {
  try {
    if (bytes.length > inlineBytes / 4) return inflateAsync(bytes).then(parseEntry, () => undefined);
    return parseEntry(inflateSync(bytes));
  } catch {
    return undefined;
  }
}

/** The same, inline whatever the size: for a store's start, before it serves anything. */
export function decodeEntrySync(bytes: Buffer): CacheEntry | undefined {
  try {
    return parseEntry(inflateSync(bytes));
  } catch {
    return undefined;
  }
}

/** Each decoded entry's JSON size: a hit's bytes for /metrics without serialising the answer again. */
const jsonSizes = new WeakMap<CacheEntry, number>();

/** The JSON bytes `entry` was decoded from (0 for an entry not decoded here). */
export function entryJsonBytes(entry: CacheEntry): number {
  return jsonSizes.get(entry) ?? 0;
}

/** The JSON text of a decoded entry, to keep in memory for `trustedEntry`. */
export function entryJson(entry: CacheEntry): string {
  return JSON.stringify(entry);
}

/** An entry from JSON this process wrote from a decoded (validated) entry: parsed, not validated again; a fresh object each time, so no caller's change reaches the next hit. */
export function trustedEntry(json: string): CacheEntry {
  const entry = JSON.parse(json) as CacheEntry;
  jsonSizes.set(entry, json.length);
  return entry;
}

function parseEntry(json: Buffer): CacheEntry | undefined {
  try {
    const parsed = cacheEntrySchema.safeParse(JSON.parse(json.toString("utf8")));
    if (!parsed.success) return undefined;
    const entry = parsed.data as CacheEntry;
    jsonSizes.set(entry, json.length);
    return entry;
  } catch {
    return undefined;
  }
}

/** True when a stored entry is this scope's and still live. */
export function servable(entry: CacheEntry, organizationId: string, projectId: string, environmentId: string, nowMs: number): boolean {
  const s = entry.scope;
  return s.organization_id === organizationId && s.project_id === projectId && s.environment_id === environmentId && entry.expires_ms > nowMs;
}
