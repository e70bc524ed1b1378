// What a Troupe's runtime did during one window of load, read from its own
// /metrics (prom-client's default metrics): garbage collections by kind
// (count, total pause, how many took 10 ms or more) and the event loop's
// delay. prom-client resets its event-loop histogram at every scrape, so the
// delay figures scraped after a window are that window's alone; the GC
// counters are totals, so a window's are the difference of two scrapes.
// bench:chat prints them beside the fixed-rate tail, so a p99 can be told
// apart: a pause of Troupe's own (GC, a long task) shows in these figures,
// queueing for a CPU on a busy machine does not.
import { get } from "node:http";

export interface GcKind {
  count: number;
  seconds: number;
  /** Collections of 10 ms or more. */
  over10ms: number;
}

export interface RuntimeSnapshot {
  gc: Map<string, GcKind>;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

export interface RuntimeWindow extends RuntimeSnapshot {
  seconds: number;
}

/**
 * prom-client samples the loop with a timer of this period
 * (eventLoopMonitoringPrecision, left at its default by Troupe) and records
 * whole periods, so a delay is what a period took beyond it.
 */
export const loopTimerMs = 10;

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const labelPair = /([a-z_]+)="([^"]*)"/g;

/** Parses the GC histogram and the event-loop delay from a Prometheus text exposition (whatever other labels the series carry). */
export function parseRuntime(text: string): RuntimeSnapshot {
  const gc = new Map<string, GcKind>();
  let loopDelayP99Ms = NaN;
  let loopDelayMaxMs = NaN;
  for (const line of text.split("\n")) {
    const sample = sampleLine.exec(line);
    if (!sample) continue;
    const [, name, labelText = "", text] = sample;
    const value = Number(text);
    if (name === "nodejs_eventloop_lag_p99_seconds") loopDelayP99Ms = Math.max(0, value * 1000 - loopTimerMs);
    else if (name === "nodejs_eventloop_lag_max_seconds") loopDelayMaxMs = Math.max(0, value * 1000 - loopTimerMs);
    else if (name?.startsWith("nodejs_gc_duration_seconds_")) {
      const labels = new Map([...labelText.matchAll(labelPair)].map(([, key = "", v = ""]) => [key, v]));
      const kind = labels.get("kind") ?? "";
      const entry = gc.get(kind) ?? { count: 0, seconds: 0, over10ms: 0 };
      gc.set(kind, entry);
      if (name.endsWith("_count")) entry.count = value;
      else if (name.endsWith("_sum")) entry.seconds = value;
      // The bucket of collections under 10 ms; the count minus it is the slow ones (added once the count is known).
      else if (labels.get("le") === "0.01") entry.over10ms = -value;
    }
  }
  for (const entry of gc.values()) entry.over10ms += entry.count;
  return { gc, loopDelayP99Ms, loopDelayMaxMs };
}

/**
 * One scrape's text, on a connection of its own: scrapes come seconds apart,
 * longer than the metrics listener keeps an idle connection, and a pooled
 * one it has closed fails the request ("other side closed").
 */
export function scrapeText(metricsUrl: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = get(metricsUrl, { agent: false }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (text += chunk));
      response.on("end", () => (response.statusCode === 200 ? resolve(text) : reject(new Error(`${metricsUrl} answered ${response.statusCode}`))));
      response.on("error", reject);
    });
    request.on("error", reject);
  });
}

export async function scrapeRuntime(metricsUrl: string): Promise<RuntimeSnapshot> {
  return parseRuntime(await scrapeText(metricsUrl));
}

/** The window between two scrapes: GC counters' differences; the delay as scraped at its end. */
export function windowBetween(before: RuntimeSnapshot, after: RuntimeSnapshot, seconds: number): RuntimeWindow {
  const gc = new Map<string, GcKind>();
  for (const [kind, end] of after.gc) {
    const start = before.gc.get(kind) ?? { count: 0, seconds: 0, over10ms: 0 };
    gc.set(kind, { count: end.count - start.count, seconds: end.seconds - start.seconds, over10ms: end.over10ms - start.over10ms });
  }
  return { gc, loopDelayP99Ms: after.loopDelayP99Ms, loopDelayMaxMs: after.loopDelayMaxMs, seconds };
}

/** One line: per kind, collections a second, pause ms a second, slow ones; the loop's delay p99 and max. */
export function describeWindows(windows: RuntimeWindow[]): string {
  const seconds = windows.reduce((s, w) => s + w.seconds, 0);
  const kinds = new Map<string, GcKind>();
  for (const w of windows) {
    for (const [kind, g] of w.gc) {
      const sum = kinds.get(kind) ?? { count: 0, seconds: 0, over10ms: 0 };
      kinds.set(kind, { count: sum.count + g.count, seconds: sum.seconds + g.seconds, over10ms: sum.over10ms + g.over10ms });
    }
  }
  const gc = [...kinds]
    .filter(([, g]) => g.count > 0)
    .map(([kind, g]) => `${kind} ${(g.count / seconds).toFixed(1)}/s, ${((g.seconds * 1000) / seconds).toFixed(2)} ms/s paused, ${g.over10ms} ≥ 10 ms`)
    .join("; ");
  const p99 = windows.map((w) => w.loopDelayP99Ms.toFixed(1)).join(" / ");
  const max = windows.map((w) => w.loopDelayMaxMs.toFixed(1)).join(" / ");
  return `GC over ${seconds.toFixed(0)} s: ${gc || "none"}; event-loop delay (beyond its ${loopTimerMs} ms timer) per round p99 ${p99} ms, max ${max} ms`;
}
