// How the router classifies a failed attempt (providers/router-failures.ts),
// called directly on the failures adapters and libraries throw: the outcome
// attempt observers see, which errors count as the provider's failure, and
// the Troupe error the caller gets once the chain gives up. Fast on purpose:
// a mutation run (docs/testing.md) runs this file once per mutant; the same
// classification inside the attempt chain is in router-unit.test.ts.
import t from "tap";
import { BrokenCircuitError } from "cockatiel";
import { TroupeError } from "../../core/errors.ts";
import { ProviderCallError } from "../../providers/errors.ts";
import { asProviderFailure, attemptOutcome, toTroupeError } from "../../providers/router-failures.ts";

function httpError(provider: string, status: number): ProviderCallError {
  return new ProviderCallError(provider, "http", `${provider} answered ${status}`, { status });
}

function abortError(): Error {
  const e = new Error("This operation was aborted");
  e.name = "AbortError";
  return e;
}

const live = new AbortController().signal;

function aborted(reason: unknown): AbortSignal {
  const c = new AbortController();
  c.abort(reason);
  return c.signal;
}

function troupe(e: unknown): TroupeError {
  if (!(e instanceof TroupeError)) throw new Error(`expected a TroupeError, got ${String(e)}`);
  return e;
}

t.test("attemptOutcome: the client leaving wins over everything else", async (t) => {
  t.equal(attemptOutcome(new BrokenCircuitError(), true), "aborted");
  t.equal(attemptOutcome(httpError("openai", 503), true), "aborted");
  t.equal(attemptOutcome(new TypeError("x"), true), "aborted");
});

t.test("attemptOutcome: breaker, timeout, a refused request and other failures", async (t) => {
  t.equal(attemptOutcome(new BrokenCircuitError(), false), "breaker_open");
  t.equal(attemptOutcome(new ProviderCallError("openai", "timeout", "openai timed out"), false), "timeout");
  for (const status of [400, 413, 422]) t.equal(attemptOutcome(httpError("openai", status), false), "rejected", `${status}: the request's fault`);
  t.equal(attemptOutcome(httpError("openai", 503), false), "error");
  t.equal(attemptOutcome(httpError("openai", 401), false), "error", "another provider may take it: the provider's failure");
  t.equal(attemptOutcome(new ProviderCallError("openai", "connection", "reset"), false), "error");
  t.equal(attemptOutcome(new ProviderCallError("openai", "protocol", "garbled"), false), "error");
  t.equal(attemptOutcome(new TypeError("x is undefined"), false), "error");
  t.equal(attemptOutcome("a string", false), "error");
  t.equal(attemptOutcome(undefined, false), "error", "a thrown undefined");
  // Another library's error shaped like ours is not classified as ours.
  t.equal(attemptOutcome(Object.assign(new Error("late"), { kind: "timeout" }), false), "error");
  t.equal(attemptOutcome(Object.assign(new Error("bad"), { kind: "http", fallbackable: false }), false), "error");
});

t.test("asProviderFailure: a provider's error as it is; Troupe errors, aborts and non-errors are not the provider's", async (t) => {
  const failure = httpError("openai", 503);
  t.equal(asProviderFailure(failure, "anthropic"), failure, "kept as thrown, provider and all");
  t.equal(asProviderFailure(new TroupeError("invalid_request", "the caller's"), "openai"), undefined);
  t.equal(asProviderFailure(abortError(), "openai"), undefined);
  t.equal(asProviderFailure(new DOMException("aborted", "AbortError"), "openai"), undefined);
  t.equal(asProviderFailure("a string", "openai"), undefined);
  t.equal(asProviderFailure(undefined, "openai"), undefined);
});

t.test("asProviderFailure: an adapter bug is the provider's protocol failure: not retried, may fall back", async (t) => {
  const bug = new TypeError("x is undefined");
  const failure = asProviderFailure(bug, "openai");
  if (!failure) throw new Error("expected a failure");
  t.type(failure, ProviderCallError);
  t.equal(failure.provider, "openai");
  t.equal(failure.kind, "protocol");
  t.equal(failure.message, "openai failed: x is undefined");
  t.equal(failure.cause, bug);
  t.equal(failure.retryable, false);
  t.equal(failure.fallbackable, true);
});

t.test("toTroupeError: a Troupe error is thrown as it is", async (t) => {
  const own = new TroupeError("budget_exceeded");
  t.equal(toTroupeError(own, live, 3), own);
  t.equal(toTroupeError(own, aborted(new ProviderCallError("openai", "timeout", "late")), 3), own, "even after the deadline");
});

t.test("toTroupeError: a timeout is a 504 with the provider, no upstream status and the attempts", async (t) => {
  const late = new ProviderCallError("openai", "timeout", "openai did not answer within 1000 ms");
  const e = troupe(toTroupeError(late, live, 2));
  t.equal(e.code, "provider_timeout");
  t.equal(e.status, 504);
  t.equal(e.message, "openai did not answer within 1000 ms");
  t.same(e.details, { provider: "openai", upstream_status: null, attempts: 2 });
  t.equal(e.cause, late);
});

t.test("toTroupeError: a request the provider refused is a 400 saying so", async (t) => {
  const refused = httpError("anthropic", 422);
  const e = troupe(toTroupeError(refused, live, 1));
  t.equal(e.code, "invalid_request");
  t.equal(e.message, "anthropic rejected the request: anthropic answered 422");
  t.same(e.details, { provider: "anthropic", upstream_status: 422, attempts: 1 });
  t.equal(e.cause, refused);
});

t.test("toTroupeError: any other failure is a 502 with the upstream status", async (t) => {
  const outage = httpError("gemini", 503);
  const e = troupe(toTroupeError(outage, live, 3));
  t.equal(e.code, "provider_error");
  t.equal(e.status, 502);
  t.equal(e.message, "gemini answered 503");
  t.same(e.details, { provider: "gemini", upstream_status: 503, attempts: 3 });
  t.equal(e.cause, outage);
  const reset = troupe(toTroupeError(new ProviderCallError("gemini", "connection", "reset"), live, 1));
  t.equal(reset.code, "provider_error");
  t.same(reset.details, { provider: "gemini", upstream_status: null, attempts: 1 });
});

t.test("toTroupeError: an adapter bug is a 502 of an unnamed provider", async (t) => {
  const e = troupe(toTroupeError(new TypeError("x is undefined"), live, 1));
  t.equal(e.code, "provider_error");
  t.equal(e.message, "provider failed: x is undefined");
  t.same(e.details, { provider: "provider", upstream_status: null, attempts: 1 });
});

t.test("toTroupeError: an abort is classified by the deadline's reason, else thrown as it is", async (t) => {
  const deadline = new ProviderCallError("openai", "timeout", "openai did not answer in time");
  const e = troupe(toTroupeError(abortError(), aborted(deadline), 1));
  t.equal(e.code, "provider_timeout");
  t.equal(e.cause, deadline);
  const abort = abortError();
  t.equal(toTroupeError(abort, live, 1), abort, "the deadline has not passed: the abort is the client's");
  t.equal(toTroupeError(abort, aborted(abortError()), 1), abort, "the client's own abort reason");
  t.equal(toTroupeError("a string", live, 1), "a string");
  const odd = troupe(toTroupeError(abortError(), aborted(new Error("deadline gone wrong")), 1));
  t.equal(odd.code, "provider_error", "a deadline reason that is a plain error is a failure of an unnamed provider");
  t.equal(odd.message, "provider failed: deadline gone wrong");
  t.same(odd.details, { provider: "provider", upstream_status: null, attempts: 1 });
});
