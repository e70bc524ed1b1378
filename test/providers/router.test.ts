import t from "tap";
import { loadConfig } from "../../gateway/config.ts";
import { createRouter } from "../../providers/index.ts";
import { TroupeError } from "../../core/errors.ts";
import { Catalogue } from "../../providers/catalogue.ts";
import { Router, type RouterOptions } from "../../providers/router.ts";
import { createSimulatedAdapter } from "../../providers/simulated/index.ts";
import type { ProviderAdapter } from "../../providers/types.ts";
import { defaultFaults, type FakeServer } from "../fakes/fake-server.ts";
import { collect, streamSummary } from "./conversation-suite.ts";
import { startFallbackPair } from "./fallback-pair.ts";

const { openaiFake, anthropicFake, openai, anthropic } = await startFallbackPair(t);
const catalogue = Catalogue.load();

function reset(...fakes: FakeServer[]): void {
  for (const f of fakes) {
    Object.assign(f.faults, defaultFaults());
    f.requests.length = 0;
  }
}

function router(opts: Partial<RouterOptions> = {}, adapters?: Map<string, ProviderAdapter>): Router {
  reset(openaiFake, anthropicFake);
  return new Router({
    catalogue,
    adapters:
      adapters ??
      new Map<string, ProviderAdapter>([
        ["openai", openai],
        ["anthropic", anthropic],
        ["simulated", createSimulatedAdapter()],
      ]),
    timeoutMs: 5_000,
    maxAttempts: 3,
    backoff: { initialDelayMs: 10, maxDelayMs: 50 },
    ...opts,
  });
}

const hello = [{ role: "user" as const, content: "hello" }];

async function troupeError(p: Promise<unknown>): Promise<TroupeError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  if (!(e instanceof TroupeError)) throw new Error(`expected a TroupeError, got ${String(e)}`);
  return e;
}

t.test("manual: exactly the named model, 400s for bad requests and for unconfigured providers", async (t) => {
  const r = router();
  const res = await r.chat({ model: "claude-haiku-4-5", routing_strategy: "manual", messages: hello });
  t.equal(res.model, "claude-haiku-4-5");
  t.equal(res.provider, "anthropic");
  t.equal(res.content, "Echo: hello");
  const noModel = await troupeError(r.chat({ model: null, routing_strategy: "manual", messages: hello }));
  t.equal(noModel.status, 400);
  t.match(noModel.message, /manual needs a model/);
  const unknown = await troupeError(r.chat({ model: "gpt-99", messages: hello }));
  t.equal(unknown.code, "invalid_request");
  t.match(unknown.message, /unknown model gpt-99/);
  const wrongCategory = await troupeError(r.chat({ model: "text-embedding-3-small", messages: hello }));
  t.equal(wrongCategory.status, 400);
  t.match(wrongCategory.message, /embedding model and cannot serve text/);
  const gemini = await troupeError(r.chat({ model: "gemini-2.5-flash", routing_strategy: "manual", messages: hello }));
  t.equal(gemini.code, "invalid_request", "an unconfigured provider is a 400, not a passing 503");
  t.match(gemini.details, [{ path: "body.model", message: /gemini-2\.5-flash needs provider gemini, which is not configured/ }]);
  const embed = await troupeError(r.embed({ model: "claude-haiku-4-5", input: ["x"] }));
  t.equal(embed.status, 400);
  t.equal(openaiFake.requests.length + anthropicFake.requests.length, 1, "only the valid request reached a provider");
});

t.test("conversation checks happen before any provider call", async (t) => {
  const r = router();
  const bad = await troupeError(
    r.chat({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "x" }, { role: "tool", tool_call_id: "nope", content: "r" }] }),
  );
  t.equal(bad.status, 400);
  t.match(bad.message, /messages.1.tool_call_id/);
  const choice = await troupeError(r.chat({ model: "gpt-4.1-mini", messages: hello, tools: [], tool_choice: { name: "f" } }));
  t.match(choice.message, /tool_choice/);
  t.equal(openaiFake.requests.length, 0);
});

t.test("auto: named provider first, falls back to an equivalent model elsewhere and says so", async (t) => {
  const r = router();
  openaiFake.faults.failureRate = 1;
  const res = await r.chat({ model: "gpt-4.1-mini", messages: hello });
  t.equal(res.provider, "anthropic");
  t.equal(res.model, "claude-haiku-4-5", "same tier (medium) on another provider");
  t.equal(openaiFake.requests.length, 1, "no retry of openai while a fallback exists");
  t.equal((anthropicFake.requests[0]!.body as { model: string }).model, "claude-haiku-4-5");
});

t.test("auto with model null: first capable real model; simulated only when no real provider", async (t) => {
  const r = router();
  const res = await r.chat({ messages: hello });
  t.equal(res.model, "gpt-4.1");
  const simOnly = router({}, new Map([["simulated", createSimulatedAdapter()]]));
  const sim = await simOnly.chat({ messages: hello });
  t.equal(sim.provider, "simulated");
  t.equal(sim.model, "simulated-chat", "catalogue order decides among simulated models");
  const e = await simOnly.embed({ input: ["x"] });
  t.equal(e.model, "simulated-embed");
  const named = await troupeError(simOnly.chat({ model: "gpt-4.1-mini", messages: hello }));
  t.equal(named.code, "invalid_request", "simulated never silently replaces a named real model");
  t.match(named.details, [{ path: "body.model", message: /needs provider openai or .*not configured/ }]);
});

t.test("cost: cheapest capable model; latency: lowest EWMA", async (t) => {
  const r = router();
  const cheap = await r.chat({ routing_strategy: "cost", messages: hello });
  t.equal(cheap.model, "gpt-4.1-nano");
  const tierCheap = await r.chat({ model: "claude-haiku-4-5", routing_strategy: "cost", messages: hello });
  t.equal(tierCheap.model, "gpt-4.1-mini", "cheapest of the medium tier");
  const r2 = router();
  for (const m of r2.listModels("text")) if (m.id !== "claude-sonnet-4-5") r2.latency.record(m.id, 500);
  r2.latency.record("claude-sonnet-4-5", 20);
  const fast = await r2.chat({ routing_strategy: "latency", messages: hello });
  t.equal(fast.model, "claude-sonnet-4-5");
});

t.test("latency: every served call is measured; unmeasured models go first, then the lowest EWMA", async (t) => {
  const r = router();
  // 200 ms: far above what the in-process fake takes otherwise, so the order cannot flip on a busy machine.
  openaiFake.faults.delayMs = 200;
  // A named model and its equivalent: the pool is these two, whatever else the catalogue holds.
  const ask = () => r.chat({ model: "gpt-4.1-mini", routing_strategy: "latency", messages: hello });
  const first = await ask();
  t.equal(first.model, "gpt-4.1-mini", "nothing measured yet: the named model first");
  t.ok((r.latency.get("gpt-4.1-mini") ?? 0) >= 200, `gpt-4.1-mini measured at ${r.latency.get("gpt-4.1-mini")} ms`);
  const second = await ask();
  t.equal(second.model, "claude-haiku-4-5", "the model not measured yet goes before the one just measured");
  t.ok(r.latency.get("claude-haiku-4-5") !== undefined, "claude-haiku-4-5 measured too");
  const third = await ask();
  t.equal(third.model, "claude-haiku-4-5", "both measured: the faster one");
});

t.test("retries: only retryable failures, bounded across the whole chain", async (t) => {
  const r = router();
  openaiFake.faults.queue.push({ kind: "status", status: 400, message: "bad param" });
  const bad = await troupeError(r.chat({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: hello }));
  t.equal(bad.status, 400);
  t.match(bad.message, /openai rejected the request: .*bad param/);
  t.equal(openaiFake.requests.length, 1, "400 is not retried");

  reset(openaiFake);
  openaiFake.faults.queue.push({ kind: "status", status: 503 }, { kind: "status", status: 500 });
  const ok = await r.chat({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: hello });
  t.equal(ok.provider, "openai");
  t.equal(openaiFake.requests.length, 3, "two retries then success");

  reset(openaiFake, anthropicFake);
  openaiFake.faults.failureRate = 1;
  anthropicFake.faults.failureRate = 1;
  const both = await troupeError(r.chat({ model: "gpt-4.1-mini", messages: hello }));
  t.equal(both.code, "provider_error");
  t.equal(both.status, 502);
  t.equal(openaiFake.requests.length + anthropicFake.requests.length, 3, "maxAttempts bounds the whole chain");

  reset(openaiFake, anthropicFake);
  openaiFake.faults.queue.push({ kind: "status", status: 401 });
  anthropicFake.faults.failureRate = 1;
  await troupeError(r.chat({ model: "gpt-4.1-mini", messages: hello }));
  t.equal(openaiFake.requests.length, 1, "401 falls back but is never retried on the same provider");
});

t.test("429 Retry-After is honoured before retrying the same model", async (t) => {
  const r = router();
  openaiFake.faults.queue.push({ kind: "status", status: 429, retryAfter: "1" });
  const started = performance.now();
  const res = await r.chat({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: hello });
  const took = performance.now() - started;
  t.equal(res.provider, "openai");
  t.ok(took >= 990, `waited ${Math.round(took)} ms`);
  reset(openaiFake);
  openaiFake.faults.queue.push({ kind: "status", status: 429, retryAfter: "30" });
  const e = await troupeError(r.chat({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: hello }));
  t.equal(e.status, 502, "a Retry-After beyond the deadline ends the request instead of waiting");
  t.equal(openaiFake.requests.length, 1);
});

t.test("429 Retry-After as an HTTP date is read on the router's clock", async (t) => {
  // Years from the wall clock, so only the router's clock can make sense of the dates below.
  let nowMs = Date.parse("2041-03-10T12:00:00Z");
  const r = router({ now: () => nowMs });
  const outcome = (p: Promise<{ provider: string }>) => p.then((res) => res.provider, (e: unknown) => (e instanceof TroupeError ? e.status : String(e)));
  openaiFake.faults.queue.push({ kind: "status", status: 429, retryAfter: new Date(nowMs + 30_000).toUTCString() });
  t.equal(await outcome(r.chat({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: hello })), 502, "30 s from the router's now: past the 5 s deadline, so not retried");
  t.equal(openaiFake.requests.length, 1);
  reset(openaiFake);
  nowMs += 60_000;
  openaiFake.faults.queue.push({ kind: "status", status: 429, retryAfter: new Date(nowMs - 1_000).toUTCString() });
  t.equal(await outcome(r.chat({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: hello })), "openai", "a date already past on the router's clock: retried at once");
  t.equal(openaiFake.requests.length, 2);
});

t.test("deadlines: a hanging attempt falls back; the request deadline is a 504", async (t) => {
  const r = router({ timeoutMs: 1_000, attemptTimeoutMs: 300 });
  openaiFake.faults.queue.push({ kind: "hang" });
  let started = performance.now();
  const res = await r.chat({ model: "gpt-4.1-mini", messages: hello });
  t.equal(res.provider, "anthropic");
  t.ok(performance.now() - started < 600);
  openaiFake.faults.timeoutRate = 1;
  started = performance.now();
  const e = await troupeError(r.chat({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: hello }));
  const took = performance.now() - started;
  t.equal(e.code, "provider_timeout");
  t.equal(e.status, 504);
  t.ok(took < 1_300, `ended by the deadline (${Math.round(took)} ms)`);
});

t.test("streams: fall back before the first event, never after", async (t) => {
  const r = router();
  openaiFake.faults.queue.push({ kind: "status", status: 500 });
  const s = streamSummary(await collect(r.chatStream({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "one two three" }] })));
  t.equal(s.text, "Echo: one two three");
  t.equal(s.finish?.provider, "anthropic");
  t.equal(s.finish?.model, "claude-haiku-4-5");

  reset(openaiFake, anthropicFake);
  openaiFake.faults.queue.push({ kind: "cut" });
  // Paced so the first events surely reach the router before the connection drops.
  openaiFake.faults.eventDelayMs = 20;
  const events: unknown[] = [];
  const err = await (async () => {
    for await (const e of r.chatStream({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "a b c d e f g h" }] })) events.push(e);
  })().catch((e: unknown) => e);
  t.ok(err instanceof TroupeError);
  t.equal((err as TroupeError).code, "provider_error");
  t.ok(events.length > 0, "some events were delivered before the cut");
  t.equal(openaiFake.requests.length + anthropicFake.requests.length, 1, "no retry once the stream started");
});

t.test("stopping a stream aborts the upstream call", async (t) => {
  const r = router();
  openaiFake.faults.eventDelayMs = 50;
  const it = r.chatStream({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: [{ role: "user", content: "a b c d e f g h i j k l" }] });
  const first = await it.next();
  t.ok(!first.done);
  await it.return(undefined);
  // Unaborted, the fake would finish its ~700 ms stream; an aborted call closes the connection mid-stream.
  t.equal(await openaiFake.outcome(openaiFake.requests.at(-1)!), "closed early", "the upstream connection was closed before the stream ended");
});

t.test("client abort stops the request at once", async (t) => {
  const r = router();
  openaiFake.faults.timeoutRate = 1;
  const ctl = new AbortController();
  setTimeout(() => ctl.abort(new Error("client went away")), 50);
  const started = performance.now();
  const e = await r.chat({ model: "gpt-4.1-mini", messages: hello }, { signal: ctl.signal }).catch((x: unknown) => x);
  t.match(String(e), /client went away/);
  t.ok(performance.now() - started < 500);
  t.equal(anthropicFake.requests.length, 0, "no fallback after the client left");
});

t.test("breaker opens after consecutive failures, refuses fast, half-opens and closes", async (t) => {
  const r = router({ breaker: { consecutiveFailures: 3, halfOpenAfterMs: 300 }, maxAttempts: 1 });
  openaiFake.faults.failureRate = 1;
  for (let i = 0; i < 3; i++) await troupeError(r.chat({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: hello }));
  t.equal(r.healthOf("openai").state, "open");
  t.equal(r.isAvailable("openai"), false);
  t.equal(r.listModels("text").find((m) => m.id === "gpt-4.1-mini")?.available, false);
  const before = openaiFake.requests.length;
  const fast = await troupeError(r.chat({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: hello }));
  t.equal(fast.code, "no_provider_available");
  t.ok(fast.retryAfterSeconds !== undefined);
  t.equal(openaiFake.requests.length, before, "no call while open");
  const auto = await r.chat({ model: "gpt-4.1-mini", messages: hello });
  t.equal(auto.provider, "anthropic", "auto skips the open provider");
  await new Promise((res) => setTimeout(res, 350));
  t.equal(r.isAvailable("openai"), true, "a probe may go through");
  openaiFake.faults.failureRate = 0;
  const probe = await r.chat({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: hello });
  t.equal(probe.provider, "openai");
  t.equal(r.healthOf("openai").state, "closed");
});

t.test("a call turned away behind a failing half-open probe is not an attempt: the request falls back", async (t) => {
  // cockatiel times the breaker's pause with Date.now: the test's clock drives it and the router's health alike.
  let nowMs = Date.parse("2030-01-01T00:00:00Z");
  t.capture(Date, "now", () => nowMs);
  const r = router({ breaker: { consecutiveFailures: 1, halfOpenAfterMs: 30_000 }, maxAttempts: 1, attemptTimeoutMs: 200, now: () => nowMs });
  openaiFake.faults.queue.push({ kind: "status", status: 500 });
  await troupeError(r.chat({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: hello }));
  t.equal(r.healthOf("openai").state, "open");
  nowMs += 30_000;
  openaiFake.faults.queue.push({ kind: "hang" });
  const probe = troupeError(r.chat({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: hello }));
  t.equal(r.healthOf("openai").state, "half_open", "the probe is in flight");
  // Waits behind the probe; the probe times out, the breaker opens again and turns this call away.
  const behind = r.chat({ model: "gpt-4.1-mini", messages: hello });
  t.equal((await probe).code, "provider_timeout");
  const served = await behind.then(
    (res) => res.provider,
    (e: unknown) => (e instanceof TroupeError ? e.code : String(e)),
  );
  t.equal(served, "anthropic", "its one attempt went to the fallback");
  t.equal(openaiFake.requests.length, 2, "the turned-away call never reached openai");
  t.equal(anthropicFake.requests.length, 1);
});

t.test("listModels: availability follows configuration; category filter", async (t) => {
  const r = router();
  const text = r.listModels("text");
  t.ok(text.every((m) => m.category === "text"));
  t.equal(text.find((m) => m.id === "gemini-2.5-flash")?.available, false);
  t.equal(text.find((m) => m.id === "gpt-4.1-mini")?.available, true);
  const vision = r.listModels("vision");
  t.ok(vision.length > 0 && vision.every((m) => m.category === "vision"));
  const emb = r.listModels("embedding");
  t.same(emb.find((m) => m.id === "simulated-embed")?.capabilities.dimensions, 256);
  t.equal(emb.find((m) => m.id === "text-embedding-3-small")?.available, true, "the openai adapter embeds");
  t.ok(r.listModels().length >= text.length);
});

t.test("priceOf", async (t) => {
  t.equal(catalogue.priceOf("gpt-4.1-mini", { input_tokens: 1_000_000, output_tokens: 500_000 }), 1.2);
  t.equal(catalogue.priceOf("text-embedding-3-small", { input_tokens: 2_000_000 }), 0.04);
  t.equal(catalogue.priceOf("nope", { input_tokens: 5 }), 0);
});

t.test("embedding fallbacks keep the named model's dimension", async (t) => {
  const { createCohereAdapter } = await import("../../providers/cohere/index.ts");
  const { startCohereFake } = await import("../fakes/cohere-fake.ts");
  const cohereFake = await startCohereFake();
  const cohere = createCohereAdapter({ baseUrl: cohereFake.url });
  t.teardown(async () => {
    await cohere.close?.();
    await cohereFake.close();
  });
  const custom = new Catalogue([
    ...catalogue.models.filter((m) => m.category !== "embedding"),
    { id: "oa-768", provider: "openai", upstream_model: "text-embedding-3-small", category: "embedding", also: [], tier: "small", capabilities: { dimensions: 768, custom_dimensions: true }, pricing: { unit: "1M tokens", input_usd_per_unit: 0.02 } },
    { id: "co-fixed-1024", provider: "cohere", category: "embedding", also: [], tier: "small", capabilities: { dimensions: 1024, custom_dimensions: false }, pricing: { unit: "1M tokens", input_usd_per_unit: 0.01 } },
    { id: "co-any", provider: "cohere", upstream_model: "embed-v4.0", category: "embedding", also: [], tier: "small", capabilities: { dimensions: 1536, custom_dimensions: true }, pricing: { unit: "1M tokens", input_usd_per_unit: 0.1 } },
  ]);
  reset(openaiFake);
  const r = new Router({ catalogue: custom, adapters: new Map<string, ProviderAdapter>([["openai", openai], ["cohere", cohere]]), timeoutMs: 5_000, maxAttempts: 3 });
  openaiFake.faults.failureRate = 1;
  const res = await r.embed({ model: "oa-768", input: ["x"] });
  t.equal(res.model, "co-any", "the fixed-1024 model is not an equivalent of a 768-dim model");
  t.equal(res.dimensions, 768, "asked for the named model's dimension");
  t.equal((cohereFake.requests.at(-1)!.body as { output_dimension: number }).output_dimension, 768);
  reset(openaiFake);
});

t.test("a model of an unconfigured provider: 400 naming the setting that configures it", async (t) => {
  const r = createRouter(loadConfig({}).providers);
  const manual = await troupeError(r.chat({ model: "gemini-2.5-flash", routing_strategy: "manual", messages: hello }));
  t.equal(manual.status, 400);
  t.match(manual.details, [{ path: "body.model", message: /set GEMINI_API_KEY to configure it/ }]);
  const auto = await troupeError(r.chat({ model: "claude-haiku-4-5", messages: hello }));
  t.equal(auto.status, 400, "auto too, when no equivalent is configured either");
  t.match(auto.details, [{ message: /ANTHROPIC_API_KEY/ }]);
  await r.close();
});

t.test("plan: one model per provider, so a fallback changes provider, not model", async (t) => {
  const r = router();
  t.ok(catalogue.ofCategory("text").filter((m) => m.provider === "openai").length > 1, "the catalogue has several OpenAI text models to choose from");
  for (const strategy of ["auto", "cost", "latency"] as const) {
    const providers = r.plan(null, strategy, { category: "text" }).map((m) => m.provider);
    t.same(providers, [...new Set(providers)], `${strategy}: ${providers.join(", ")}`);
  }
  const named = r.plan("gpt-4.1-mini", "auto", { category: "text" });
  t.equal(named[0]?.id, "gpt-4.1-mini", "the named model first");
  t.same(named.map((m) => m.provider), [...new Set(named.map((m) => m.provider))], "its equivalents are on other providers");
});
