// A key's model allowlist as the router applies it (docs/guides/access-control.md):
// the patterns a key's `models` holds — model ids, globs (`gpt-4.1*`,
// `claude-*`) and tiers (`tier:small`) — as a candidate filter. Planning
// drops every model the filter refuses, so `auto`, `cost`, `latency`,
// `model: null` and each fallback pick only allowed models, and a request
// naming another model is 403 model_not_allowed.
//
// The filter reaches the router two ways: explicitly in the call options
// (`allowModel`, an agent turn's key, which runs outside the request), or
// from the request's async context (`withModelAllowlist`, set once by the
// route runner for a key with an allowlist), so every route and mount that
// plans through the router is covered without each passing it along.
import { AsyncLocalStorage } from "node:async_hooks";
import type { ModelEntry } from "./catalogue.ts";

/** True for the models a key may use. */
export type ModelFilter = (model: ModelEntry) => boolean;

/** What a key's `models` may hold, described for the 4xx and the docs. */
export const allowlistPatternHelp = "a model id, a glob with * (gpt-4.1*, claude-*) or a tier (tier:small, tier:medium, tier:large)";

const tierPrefix = "tier:";

/** The filter of a key's `models` (null: every model; no filter). */
export function modelFilterOf(patterns: readonly string[] | null | undefined): ModelFilter | undefined {
  if (!patterns) return undefined;
  const tiers = new Set<string>();
  const exact = new Set<string>();
  const globs: RegExp[] = [];
  for (const p of patterns) {
    if (p.startsWith(tierPrefix)) tiers.add(p.slice(tierPrefix.length));
    else if (p.includes("*")) globs.push(globToRegExp(p));
    else exact.add(p);
  }
  const filter: ModelFilter = (m) => exact.has(m.id) || tiers.has(m.tier) || globs.some((g) => g.test(m.id));
  return Object.assign(filter, { patterns: [...patterns] });
}

const filterByPatterns = new WeakMap<readonly string[], ModelFilter>();

/** The filter of a key record's `models`, built once per record (cached records are reused across requests). */
export function allowlistOfKey(key: { models: readonly string[] | null }): ModelFilter | undefined {
  if (!key.models) return undefined;
  let filter = filterByPatterns.get(key.models);
  if (!filter) {
    filter = modelFilterOf(key.models);
    if (filter) filterByPatterns.set(key.models, filter);
  }
  return filter;
}

/** The patterns a filter was made from (for the 403's message), when it came from modelFilterOf. */
export function patternsOf(filter: ModelFilter): readonly string[] | undefined {
  return (filter as ModelFilter & { patterns?: readonly string[] }).patterns;
}

function globToRegExp(glob: string): RegExp {
  const escaped = glob.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, "\\$&"));
  return new RegExp(`^${escaped.join(".*")}$`);
}

const requestAllowlist = new AsyncLocalStorage<ModelFilter>();

/** Runs `fn` (a request's handling) with `filter` as the allowlist every plan inside it applies. */
export function withModelAllowlist<T>(filter: ModelFilter, fn: () => T): T {
  return requestAllowlist.run(filter, fn);
}

/** The allowlist of the request being handled, if its key has one. */
export function currentModelAllowlist(): ModelFilter | undefined {
  return requestAllowlist.getStore();
}
