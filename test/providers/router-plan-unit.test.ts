// Which models may serve a request, in which order (providers/router-plan.ts),
// planned in process over a small catalogue written here: the named model and
// its equivalents, the strategies' orders, one model per provider, simulated
// models only as a last resort, the key's allowlist, and the 400/403/503 that
// say why no model can serve (naming the field at fault, the providers that
// would and the settings that configure them). Fast on purpose: a mutation
// run (docs/testing.md) runs this file once per mutant; planning through the
// whole router over real HTTP fakes is in router.test.ts.
import t from "tap";
import { TroupeError } from "../../core/errors.ts";
import { Catalogue, type FieldNeed, type ModelEntry, type Need } from "../../providers/catalogue.ts";
import { modelFilterOf, type ModelFilter } from "../../providers/router-allowlist.ts";
import { LatencyTracker, ProviderHealth, type HealthView } from "../../providers/router-health.ts";
import { adapterServes, planModels, type PlanSource } from "../../providers/router-plan.ts";
import type { ProviderAdapter, RoutingStrategy } from "../../providers/types.ts";
import { thrownBy } from "../support/thrown-by.ts";

type Tier = ModelEntry["tier"];

/** A text model at a price (USD per 1M tokens, in and out alike); what it can do is overridden per test. */
function text(id: string, provider: string, tier: Tier = "medium", usd = 1, capabilities: ModelEntry["capabilities"] = { streaming: true, tools: true, json_output: true }): ModelEntry {
  return {
    id,
    provider,
    category: "text",
    also: [],
    tier,
    capabilities,
    pricing: { unit: "1M tokens", input_usd_per_unit: usd, output_usd_per_unit: usd },
  };
}

function embedding(id: string, provider: string): ModelEntry {
  return { id, provider, category: "embedding", also: [], tier: "small", capabilities: { dimensions: 1536 }, pricing: { unit: "1M tokens", input_usd_per_unit: 0.1 } };
}

function speech(id: string, provider: string, voices: string[] | undefined): ModelEntry {
  return {
    id,
    provider,
    category: "audio",
    also: [],
    tier: "medium",
    capabilities: voices === undefined ? { transcription: true } : { voices },
    pricing: { unit: "character", usd_per_unit: 0.00001 },
  };
}

// Planning never calls an adapter: only which methods it has matters.
const unused = (): Promise<never> => Promise.reject(new Error("planning never calls an adapter"));

function chatAdapter(provider: string): ProviderAdapter {
  return { provider, chat: unused };
}

const adapterMakers = {
  chat: chatAdapter,
  embed: (provider: string): ProviderAdapter => ({ provider, embed: unused }),
  speech: (provider: string): ProviderAdapter => ({ provider, speech: unused }),
  transcribe: (provider: string): ProviderAdapter => ({ provider, transcribe: unused }),
};

interface SourceOptions {
  /** Provider → the one kind of call its adapter makes (chat when only named). */
  configured?: Record<string, keyof typeof adapterMakers>;
  /** Health views of providers that are not the default healthy breaker. */
  health?: Record<string, HealthView>;
  /** The settings that would configure a provider. */
  settings?: Record<string, string[]>;
}

function source(models: ModelEntry[], opts: SourceOptions = {}): PlanSource {
  const configured = opts.configured ?? { openai: "chat", anthropic: "chat", gemini: "chat" };
  const adapters = new Map(Object.entries(configured).map(([p, kind]) => [p, adapterMakers[kind](p)]));
  const breakers = new Map<string, ProviderHealth>();
  return {
    catalogue: new Catalogue(models),
    adapters,
    latency: new LatencyTracker(),
    healthOf(provider) {
      const given = opts.health?.[provider];
      if (given) return given;
      let h = breakers.get(provider);
      if (!h) {
        h = new ProviderHealth({ consecutiveFailures: 5, halfOpenAfterMs: 30_000 }, () => 0);
        breakers.set(provider, h);
      }
      return h;
    },
    settingsOf: (provider) => opts.settings?.[provider] ?? [],
  };
}

/** A provider whose breaker is open: `retryAfter` seconds to its probe, or none known (a deployment pool's view). */
function failing(retryAfter?: number): HealthView {
  return { accepting: false, state: "open", retryAfterSeconds: () => retryAfter };
}

const textNeed: Need = { category: "text" };

function ids(models: readonly ModelEntry[]): string[] {
  return models.map((m) => m.id);
}

function plan(src: PlanSource, model: string | null | undefined, strategy: RoutingStrategy, need: Need = textNeed, allow?: ModelFilter): string[] {
  return ids(planModels(src, model, strategy, need, allow));
}

function refusalOf(src: PlanSource, model: string | null | undefined, strategy: RoutingStrategy, need: Need = textNeed, allow?: ModelFilter): TroupeError {
  return thrownBy(() => planModels(src, model, strategy, need, allow));
}

function filterOf(patterns: readonly string[]): ModelFilter {
  const f = modelFilterOf(patterns);
  if (!f) throw new Error("expected a filter");
  return f;
}

// The catalogue most tests plan over, in preference order.
const oaM = text("oa-m", "openai", "medium", 1); // sort price 4
const oaCheap = text("oa-cheap", "openai", "medium", 0.1); // 0.4: cheaper than oa-m, same provider and tier
const anM = text("an-m", "anthropic", "medium", 3, { streaming: true, tools: true }); // 12, no JSON answers
const geM = text("ge-m", "gemini", "medium", 0.5); // 2
const geL = text("ge-l", "gemini", "large", 0.2);
const coM = text("co-m", "cohere", "medium", 0.05); // cohere: not configured
const simM = text("sim-m", "simulated", "medium", 0);
const models = [oaM, oaCheap, anM, geM, geL, coM, simM];

t.test("a named model leads; its equivalents follow: same tier, another configured provider, no simulated stand-in", async (t) => {
  const src = source(models);
  t.same(plan(src, "oa-m", "auto"), ["oa-m", "an-m", "ge-m"], "oa-cheap shares oa-m's provider, ge-l is large, cohere is not configured, sim-m is simulated");
  t.same(plan(src, "ge-l", "auto"), ["ge-l"], "no other large model");
  t.same(plan(src, "an-m", "auto"), ["an-m", "oa-m", "ge-m"], "the first of each provider, in catalogue order");
});

t.test("simulated models never stand in for a real one named; real ones may for a simulated one", async (t) => {
  const src = source(models, { configured: { openai: "chat", simulated: "chat" } });
  t.same(plan(src, "oa-m", "auto"), ["oa-m"], "sim-m is configured, of oa-m's tier, and still not an equivalent");
  t.same(plan(src, "sim-m", "auto"), ["sim-m", "oa-m"]);
});

t.test("equivalents take every capability asked and pass the key's allowlist", async (t) => {
  const src = source(models);
  t.same(plan(src, "oa-m", "auto", { category: "text", json: true }), ["oa-m", "ge-m"], "an-m cannot be held to a JSON answer");
  t.same(plan(src, "oa-m", "auto", textNeed, filterOf(["oa-*", "an-*"])), ["oa-m", "an-m"], "ge-m is not on the key's list");
});

t.test("cost orders the named model with its equivalents, cheapest first; the named one is still its provider's pick", async (t) => {
  const src = source(models);
  // oa-cheap is cheaper than oa-m but is not an equivalent (same provider): it must not replace the model asked for.
  t.same(plan(src, "oa-m", "cost"), ["ge-m", "oa-m", "an-m"]);
});

t.test("no model named: every capable configured model, one per provider, in catalogue order for auto", async (t) => {
  const src = source(models);
  t.same(plan(src, null, "auto"), ["oa-m", "an-m", "ge-m"]);
  t.same(plan(src, undefined, "auto"), ["oa-m", "an-m", "ge-m"]);
  t.same(plan(src, "", "auto"), ["oa-m", "an-m", "ge-m"], "an empty model is no model");
  t.same(plan(src, null, "auto", { category: "text", json: true }), ["oa-m", "ge-m"], "only models that take what is asked");
});

t.test("no model named: simulated models serve only when no real provider can", async (t) => {
  t.same(plan(source(models, { configured: { openai: "chat", simulated: "chat" } }), null, "auto"), ["oa-m"]);
  t.same(plan(source(models, { configured: { simulated: "chat" } }), null, "auto"), ["sim-m"]);
  t.same(plan(source(models, { configured: { simulated: "chat", cohere: "embed" } }), null, "auto"), ["sim-m"], "an adapter that does not chat serves no text model");
});

t.test("cost: cheapest first, equal prices in catalogue order", async (t) => {
  const same = [text("a1", "anthropic", "medium", 2), text("o1", "openai", "medium", 2), text("g1", "gemini", "medium", 1), text("o2", "openai", "medium", 0.1)];
  const src = source(same);
  t.same(plan(src, null, "cost"), ["o2", "g1", "a1"], "o2 is openai's cheapest");
  const tie = [text("a1", "anthropic", "medium", 2), text("o1", "openai", "medium", 2), text("g1", "gemini", "medium", 2)];
  t.same(plan(source(tie), null, "cost"), ["a1", "o1", "g1"], "all at one price: catalogue order kept");
  t.same(plan(source(tie), "o1", "cost"), ["o1", "a1", "g1"], "the named model first among equals");
});

t.test("latency: models never measured first, then the fastest; equal latencies in catalogue order", async (t) => {
  const three = [oaM, anM, geM];
  const src = source(three);
  src.latency.record("oa-m", 0.5);
  src.latency.record("an-m", 200);
  t.same(plan(src, null, "latency"), ["ge-m", "oa-m", "an-m"], "ge-m was never measured; 0.5 ms is faster than 200 ms");
  t.same(plan(src, "an-m", "latency"), ["ge-m", "oa-m", "an-m"], "a named model is ordered with its equivalents");
  const even = source(three);
  even.latency.record("oa-m", 50);
  even.latency.record("an-m", 50);
  even.latency.record("ge-m", 50);
  t.same(plan(even, null, "latency"), ["oa-m", "an-m", "ge-m"]);
  const spread = source(three);
  spread.latency.record("oa-m", 300);
  spread.latency.record("an-m", 100);
  spread.latency.record("ge-m", 200);
  t.same(plan(spread, null, "latency"), ["an-m", "ge-m", "oa-m"]);
});

t.test("manual: the named model alone, when its provider is configured and not failing", async (t) => {
  const src = source(models);
  t.same(plan(src, "oa-m", "manual"), ["oa-m"], "no equivalents");
  const e = refusalOf(src, null, "manual");
  t.equal(e.code, "invalid_request");
  t.same(e.details, [{ path: "body.model", message: "routing_strategy manual needs a model" }]);
  t.same(plan(source(models), "oa-m", "manual", textNeed, filterOf(["oa-m"])), ["oa-m"], "allowed by the key");
});

t.test("manual: a model of an unconfigured provider, or one its adapter does not serve, is a 400 naming the settings", async (t) => {
  const src = source(models, { settings: { cohere: ["COHERE_API_KEY"] } });
  const e = refusalOf(src, "co-m", "manual");
  t.equal(e.code, "invalid_request");
  t.same(e.details, [{ path: "body.model", message: "model co-m needs provider cohere, which is not configured on this Troupe; set COHERE_API_KEY to configure it" }]);
  const embeds = [embedding("oa-e", "openai")];
  const chatOnly = source(embeds, { configured: { openai: "chat" }, settings: { openai: ["OPENAI_API_KEY", "TROUPE_OPENAI_KEY"] } });
  const e2 = refusalOf(chatOnly, "oa-e", "manual", { category: "embedding" });
  t.same(e2.details, [{ path: "body.model", message: "model oa-e needs provider openai, which is not configured on this Troupe; set OPENAI_API_KEY or TROUPE_OPENAI_KEY to configure it" }]);
  t.same(plan(source(embeds, { configured: { openai: "embed" } }), "oa-e", "manual", { category: "embedding" }), ["oa-e"]);
});

t.test("manual: a failing provider is a 503 with the breaker's Retry-After, when it knows one", async (t) => {
  const e = refusalOf(source(models, { health: { openai: failing(7) } }), "oa-m", "manual");
  t.equal(e.code, "no_provider_available");
  t.equal(e.status, 503);
  t.equal(e.message, "provider openai is failing (circuit breaker open); retry later or use routing_strategy auto");
  t.equal(e.retryAfterSeconds, 7);
  const unknown = refusalOf(source(models, { health: { openai: failing() } }), "oa-m", "manual");
  t.equal(unknown.code, "no_provider_available");
  t.equal(unknown.retryAfterSeconds, undefined);
  t.same(plan(source(models, { health: { anthropic: failing(7) } }), "oa-m", "manual"), ["oa-m"], "another provider failing does not matter");
});

t.test("a named model that does not exist or cannot serve the request is a 400 naming the field", async (t) => {
  const src = source([...models, embedding("oa-e", "openai")]);
  const unknown = refusalOf(src, "nope", "auto");
  t.equal(unknown.code, "invalid_request");
  t.same(unknown.details, [{ path: "body.model", message: "unknown model nope (GET /v1/models lists them)" }]);
  const wrongKind = refusalOf(src, "oa-e", "auto");
  t.same(wrongKind.details, [{ path: "body.model", message: "model oa-e is a embedding model and cannot serve text requests" }]);
  const noJson = refusalOf(src, "an-m", "manual", { category: "text", json: true });
  t.same(noJson.details, [{ path: "body.response_format", message: "model an-m cannot be held to a JSON answer (response_format)" }]);
});

t.test("a named model the key's allowlist refuses is a 403 listing the key's models", async (t) => {
  const src = source(models);
  const e = refusalOf(src, "an-m", "auto", textNeed, filterOf(["oa-*", "tier:large"]));
  t.equal(e.code, "model_not_allowed");
  t.equal(e.status, 403);
  t.equal(e.message, "this API key may not use model an-m (its models: oa-*, tier:large)");
  t.same(e.details, { allowed_models: ["oa-*", "tier:large"] });
  const none = refusalOf(src, "an-m", "manual", textNeed, filterOf([]));
  t.equal(none.message, "this API key may not use model an-m (its models: none)");
  t.same(none.details, { allowed_models: [] });
  // A filter not made from patterns (an agent's own check) has nothing to list.
  const bare = refusalOf(src, "an-m", "auto", textNeed, (m) => m.provider === "openai");
  t.equal(bare.code, "model_not_allowed");
  t.equal(bare.message, "this API key may not use model an-m");
  t.equal(bare.details, undefined);
});

t.test("no model named: the allowlist narrows the pool; refusing every capable model is a 403", async (t) => {
  const src = source(models);
  t.same(plan(src, null, "auto", textNeed, filterOf(["an-*", "ge-*"])), ["an-m", "ge-m"]);
  t.same(plan(src, null, "auto", textNeed, filterOf(["oa-cheap"])), ["oa-cheap"], "openai's first allowed model");
  const e = refusalOf(src, null, "auto", { category: "text", json: true }, filterOf(["an-*"]));
  t.equal(e.code, "model_not_allowed");
  t.equal(e.message, "this API key may not use any model that can serve this text request (its models: an-*)");
  t.same(e.details, { allowed_models: ["an-*"] });
  // No model could serve it at all: the request's fault, not the key's.
  const nothing = refusalOf(src, null, "auto", { category: "embedding" }, filterOf(["an-*"]));
  t.equal(nothing.code, "invalid_request");
});

t.test("a named model whose provider and equivalents are all unconfigured is a 400 naming each provider once", async (t) => {
  const all = [text("co-m", "cohere"), text("mi-a", "mistral"), text("mi-b", "mistral"), oaM];
  const src = source(all, { configured: { openai: "chat" }, health: { openai: failing(3) }, settings: { cohere: ["COHERE_API_KEY"], mistral: ["MISTRAL_API_KEY"] } });
  const e = refusalOf(src, "co-m", "auto", textNeed, filterOf(["co-m", "mi-*"]));
  t.equal(e.code, "invalid_request");
  t.same(e.details, [
    { path: "body.model", message: "model co-m needs provider cohere or mistral, which is not configured on this Troupe; set COHERE_API_KEY or MISTRAL_API_KEY to configure it" },
  ]);
  const bare = source(all, { configured: { openai: "chat" }, health: { openai: failing(3) } });
  t.same(refusalOf(bare, "co-m", "auto", textNeed, filterOf(["co-m"])).details, [{ path: "body.model", message: "model co-m needs provider cohere, which is not configured on this Troupe" }]);
  // One equivalent configured but failing: a retry may get past that.
  const e503 = refusalOf(src, "co-m", "auto");
  t.equal(e503.code, "no_provider_available");
  t.equal(e503.message, "no configured, healthy provider can serve this text request (model co-m)");
});

t.test("a named model not configured for the request's category (non-manual) is a 400 too", async (t) => {
  const src = source([embedding("oa-e", "openai")], { configured: { openai: "chat" } });
  const e = refusalOf(src, "oa-e", "auto", { category: "embedding" });
  t.same(e.details, [{ path: "body.model", message: "model oa-e needs provider openai, which is not configured on this Troupe" }]);
});

t.test("configured providers all failing: 503, worth a retry", async (t) => {
  const src = source(models, { health: { openai: failing(3), anthropic: failing(), gemini: failing(9) } });
  const named = refusalOf(src, "oa-m", "auto");
  t.equal(named.code, "no_provider_available");
  t.equal(named.message, "no configured, healthy provider can serve this text request (model oa-m)");
  const any = refusalOf(src, null, "cost");
  t.equal(any.code, "no_provider_available");
  t.equal(any.message, "no configured, healthy provider can serve this text request");
  t.same(plan(source(models, { health: { openai: failing(3) } }), "oa-m", "auto"), ["an-m", "ge-m"], "the named model's provider failing: its equivalents serve");
  t.same(plan(source(models, { health: { anthropic: failing(3) } }), null, "auto"), ["oa-m", "ge-m"]);
});

t.test("a failing provider is skipped for the next configured one, not for its other models", async (t) => {
  const two = [text("an-a", "anthropic"), text("an-b", "anthropic"), text("oa-a", "openai")];
  t.same(plan(source(two), null, "auto"), ["an-a", "oa-a"], "one model per provider");
  t.same(plan(source(two, { health: { anthropic: failing(1) } }), null, "auto"), ["oa-a"]);
});

t.test("a request no configured provider can serve: 400 naming the providers that could and their settings", async (t) => {
  const embeds = [embedding("oa-e", "openai"), embedding("co-e", "cohere")];
  const settings = { openai: ["OPENAI_API_KEY"], cohere: ["COHERE_API_KEY"] };
  const e = refusalOf(source(embeds, { configured: { anthropic: "chat" }, settings }), null, "auto", { category: "embedding" });
  t.equal(e.code, "invalid_request");
  t.same(e.details, [
    {
      path: "body.model",
      message: "no configured provider can serve this embedding request; it needs provider openai or cohere, which are not configured on this Troupe (set OPENAI_API_KEY or COHERE_API_KEY to configure one)",
    },
  ]);
  const one = refusalOf(source([embedding("co-e", "cohere")], { configured: { anthropic: "chat" }, settings }), null, "auto", { category: "embedding" });
  t.same(one.details, [
    { path: "body.model", message: "no configured provider can serve this embedding request; it needs provider cohere, which is not configured on this Troupe (set COHERE_API_KEY to configure it)" },
  ]);
  const unset = refusalOf(source(embeds, { configured: { anthropic: "chat" } }), null, "auto", { category: "embedding" });
  t.same(unset.details, [{ path: "body.model", message: "no configured provider can serve this embedding request; it needs provider openai or cohere, which are not configured on this Troupe" }]);
  const none = refusalOf(source(models), null, "auto", { category: "embedding" });
  t.same(none.details, [{ path: "body.model", message: "no configured provider can serve this embedding request; no model in the catalogue can" }]);
});

/** A speech request's kind check: the model speaks (has voices). */
const speaks = (m: ModelEntry): string | undefined => (m.capabilities.voices ? undefined : `model ${m.id} does not speak`);

function voice(asked: string): FieldNeed {
  return {
    path: "body.voice",
    asked: `the voice "${asked}"`,
    problem: (m) => (m.capabilities.voices?.includes(asked) ? undefined : `model ${m.id} has no voice ${asked}`),
    offers: { noun: "voices", values: (m) => m.capabilities.voices ?? [] },
  };
}

/** A field only the models listed take; its message does not name the model. */
function onlyFor(path: string, asked: string, takers: readonly string[]): FieldNeed {
  return { path, asked, problem: (m) => (takers.includes(m.id) ? undefined : `${asked} is not offered`) };
}

const voices = [speech("oa-tts", "openai", ["alloy", "ash"]), speech("oa-hd", "openai", ["alloy", "verse"]), speech("oa-whisper", "openai", undefined), speech("el-tts", "elevenlabs", ["rachel"])];
const speechSettings = { elevenlabs: ["ELEVENLABS_API_KEY"] };

t.test("a field no configured model takes: 400 on that field, who would take it and what the configured ones offer", async (t) => {
  const src = source(voices, { configured: { openai: "speech" }, settings: speechSettings });
  const elsewhere = refusalOf(src, null, "auto", { category: "audio", media: speaks, fields: [voice("rachel")] });
  t.equal(elsewhere.code, "invalid_request");
  t.same(elsewhere.details, [
    {
      path: "body.voice",
      message:
        'the voice "rachel" needs provider elevenlabs, which is not configured on this Troupe (set ELEVENLABS_API_KEY to configure it); voices the configured providers offer: alloy, ash, verse',
    },
  ]);
  const nowhere = refusalOf(src, null, "auto", { category: "audio", media: speaks, fields: [voice("zzz")] });
  t.same(nowhere.details, [{ path: "body.voice", message: 'no model offers the voice "zzz"; voices the configured providers offer: alloy, ash, verse' }]);
  t.same(plan(src, null, "auto", { category: "audio", media: speaks, fields: [voice("verse")] }), ["oa-hd"]);
});

t.test("the values offered are those of the models that take the request's other fields, else of every configured one", async (t) => {
  const src = source(voices, { configured: { openai: "speech" } });
  const fitting = refusalOf(src, null, "auto", { category: "audio", media: speaks, fields: [voice("zzz"), onlyFor("body.speed", "speed 2", ["oa-hd"])] });
  t.same(fitting.details, [{ path: "body.voice", message: 'no model offers the voice "zzz"; voices the configured providers offer: alloy, verse' }], "oa-hd takes the speed");
  const neither = refusalOf(src, null, "auto", { category: "audio", media: speaks, fields: [voice("zzz"), onlyFor("body.speed", "speed 2", [])] });
  t.same(neither.details, [
    { path: "body.voice", message: 'no model offers the voice "zzz"; voices the configured providers offer: alloy, ash, verse' },
    { path: "body.speed", message: "no model offers speed 2" },
  ]);
  const mute = source([speech("oa-mute", "openai", [])], { configured: { openai: "speech" } });
  t.same(refusalOf(mute, null, "auto", { category: "audio", media: speaks, fields: [voice("zzz")] }).details, [{ path: "body.voice", message: 'no model offers the voice "zzz"' }], "no values: none listed");
});

t.test("the fields are weighed over configured models of the kind asked only", async (t) => {
  // Only a transcriber is configured (an audio model), and it does not speak: the voice is not what stops it.
  const src = source([voices[2]!, voices[3]!], { configured: { openai: "transcribe" }, settings: speechSettings });
  const e = refusalOf(src, null, "auto", { category: "audio", media: speaks, fields: [voice("rachel")] });
  t.same(e.details, [
    { path: "body.model", message: "no configured provider can serve this audio request; it needs provider elevenlabs, which is not configured on this Troupe (set ELEVENLABS_API_KEY to configure it)" },
  ]);
});

t.test("each field taken by some configured model, never all by one: 400 listing each model's first problem once", async (t) => {
  const split = [
    text("oa-tools", "openai", "medium", 1, { tools: true }),
    text("an-json", "anthropic", "medium", 1, { json_output: true }),
    text("ge-both", "gemini", "medium", 1, { tools: true, json_output: true }),
  ];
  const src = source(split, { configured: { openai: "chat", anthropic: "chat" }, settings: { gemini: ["GEMINI_API_KEY"] } });
  const e = refusalOf(src, null, "auto", { category: "text", tools: true, json: true });
  t.equal(e.code, "invalid_request");
  t.equal(
    e.message,
    "no configured model takes these fields together: body.response_format: model oa-tools cannot be held to a JSON answer (response_format); body.tools: model an-json does not support tools; this request needs provider gemini, which is not configured on this Troupe (set GEMINI_API_KEY to configure it)",
  );
  t.same(e.details, [
    { path: "body.response_format", message: "model oa-tools cannot be held to a JSON answer (response_format)" },
    { path: "body.tools", message: "model an-json does not support tools" },
  ]);
  const noneAnywhere = source(split.slice(0, 2), { configured: { openai: "chat", anthropic: "chat" } });
  t.equal(
    refusalOf(noneAnywhere, null, "auto", { category: "text", tools: true, json: true }).message,
    "no configured model takes these fields together: body.response_format: model oa-tools cannot be held to a JSON answer (response_format); body.tools: model an-json does not support tools",
  );
  // Two models failing the same field the same way: one issue.
  const three = [text("a", "openai"), text("b", "anthropic"), text("c", "gemini")];
  const fields = [onlyFor("body.x", "x", ["c"]), onlyFor("body.y", "y", ["a", "b"])];
  const deduped = refusalOf(source(three), null, "auto", { category: "text", fields });
  t.same(deduped.details, [
    { path: "body.x", message: "x is not offered" },
    { path: "body.y", message: "y is not offered" },
  ]);
});

t.test("adapterServes: the model's provider has an adapter that makes the category's calls", async (t) => {
  const adapters = new Map<string, ProviderAdapter>([
    ["openai", chatAdapter("openai")],
    ["cohere", adapterMakers.embed("cohere")],
  ]);
  t.equal(adapterServes(adapters, oaM, "text"), true);
  t.equal(adapterServes(adapters, oaM, "embedding"), false, "the openai adapter does not embed");
  t.equal(adapterServes(adapters, embedding("co-e", "cohere"), "embedding"), true);
  t.equal(adapterServes(adapters, anM, "text"), false, "no anthropic adapter");
});
