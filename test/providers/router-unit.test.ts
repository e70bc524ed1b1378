// The router's attempt chain (providers/router.ts) built in process: its
// public routeCall runs over catalogue entries with a scripted attempt that
// answers or throws the failures adapters throw (ProviderCallError), so the
// order of attempts, which failures are retried and which fall back, the
// bound on attempts, the waits before a retry, the breaker, the attempt
// observer and the organization's own key first (BYOK) are checked call by
// call. Fast on purpose: a mutation run (docs/testing.md) runs this file once
// per mutant; the same behaviour over real HTTP fakes is in router.test.ts.
import t from "tap";
import { BrokenCircuitError } from "cockatiel";
import { TroupeError } from "../../core/errors.ts";
import { Catalogue, type ModelEntry } from "../../providers/catalogue.ts";
import { ProviderCallError } from "../../providers/errors.ts";
import { Router, type AttemptObserver, type AttemptRun, type RouterOptions } from "../../providers/router.ts";
import type { OwnCredential } from "../../providers/own-credentials.ts";
import type { ProviderAdapter } from "../../providers/types.ts";
import { thrownBy } from "../support/thrown-by.ts";

const catalogue = Catalogue.load();

function entry(id: string): ModelEntry {
  const e = catalogue.get(id);
  if (!e) throw new Error(`no catalogue model ${id}`);
  return e;
}

const gpt = entry("gpt-4.1-mini");
const claude = entry("claude-haiku-4-5");
const gemini = entry("gemini-2.5-flash");

/** An adapter the scripted attempt stands in for: only its identity matters here. */
function adapterOf(provider: string): ProviderAdapter {
  return { provider };
}

const troupeAdapters = new Map<string, ProviderAdapter>(["openai", "anthropic", "gemini"].map((p) => [p, adapterOf(p)]));

function router(opts: Partial<RouterOptions> = {}): Router {
  return new Router({
    catalogue,
    adapters: troupeAdapters,
    timeoutMs: 2_000,
    maxAttempts: 3,
    backoff: { initialDelayMs: 1, maxDelayMs: 1 },
    random: () => 1,
    ...opts,
  });
}

function httpError(provider: string, status: number, retryAfter?: string): ProviderCallError {
  return new ProviderCallError(provider, "http", `${provider} answered ${status}`, { status, retryAfter });
}

/** Each attempt's model, and the adapter it was given. */
interface Script {
  calls: string[];
  adapters: ProviderAdapter[];
  run: AttemptRun<string>;
}

/** Runs the outcomes given per model in turn: an error is thrown, a string is the answer; past the list, "ok". */
function script(outcomes: Record<string, (string | Error)[]>): Script {
  const calls: string[] = [];
  const adapters: ProviderAdapter[] = [];
  const left = new Map(Object.entries(outcomes).map(([k, v]) => [k, [...v]]));
  const run: AttemptRun<string> = async (e, adapter) => {
    calls.push(e.id);
    adapters.push(adapter);
    const next = left.get(e.id)?.shift() ?? `ok from ${e.id}`;
    if (next instanceof Error) throw next;
    return next;
  };
  return { calls, adapters, run };
}

async function refusal(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (e: unknown) => e,
  );
}

async function troupeError(p: Promise<unknown>): Promise<TroupeError> {
  const e = await refusal(p);
  if (!(e instanceof TroupeError)) throw new Error(`expected a TroupeError, got ${String(e)}`);
  return e;
}

t.test("the first candidate that answers serves; later ones are not called", async (t) => {
  const s = script({});
  const res = await router().routeCall([gpt, claude], undefined, s.run);
  t.equal(res.value, "ok from gpt-4.1-mini");
  t.equal(res.entry, gpt);
  t.notOk("byok" in res, "no own key: no byok mark");
  t.same(s.calls, ["gpt-4.1-mini"]);
  t.equal(s.adapters[0], troupeAdapters.get("openai"), "the candidate's own provider's adapter");
});

t.test("a retryable failure falls back first, then retries the same model in the next round", async (t) => {
  const s = script({ "gpt-4.1-mini": [httpError("openai", 503)], "claude-haiku-4-5": [httpError("anthropic", 503)] });
  const res = await router().routeCall([gpt, claude], undefined, s.run);
  t.same(s.calls, ["gpt-4.1-mini", "claude-haiku-4-5", "gpt-4.1-mini"]);
  t.equal(res.entry, gpt);
});

t.test("a failure that falls back but is not retryable is not tried again", async (t) => {
  // 401: another provider may take the call; the same one will refuse again.
  const s = script({ "gpt-4.1-mini": [httpError("openai", 401)], "claude-haiku-4-5": [httpError("anthropic", 503)] });
  const res = await router().routeCall([gpt, claude], undefined, s.run);
  t.same(s.calls, ["gpt-4.1-mini", "claude-haiku-4-5", "claude-haiku-4-5"]);
  t.equal(res.entry, claude);
});

t.test("attempts are bounded across the whole chain; the last failure is thrown with the count", async (t) => {
  const s = script({
    "gpt-4.1-mini": [httpError("openai", 503), httpError("openai", 503)],
    "claude-haiku-4-5": [httpError("anthropic", 502), httpError("anthropic", 502)],
  });
  const e = await troupeError(router().routeCall([gpt, claude], undefined, s.run));
  t.same(s.calls, ["gpt-4.1-mini", "claude-haiku-4-5", "gpt-4.1-mini"]);
  t.equal(e.code, "provider_error");
  t.match(e.details, { provider: "openai", upstream_status: 503, attempts: 3 });
});

t.test("maxAttempts below 1 still makes one attempt", async (t) => {
  const s = script({ "gpt-4.1-mini": [httpError("openai", 503)] });
  const e = await troupeError(router({ maxAttempts: 0 }).routeCall([gpt, claude], undefined, s.run));
  t.same(s.calls, ["gpt-4.1-mini"]);
  t.match(e.details, { attempts: 1 });
});

t.test("every candidate failing without retry: no further round, the last failure is thrown", async (t) => {
  const s = script({ "gpt-4.1-mini": [httpError("openai", 401)], "claude-haiku-4-5": [httpError("anthropic", 404)] });
  const e = await troupeError(router({ maxAttempts: 5 }).routeCall([gpt, claude], undefined, s.run));
  t.same(s.calls, ["gpt-4.1-mini", "claude-haiku-4-5"]);
  t.equal(e.code, "provider_error");
  t.match(e.details, { provider: "anthropic", upstream_status: 404, attempts: 2 });
});

t.test("a request the provider rejects (400) is thrown at once: no fallback", async (t) => {
  const s = script({ "gpt-4.1-mini": [httpError("openai", 400)] });
  const e = await troupeError(router().routeCall([gpt, claude], undefined, s.run));
  t.same(s.calls, ["gpt-4.1-mini"]);
  t.equal(e.code, "invalid_request");
  t.match(e.details, { provider: "openai", upstream_status: 400, attempts: 1 });
});

t.test("a Troupe error from an attempt is the caller's, thrown as it is", async (t) => {
  const own = new TroupeError("invalid_request", "not the provider's fault");
  const s = script({ "gpt-4.1-mini": [own] });
  t.equal(await refusal(router().routeCall([gpt, claude], undefined, s.run)), own);
  t.same(s.calls, ["gpt-4.1-mini"]);
});

t.test("an adapter bug falls back to another provider, and is not retried", async (t) => {
  const s = script({ "gpt-4.1-mini": [new TypeError("x is undefined")], "claude-haiku-4-5": [httpError("anthropic", 503)] });
  const res = await router().routeCall([gpt, claude], undefined, s.run);
  t.same(s.calls, ["gpt-4.1-mini", "claude-haiku-4-5", "claude-haiku-4-5"]);
  t.equal(res.entry, claude);
});

t.test("candidates of providers not configured here are skipped; none left: no_provider_available", async (t) => {
  const r = router({ adapters: new Map([["anthropic", adapterOf("anthropic")]]) });
  const s = script({});
  const res = await r.routeCall([gpt, claude], undefined, s.run);
  t.same(s.calls, ["claude-haiku-4-5"]);
  t.equal(res.entry, claude);
  const e = await troupeError(r.routeCall([gpt, gemini], undefined, s.run));
  t.equal(e.code, "no_provider_available");
  t.match(e.message, /circuit breakers open/);
  t.same(s.calls, ["claude-haiku-4-5"], "nothing was called");
});

t.test("the client aborting during an attempt throws its failure as it is, without fallback", async (t) => {
  const client = new AbortController();
  const failure = httpError("openai", 503);
  const calls: string[] = [];
  const e = await refusal(
    router().routeCall([gpt, claude], client.signal, async (m) => {
      calls.push(m.id);
      client.abort(new Error("client went away"));
      throw failure;
    }),
  );
  t.equal(e, failure, "not turned into a Troupe error, not retried");
  t.same(calls, ["gpt-4.1-mini"]);
});

t.test("a failure once the request's deadline has passed is thrown without fallback", async (t) => {
  const calls: string[] = [];
  const e = await troupeError(
    router({ timeoutMs: 30 }).routeCall([gpt, claude], undefined, async (m) => {
      calls.push(m.id);
      await new Promise((resolve) => setTimeout(resolve, 60));
      throw httpError("openai", 503);
    }),
  );
  t.same(calls, ["gpt-4.1-mini"]);
  t.equal(e.code, "provider_error");
  t.match(e.details, { attempts: 1 });
});

t.test("a retry waits out Retry-After; one past the request's deadline is not made", async (t) => {
  const soon = script({ "gpt-4.1-mini": [httpError("openai", 429, "0.05")] });
  const started = performance.now();
  const res = await router({ maxAttempts: 2 }).routeCall([gpt], undefined, soon.run);
  t.ok(performance.now() - started >= 45, "waited about the 50 ms asked");
  t.same(soon.calls, ["gpt-4.1-mini", "gpt-4.1-mini"]);
  t.equal(res.entry, gpt);
  const late = script({ "gpt-4.1-mini": [httpError("openai", 429, "5")] });
  const e = await troupeError(router({ maxAttempts: 2 }).routeCall([gpt], undefined, late.run));
  t.same(late.calls, ["gpt-4.1-mini"], "5 s is past the 2 s deadline: not retried");
  t.match(e.details, { upstream_status: 429, attempts: 1 });
});

t.test("Retry-After as an HTTP date is read on the router's clock", async (t) => {
  const nowMs = Date.UTC(2026, 0, 1, 0, 0, 0);
  // One second after the router's "now": past the 500 ms deadline, so no retry; read on the wall clock it would be long past.
  const s = script({ "gpt-4.1-mini": [httpError("openai", 503, "Thu, 01 Jan 2026 00:00:01 GMT")] });
  const e = await troupeError(router({ maxAttempts: 2, timeoutMs: 500, now: () => nowMs }).routeCall([gpt], undefined, s.run));
  t.same(s.calls, ["gpt-4.1-mini"]);
  t.match(e.details, { attempts: 1 });
});

t.test("the backoff doubles per round from its initial delay, capped, scaled by the jitter", async (t) => {
  // random 1: the full delay. 300 ms then 600 ms under an 800 ms deadline: the second retry does not fit.
  const failing = () => script({ "gpt-4.1-mini": [httpError("openai", 503), httpError("openai", 503), httpError("openai", 503)] });
  const doubling = failing();
  await troupeError(router({ maxAttempts: 3, timeoutMs: 800, backoff: { initialDelayMs: 300, maxDelayMs: 5_000 } }).routeCall([gpt], undefined, doubling.run));
  t.same(doubling.calls, ["gpt-4.1-mini", "gpt-4.1-mini"], "300 ms fits, then 600 ms does not");
  const capped = failing();
  const started = performance.now();
  await router({ maxAttempts: 4, timeoutMs: 1_800, backoff: { initialDelayMs: 300, maxDelayMs: 300 } }).routeCall([gpt], undefined, capped.run);
  t.same(capped.calls, ["gpt-4.1-mini", "gpt-4.1-mini", "gpt-4.1-mini", "gpt-4.1-mini"], "capped at 300 ms: three waits fit in 1,800 ms (doubling, 300 + 600 + 1,200, would not)");
  t.ok(performance.now() - started >= 850, "three waits of 300 ms");
  const jittered = failing();
  await router({ maxAttempts: 4, timeoutMs: 1_000, random: () => 0, backoff: { initialDelayMs: 5_000, maxDelayMs: 5_000 } }).routeCall(
    [gpt],
    undefined,
    jittered.run,
  );
  t.equal(jittered.calls.length, 4, "random 0: no wait at all");
});

t.test("the default backoff starts at 200 ms and is capped at 5 s", async (t) => {
  const s = script({ "gpt-4.1-mini": [httpError("openai", 503)] });
  // Upper bounds leave a busy machine room: each is far from the value the mutation it guards against would give.
  const r = new Router({ catalogue, adapters: troupeAdapters, timeoutMs: 3_000, maxAttempts: 2, random: () => 1 });
  const started = performance.now();
  await r.routeCall([gpt], undefined, s.run);
  const waited = performance.now() - started;
  t.ok(waited >= 190 && waited < 1_500, `about 200 ms (${Math.round(waited)})`);
  const late = script({ "gpt-4.1-mini": [httpError("openai", 503)] });
  const short = new Router({ catalogue, adapters: troupeAdapters, timeoutMs: 150, maxAttempts: 2, random: () => 1 });
  await troupeError(short.routeCall([gpt], undefined, late.run));
  t.same(late.calls, ["gpt-4.1-mini"], "200 ms does not fit a 150 ms deadline");
  const capped = script({ "gpt-4.1-mini": [httpError("openai", 503)] });
  const long = new Router({ catalogue, adapters: troupeAdapters, timeoutMs: 4_000, maxAttempts: 2, random: () => 1, backoff: { initialDelayMs: 10_000 } });
  await troupeError(long.routeCall([gpt], undefined, capped.run));
  t.same(capped.calls, ["gpt-4.1-mini"], "capped at 5 s, which does not fit a 4 s deadline either");
});

/** An attempt that never answers: it ends when its signal aborts, with the signal's reason. */
function hangingOn(model: string, s: Script): AttemptRun<string> {
  return (e, adapter, signal) => {
    if (e.id !== model) return s.run(e, adapter, signal);
    s.calls.push(e.id);
    return new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
  };
}

t.test("an attempt's deadline: half the request's by default when a fallback may follow, the whole of it for one attempt", async (t) => {
  const halves = script({});
  let started = performance.now();
  const res = await router({ timeoutMs: 2_000, maxAttempts: 2 }).routeCall([gpt, claude], undefined, hangingOn("gpt-4.1-mini", halves));
  let took = performance.now() - started;
  t.equal(res.entry, claude, "the hanging attempt fell back");
  t.ok(took >= 990 && took < 1_900, `after about 1,000 ms, half the 2,000 (${Math.round(took)})`);
  const whole = script({});
  started = performance.now();
  const e = await troupeError(router({ timeoutMs: 300, maxAttempts: 1 }).routeCall([gpt, claude], undefined, hangingOn("gpt-4.1-mini", whole)));
  took = performance.now() - started;
  t.equal(e.code, "provider_timeout");
  t.ok(took >= 285, `one attempt has the whole 300 ms (${Math.round(took)})`);
  const given = script({});
  started = performance.now();
  await router({ timeoutMs: 4_000, maxAttempts: 2, attemptTimeoutMs: 100 }).routeCall([gpt, claude], undefined, hangingOn("gpt-4.1-mini", given));
  took = performance.now() - started;
  t.ok(took >= 90 && took < 1_900, `attemptTimeoutMs 100 is kept, not half the 4,000 (${Math.round(took)})`);
});

t.test("an open breaker takes its provider out of the chain, also for the retry", async (t) => {
  const r = router({ breaker: { consecutiveFailures: 1, halfOpenAfterMs: 60_000 } });
  const s = script({ "gpt-4.1-mini": [httpError("openai", 503)], "claude-haiku-4-5": [httpError("anthropic", 401)] });
  const e = await troupeError(r.routeCall([gpt, claude], undefined, s.run));
  t.same(s.calls, ["gpt-4.1-mini", "claude-haiku-4-5"], "openai's breaker opened: its retry is not made");
  t.match(e.details, { provider: "anthropic", upstream_status: 401, attempts: 2 });
  t.equal(r.healthOf("openai").state, "open");
  t.equal(r.healthOf("anthropic").state, "closed", "a 401 says nothing of a provider's health");
  const next = script({});
  const res = await r.routeCall([gpt, claude], undefined, next.run);
  t.same(next.calls, ["claude-haiku-4-5"]);
  t.equal(res.entry, claude);
});

t.test("a call turned away by a breaker (a probe in flight) is not an attempt and is not retried", async (t) => {
  const s = script({ "gpt-4.1-mini": [new BrokenCircuitError()], "claude-haiku-4-5": [httpError("anthropic", 503)] });
  const res = await router({ maxAttempts: 2 }).routeCall([gpt, claude], undefined, s.run);
  t.same(s.calls, ["gpt-4.1-mini", "claude-haiku-4-5", "claude-haiku-4-5"]);
  t.equal(res.entry, claude);
  const only = script({ "gpt-4.1-mini": [new BrokenCircuitError()] });
  const e = await troupeError(router().routeCall([gpt], undefined, only.run));
  t.equal(e.code, "no_provider_available", "nothing failed: every provider was turned away");
});

t.test("the observer is told of each attempt, as it starts, and of how it ended", async (t) => {
  const seen: string[] = [];
  const observer: AttemptObserver = {
    attempt(provider, model) {
      seen.push(`start ${provider} ${model}`);
      return (outcome, error) => seen.push(`${outcome} ${error instanceof Error ? error.message : "-"}`);
    },
  };
  const s = script({ "gpt-4.1-mini": [httpError("openai", 503)] });
  await router({ observer }).routeCall([gpt, claude], undefined, s.run);
  t.same(seen, ["start openai gpt-4.1-mini", "error openai answered 503", "start anthropic claude-haiku-4-5", "success -"]);
  seen.length = 0;
  const client = new AbortController();
  await refusal(
    router({ observer }).routeCall([gpt], client.signal, async () => {
      client.abort(new Error("gone"));
      throw httpError("openai", 503);
    }),
  );
  t.same(seen, ["start openai gpt-4.1-mini", "aborted openai answered 503"]);
});

t.test("a served call's latency is recorded for its model; a failed one's is not", async (t) => {
  const r = router();
  const s = script({ "gpt-4.1-mini": [httpError("openai", 503)] });
  await r.routeCall([gpt, claude], undefined, s.run);
  t.equal(r.latency.get("gpt-4.1-mini"), undefined);
  t.type(r.latency.get("claude-haiku-4-5"), "number");
});

const ownAdapter = adapterOf("openai");

function own(allowFallback: boolean): OwnCredential {
  return { adapter: ownAdapter, label: "org …abcd", allowFallback };
}

t.test("the organization's own key goes first and marks the answer byok", async (t) => {
  const s = script({});
  const res = await router({ ownCredentials: (p) => (p === "openai" ? Promise.resolve(own(false)) : undefined) }).routeCall([gpt], undefined, s.run);
  t.equal(res.byok, true);
  t.equal(s.adapters[0], ownAdapter);
  const none = script({});
  // No organization calling: the resolver answers at once, and the attempt starts in the same tick.
  const other = await router({ ownCredentials: () => undefined }).routeCall([gpt], undefined, none.run);
  t.notOk("byok" in other);
  t.equal(none.adapters[0], troupeAdapters.get("openai"));
});

t.test("the own key refused (401/403): Troupe's key when allowed, else 403 naming the credential", async (t) => {
  for (const status of [401, 403]) {
    const s = script({ "gpt-4.1-mini": [httpError("openai", status)] });
    const res = await router({ ownCredentials: async () => own(true) }).routeCall([gpt, claude], undefined, s.run);
    t.same(s.calls, ["gpt-4.1-mini", "gpt-4.1-mini"], `${status}: the same attempt again`);
    t.same(s.adapters, [ownAdapter, troupeAdapters.get("openai")]);
    t.notOk("byok" in res, `${status}: served by Troupe's key`);
    const refused = script({ "gpt-4.1-mini": [httpError("openai", status)] });
    const e = await troupeError(router({ ownCredentials: (p) => (p === "openai" ? Promise.resolve(own(false)) : undefined) }).routeCall([gpt, claude], undefined, refused.run));
    t.equal(e.code, "provider_credential_rejected");
    t.equal(e.status, 403);
    t.match(e.message, /openai rejected the organization's stored credential \(org …abcd\): replace it with PUT \/v1\/orgs\/\{id\}\/provider-credentials\/openai/);
    t.same(e.details, { provider: "openai", credential: "org …abcd", upstream_status: status });
    t.type(e.cause, ProviderCallError);
    t.same(refused.calls, ["gpt-4.1-mini"], "the organization's to fix: no fallback");
  }
});

t.test("other failures with the own key are the provider's, as without it", async (t) => {
  const outage = script({ "gpt-4.1-mini": [httpError("openai", 500)] });
  const res = await router({ ownCredentials: async () => own(true) }).routeCall([gpt, claude], undefined, outage.run);
  t.same(outage.calls, ["gpt-4.1-mini", "claude-haiku-4-5"], "a 500 falls back to another provider, not to Troupe's key");
  t.equal(res.entry, claude);
  const notHttp = script({ "gpt-4.1-mini": [new ProviderCallError("openai", "protocol", "garbled", { status: 401 })] });
  await router({ ownCredentials: async () => own(true) }).routeCall([gpt, claude], undefined, notHttp.run);
  t.same(notHttp.calls, ["gpt-4.1-mini", "claude-haiku-4-5"], "only an HTTP 401/403 is a refused key");
  const bug = script({ "gpt-4.1-mini": [new TypeError("broken")] });
  await router({ ownCredentials: async () => own(true) }).routeCall([gpt, claude], undefined, bug.run);
  t.same(bug.calls, ["gpt-4.1-mini", "claude-haiku-4-5"]);
  const rejected = script({ "gpt-4.1-mini": [httpError("openai", 400)] });
  const e = await troupeError(router({ ownCredentials: async () => own(true) }).routeCall([gpt, claude], undefined, rejected.run));
  t.equal(e.code, "invalid_request");
});

t.test("a served attempt keeps its signal past the attempt's deadline; an abandoned one is aborted at once", async (t) => {
  // A stream goes on reading under the signal its attempt was given.
  const r = router({ attemptTimeoutMs: 20 });
  const served = await r.routeCall([gpt], undefined, async (_e, _a, signal) => signal);
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.equal(served.value.aborted, false, "no attempt deadline after the answer");
  const signals: AbortSignal[] = [];
  await r.routeCall([gpt, claude], undefined, async (e, _a, signal) => {
    signals.push(signal);
    if (e.id === "gpt-4.1-mini") throw httpError("openai", 503);
    return "ok";
  });
  t.equal(signals[0]?.aborted, true, "the failed attempt's work is stopped");
  t.match(signals[0]?.reason, { message: "attempt abandoned" });
});

t.test("without settingsOf, a model of an unconfigured provider's 400 names no setting", async (t) => {
  const r = new Router({ catalogue, adapters: new Map([["openai", adapterOf("openai")]]), timeoutMs: 1_000, maxAttempts: 1 });
  const e = thrownBy(() => r.plan("gemini-2.5-flash", "manual", { category: "text" }, null));
  t.match(e.details, [{ path: "body.model", message: "model gemini-2.5-flash needs provider gemini, which is not configured on this Troupe" }]);
  t.notMatch(JSON.stringify(e.details), /set /);
});

t.test("the client aborting during the wait before a retry ends the call there", async (t) => {
  const client = new AbortController();
  const s = script({ "gpt-4.1-mini": [httpError("openai", 503, "0.2")] });
  const run: AttemptRun<string> = async (e, adapter, signal) => {
    setTimeout(() => client.abort(), 20);
    return s.run(e, adapter, signal);
  };
  const e = await refusal(router({ maxAttempts: 2 }).routeCall([gpt], client.signal, run));
  t.match(e, { name: "AbortError" }, "the client's abort, as it is");
  t.same(s.calls, ["gpt-4.1-mini"], "no retry after the client left");
});
