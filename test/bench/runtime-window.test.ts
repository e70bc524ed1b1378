// bench:chat's reading of a Troupe's runtime from its /metrics: GC by kind
// and the event loop's delay, as prom-client writes them (with and without
// the replica label Troupe adds to every series).
import t from "tap";
import { describeWindows, parseRuntime, windowBetween } from "../../bench/lib/runtime-window.ts";

const exposition = (minor: number, minorUnder10ms: number, minorSum: number, major: number, p99: number, max: number) =>
  [
    "# TYPE nodejs_eventloop_lag_max_seconds gauge",
    `nodejs_eventloop_lag_max_seconds{replica="r1"} ${max}`,
    `nodejs_eventloop_lag_p99_seconds ${p99}`,
    `nodejs_gc_duration_seconds_bucket{le="0.001",kind="minor"} ${minorUnder10ms - 1}`,
    `nodejs_gc_duration_seconds_bucket{le="0.01",kind="minor"} ${minorUnder10ms}`,
    `nodejs_gc_duration_seconds_bucket{le="+Inf",kind="minor"} ${minor}`,
    `nodejs_gc_duration_seconds_sum{kind="minor",replica="r1"} ${minorSum}`,
    `nodejs_gc_duration_seconds_count{kind="minor"} ${minor}`,
    `nodejs_gc_duration_seconds_bucket{le="0.01",kind="major"} ${major}`,
    `nodejs_gc_duration_seconds_sum{kind="major"} 0.5`,
    `nodejs_gc_duration_seconds_count{kind="major"} ${major}`,
  ].join("\n");

t.test("a scrape: collections by kind, the slow ones, the delay in ms", async (t) => {
  const snapshot = parseRuntime(exposition(10, 8, 0.05, 2, 0.0125, 0.05));
  t.same(snapshot.gc.get("minor"), { count: 10, seconds: 0.05, over10ms: 2 });
  t.same(snapshot.gc.get("major"), { count: 2, seconds: 0.5, over10ms: 0 });
  // Beyond the 10 ms sampling timer's period.
  t.equal(snapshot.loopDelayP99Ms, 2.5);
  t.equal(snapshot.loopDelayMaxMs, 40);
});

t.test("a window: the counters' differences, the delay of its end", async (t) => {
  const before = parseRuntime(exposition(10, 8, 0.05, 2, 0.03, 0.09));
  const after = parseRuntime(exposition(30, 25, 0.25, 3, 0.012, 0.021));
  const window = windowBetween(before, after, 4);
  t.same(window.gc.get("minor"), { count: 20, seconds: 0.2, over10ms: 3 });
  t.equal(window.gc.get("major")?.count, 1);
  t.equal(window.loopDelayMaxMs, 11);
  t.equal(
    describeWindows([window, { ...window, loopDelayP99Ms: 4, loopDelayMaxMs: 20 }]),
    "GC over 8 s: minor 5.0/s, 50.00 ms/s paused, 6 ≥ 10 ms; major 0.3/s, 0.00 ms/s paused, 0 ≥ 10 ms; event-loop delay (beyond its 10 ms timer) per round p99 2.0 / 4.0 ms, max 11.0 / 20.0 ms",
  );
});
