// A provider's health as the router reads it (providers/router-health.ts),
// built in process on an injected clock: the breaker's defaults, which
// failures open it and after how many, when an open breaker accepts a probe
// again and the Retry-After it gives until then, its states, and the latency
// EWMA behind `latency` routing. Fast on purpose: a mutation run
// (docs/testing.md) runs this file once per mutant; the breaker inside the
// attempt chain is in router-unit.test.ts.
import t from "tap";
import { ProviderCallError } from "../../providers/errors.ts";
import { breakerOptionsOf, LatencyTracker, ProviderHealth } from "../../providers/router-health.ts";

/** A clock the test moves by hand (ms). */
function clock(startMs: number): { now: () => number; at: (ms: number) => void } {
  let ms = startMs;
  return { now: () => ms, at: (next) => void (ms = next) };
}

/** One call through the breaker that fails with `e`. */
async function fail(h: ProviderHealth, e: Error): Promise<void> {
  await h.breaker
    .execute(() => {
      throw e;
    })
    .catch(() => undefined);
}

const outage = () => new ProviderCallError("openai", "http", "openai answered 503", { status: 503 });

t.test("breakerOptionsOf: 5 failures and 30 s unless given", async (t) => {
  t.same(breakerOptionsOf(), { consecutiveFailures: 5, halfOpenAfterMs: 30_000 });
  t.same(breakerOptionsOf({}), { consecutiveFailures: 5, halfOpenAfterMs: 30_000 });
  t.same(breakerOptionsOf({ consecutiveFailures: 2 }), { consecutiveFailures: 2, halfOpenAfterMs: 30_000 });
  t.same(breakerOptionsOf({ halfOpenAfterMs: 500 }), { consecutiveFailures: 5, halfOpenAfterMs: 500 });
});

t.test("a closed breaker accepts and has no Retry-After", async (t) => {
  const h = new ProviderHealth({ consecutiveFailures: 3, halfOpenAfterMs: 30_000 }, clock(0).now);
  t.equal(h.accepting, true);
  t.equal(h.state, "closed");
  t.equal(h.retryAfterSeconds(), undefined);
});

t.test("the breaker opens after exactly N consecutive retryable failures", async (t) => {
  const c = clock(1_000_000);
  const h = new ProviderHealth({ consecutiveFailures: 3, halfOpenAfterMs: 30_000 }, c.now);
  await fail(h, outage());
  await fail(h, outage());
  t.equal(h.state, "closed", "two of three");
  t.equal(h.accepting, true);
  await fail(h, outage());
  t.equal(h.state, "open");
  t.equal(h.accepting, false);
  t.equal(h.retryAfterSeconds(), 30, "the whole pause left");
});

t.test("failures that say nothing of the provider's health do not count", async (t) => {
  const h = new ProviderHealth({ consecutiveFailures: 1, halfOpenAfterMs: 30_000 }, clock(0).now);
  await fail(h, new ProviderCallError("openai", "http", "openai answered 401", { status: 401 }));
  await fail(h, new ProviderCallError("openai", "http", "openai answered 400", { status: 400 }));
  await fail(h, new ProviderCallError("openai", "protocol", "garbled"));
  await fail(h, new TypeError("an adapter bug"));
  t.equal(h.state, "closed");
  await fail(h, new ProviderCallError("openai", "timeout", "late"));
  t.equal(h.state, "open", "a timeout does");
});

t.test("an open breaker accepts a probe once its pause has elapsed on the injected clock; Retry-After counts down", async (t) => {
  const c = clock(1_000_000);
  const h = new ProviderHealth({ consecutiveFailures: 1, halfOpenAfterMs: 30_000 }, c.now);
  await fail(h, outage());
  c.at(1_010_500);
  t.equal(h.accepting, false);
  t.equal(h.retryAfterSeconds(), 20, "19.5 s left, rounded up");
  c.at(1_029_999);
  t.equal(h.accepting, false, "1 ms before the pause ends");
  t.equal(h.retryAfterSeconds(), 1);
  c.at(1_030_000);
  t.equal(h.accepting, true, "the pause has elapsed");
  t.equal(h.state, "open", "still open until the probe goes through");
  t.equal(h.retryAfterSeconds(), 1, "never below 1 s");
  c.at(1_090_000);
  t.equal(h.retryAfterSeconds(), 1);
});

t.test("an isolated breaker never accepts, whatever the clock says", async (t) => {
  const c = clock(0);
  const h = new ProviderHealth({ consecutiveFailures: 1, halfOpenAfterMs: 10 }, c.now);
  const handle = h.breaker.isolate();
  c.at(1_000_000);
  t.equal(h.accepting, false);
  t.equal(h.state, "open");
  handle.dispose();
  t.equal(h.accepting, true);
  t.equal(h.state, "closed");
});

t.test("a probe runs half-open; its success closes the breaker and clears the Retry-After", async (t) => {
  const c = clock(5_000);
  // cockatiel lets the probe through on the wall clock: a 1 ms pause, waited out for real.
  const h = new ProviderHealth({ consecutiveFailures: 1, halfOpenAfterMs: 1 }, c.now);
  await fail(h, outage());
  t.equal(h.retryAfterSeconds(), 1);
  await new Promise((resolve) => setTimeout(resolve, 20));
  let release = (): void => undefined;
  const probe = h.breaker.execute(() => new Promise<void>((resolve) => (release = resolve)));
  t.equal(h.state, "half_open");
  release();
  await probe;
  t.equal(h.state, "closed");
  t.equal(h.accepting, true);
  t.equal(h.retryAfterSeconds(), undefined);
});

t.test("the latency EWMA: the first call as measured, then a fifth of each change by default", async (t) => {
  const l = new LatencyTracker();
  t.equal(l.get("m"), undefined, "never served");
  l.record("m", 100);
  t.equal(l.get("m"), 100);
  l.record("m", 200);
  t.equal(l.get("m"), 120);
  l.record("m", 20);
  t.equal(l.get("m"), 100);
  t.equal(l.get("other"), undefined, "per model");
  const half = new LatencyTracker(0.5);
  half.record("m", 100);
  half.record("m", 200);
  t.equal(half.get("m"), 150);
});
