// Which models may serve a request, in the order the router tries them
// (docs/api/models-and-routing.md): the named model and its equivalents on
// other providers, or every capable model (auto, cost, latency), one model
// per provider, only configured providers whose breaker is not open. Says
// why when none can: 400 for a request no model could serve as asked or
// only unconfigured providers could (naming the field at fault), 503 only
// when configured, capable providers are failing: a retry may get past that.
import { invalidRequest, TroupeError, type FieldIssue } from "../core/errors.ts";
import {
  capabilityIssue,
  capabilityProblem,
  fieldNeedsOf,
  sortPrice,
  type Catalogue,
  type Category,
  type FieldNeed,
  type ModelEntry,
  type Need,
} from "./catalogue.ts";
import { adapterServesCategory } from "./media-types.ts";
import { patternsOf, type ModelFilter } from "./router-allowlist.ts";
import type { HealthView, LatencyTracker } from "./router-health.ts";
import type { ProviderAdapter, RoutingStrategy } from "./types.ts";

/** What planning reads from the router. */
export interface PlanSource {
  catalogue: Catalogue;
  adapters: ReadonlyMap<string, ProviderAdapter>;
  latency: LatencyTracker;
  healthOf(provider: string): HealthView;
  settingsOf(provider: string): readonly string[];
}

/** The model's provider is configured with an adapter that serves `category`. */
export function adapterServes(adapters: ReadonlyMap<string, ProviderAdapter>, m: ModelEntry, category: Category): boolean {
  const a = adapters.get(m.provider);
  return a !== undefined && adapterServesCategory(a, category);
}

/**
 * The models to try, in order. Throws 400 for requests no model could
 * serve as asked (unknown model, wrong category, missing capability,
 * manual without a model) and 503 when every capable provider is unavailable.
 * `allow` (a key's model allowlist, router-allowlist.ts) removes every model
 * it refuses before anything else is decided: 403 model_not_allowed for a
 * named model it refuses, or when it leaves no capable model.
 */
export function planModels(src: PlanSource, model: string | null | undefined, strategy: RoutingStrategy, need: Need, allow?: ModelFilter): ModelEntry[] {
  const serves = (m: ModelEntry) => adapterServes(src.adapters, m, need.category);
  const allowed = (m: ModelEntry) => allow === undefined || allow(m);
  let pool: ModelEntry[];
  if (model) {
    const entry = src.catalogue.get(model);
    if (!entry) throw invalidRequest([{ path: "body.model", message: `unknown model ${model} (GET /v1/models lists them)` }]);
    if (!allowed(entry)) throw notAllowed(allow, `model ${model}`);
    const issue = capabilityIssue(entry, need);
    if (issue) throw invalidRequest([issue]);
    if (strategy === "manual") {
      if (!src.adapters.has(entry.provider) || !serves(entry)) throw notConfigured(src, [entry]);
      const h = src.healthOf(entry.provider);
      if (!h.accepting) {
        const retryAfter = h.retryAfterSeconds();
        throw new TroupeError(
          "no_provider_available",
          `provider ${entry.provider} is failing (circuit breaker open); retry later or use routing_strategy auto`,
          retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter },
        );
      }
      return [entry];
    }
    // Equivalents: same category and tier, the needed capabilities, another provider.
    // Simulated models never stand in for real ones (no silent fake answers).
    const equivalents = src.catalogue
      .ofCategory(need.category)
      .filter(
        (m) =>
          m.id !== entry.id &&
          m.tier === entry.tier &&
          m.provider !== entry.provider &&
          allowed(m) &&
          (entry.provider === "simulated" || m.provider !== "simulated") &&
          capabilityProblem(m, need) === undefined,
      );
    pool = [entry, ...equivalents];
    if (strategy !== "auto") pool = order(src.latency, pool, strategy);
  } else {
    if (strategy === "manual") {
      throw invalidRequest([{ path: "body.model", message: "routing_strategy manual needs a model" }]);
    }
    const anyCapable = src.catalogue.ofCategory(need.category).filter((m) => capabilityProblem(m, need) === undefined);
    const capable = anyCapable.filter(allowed);
    if (capable.length === 0 && anyCapable.length > 0) throw notAllowed(allow, `any model that can serve this ${need.category} request`);
    const configured = capable.filter(serves);
    if (configured.length === 0) throw unservable(src, need, capable);
    const real = configured.filter((m) => m.provider !== "simulated");
    // Simulated models serve only when no real provider can (or when named).
    pool = real.length > 0 ? real : configured;
    if (strategy !== "auto") pool = order(src.latency, pool, strategy);
  }
  // One model per provider: a fallback should change provider, not model.
  const seen = new Set<string>();
  const candidates = pool.filter((m) => {
    if (seen.has(m.provider) || !serves(m) || !src.healthOf(m.provider).accepting) return false;
    seen.add(m.provider);
    return true;
  });
  if (candidates.length === 0) {
    // Nothing in the pool is configured at all: not a passing condition, so a 4xx that says what to set.
    // Some is, but failing: 503, worth retrying.
    if (pool.length > 0 && pool.every((m) => !src.adapters.has(m.provider) || !serves(m))) throw notConfigured(src, pool);
    throw new TroupeError(
      "no_provider_available",
      `no configured, healthy provider can serve this ${need.category} request` + (model ? ` (model ${model})` : ""),
    );
  }
  return candidates;
}

/** 403 model_not_allowed: the key's allowlist refuses `what`. */
function notAllowed(allow: ModelFilter | undefined, what: string): TroupeError {
  const patterns = allow ? patternsOf(allow) : undefined;
  const list = patterns ? ` (its models: ${patterns.length > 0 ? patterns.join(", ") : "none"})` : "";
  return new TroupeError("model_not_allowed", `this API key may not use ${what}${list}`, patterns ? { details: { allowed_models: patterns } } : {});
}

/**
 * A request naming no model that no configured provider can serve as asked,
 * now or later: 400 naming the field at fault (a voice, a size, a JSON
 * answer), the catalogue's providers that would serve it and what the
 * configured ones take instead. `capable`: the catalogue's models that
 * could serve it, none of them configured.
 */
function unservable(src: PlanSource, need: Need, capable: readonly ModelEntry[]): TroupeError {
  const kind: Need = { category: need.category, ...(need.media ? { media: need.media } : {}) };
  // Configured models of the kind the route needs (speech models for speech): the fields decide.
  const eligible = src.catalogue
    .ofCategory(need.category)
    .filter((m) => adapterServes(src.adapters, m, need.category) && capabilityIssue(m, kind) === undefined);
  const elsewhere = unconfiguredHint(src, capable);
  if (eligible.length === 0) {
    const message = `no configured provider can serve this ${need.category} request` + (elsewhere ? `; it ${elsewhere}` : "; no model in the catalogue can");
    return invalidRequest([{ path: "body.model", message }]);
  }
  const fields = fieldNeedsOf(need);
  const blocking = fields.filter((f) => eligible.every((m) => f.problem(m) !== undefined));
  if (blocking.length === 0) {
    // Each field is taken by some configured model, never all of them by one.
    const issues = [...new Map(eligible.map((m) => capabilityIssue(m, need)!).map((i) => [`${i.path} ${i.message}`, i])).values()];
    const summary = issues.map((i) => `${i.path}: ${i.message}`).join("; ");
    return invalidRequest(issues, `no configured model takes these fields together: ${summary}` + (elsewhere ? `; this request ${elsewhere}` : ""));
  }
  return invalidRequest(blocking.map((f) => fieldIssue(f, eligible, fields, elsewhere)));
}

/** The 400 for one field no configured model takes: who would, and what the configured ones take. */
function fieldIssue(f: FieldNeed, eligible: readonly ModelEntry[], fields: readonly FieldNeed[], elsewhere: string | undefined): FieldIssue {
  let message = elsewhere ? `${f.asked} ${elsewhere}` : `no model offers ${f.asked}`;
  if (f.offers) {
    // The values of models that take every other field as asked; else of any configured model.
    const fitting = eligible.filter((m) => fields.every((g) => g === f || g.problem(m) === undefined));
    const values = [...new Set((fitting.length > 0 ? fitting : eligible).flatMap((m) => f.offers!.values(m)))];
    if (values.length > 0) message += `; ${f.offers.noun} the configured providers offer: ${values.join(", ")}`;
  }
  return { path: f.path, message };
}

/** "needs provider openai, which is not configured on this Troupe (set OPENAI_API_KEY to configure it)", or undefined when no model could. */
function unconfiguredHint(src: PlanSource, capable: readonly ModelEntry[]): string | undefined {
  const providers = [...new Set(capable.map((m) => m.provider))];
  if (providers.length === 0) return undefined;
  const settings = providers.flatMap((p) => src.settingsOf(p));
  const which = settings.length > 0 ? ` (set ${settings.join(" or ")} to configure ${providers.length > 1 ? "one" : "it"})` : "";
  const verb = providers.length > 1 ? "which are" : "which is";
  return `needs provider ${providers.join(" or ")}, ${verb} not configured on this Troupe${which}`;
}

/**
 * A request only unconfigured providers could serve: 400 naming the model
 * and the settings that would configure its provider (503 is kept for
 * configured providers that are failing, which a retry may get past).
 */
function notConfigured(src: PlanSource, pool: readonly ModelEntry[]): TroupeError {
  const [first] = pool;
  const providers = [...new Set(pool.map((m) => m.provider))];
  const settings = providers.flatMap((p) => src.settingsOf(p));
  const which = settings.length > 0 ? `; set ${settings.join(" or ")} to configure it` : "";
  const message = `model ${first?.id ?? "?"} needs provider ${providers.join(" or ")}, which is not configured on this Troupe${which}`;
  return invalidRequest([{ path: "body.model", message }]);
}

function order(latency: LatencyTracker, pool: ModelEntry[], strategy: RoutingStrategy): ModelEntry[] {
  const indexed = pool.map((m, i) => ({ m, i }));
  if (strategy === "cost") indexed.sort((a, b) => sortPrice(a.m) - sortPrice(b.m) || a.i - b.i);
  if (strategy === "latency") {
    // Models never measured go first, so every candidate gets measured once.
    const key = (m: ModelEntry) => latency.get(m.id) ?? -1;
    indexed.sort((a, b) => key(a.m) - key(b.m) || a.i - b.i);
  }
  return indexed.map((x) => x.m);
}
