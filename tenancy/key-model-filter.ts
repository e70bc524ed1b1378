// The model allowlist of a key, read for each model call of an agent turn
// (the turn runs outside its request, so the route's admitted key is not at
// hand). It reads the stored key each time, so a PATCH still applies to the
// next call on every replica; but it validates only the `models` field, which
// takes about a third off the read (docs/benchmarks.md): the turn's key was
// parsed whole when its request was admitted.
import { TroupeError } from "../core/errors.ts";
import type { DataStore } from "../core/data-store.ts";
import { modelFilterOf, type ModelFilter } from "../providers/router-allowlist.ts";
import { keys } from "./records.ts";
import { apiKeyRecordSchema } from "./types.ts";

const storedModelsSchema = apiKeyRecordSchema.pick({ models: true });

/** Filters built from the same patterns are the same function: built once (bounded, for many distinct allowlists). */
const filtersByPatterns = new Map<string, ModelFilter>();
const filtersKept = 1_000;

/** The current allowlist filter of a key; undefined: every model, or an unknown key. */
export async function storedKeyModelFilter(store: DataStore, keyId: string): Promise<ModelFilter | undefined> {
  const raw = await store.get(keys.apiKey(keyId));
  if (raw === undefined || raw === null) return undefined;
  const parsed = storedModelsSchema.safeParse(raw);
  if (!parsed.success) throw new TroupeError("internal_error", "stored record apikey is corrupt");
  const patterns = parsed.data.models;
  if (!patterns) return undefined;
  const id = JSON.stringify(patterns);
  let filter = filtersByPatterns.get(id);
  if (!filter) {
    filter = modelFilterOf(patterns);
    if (!filter) return undefined;
    if (filtersByPatterns.size >= filtersKept) filtersByPatterns.clear();
    filtersByPatterns.set(id, filter);
  }
  return filter;
}
