// The live line on stderr, once a second: the last whole second's answers,
// its p50/p99, and the errors so far by status and code. Only on a terminal
// (a log file gets the summary, not a thousand carriage returns) and not
// with --quiet.
import { fmt } from "./stats.ts";
import { percentiles, type Recorder } from "./recorder.ts";
import { terminalSafe } from "./terminal-text.ts";

export function startProgress(recorder: Recorder, startedAt: number, durationS: number, stream: NodeJS.WriteStream = process.stderr): () => void {
  const timer = setInterval(() => {
    const elapsed = (performance.now() - startedAt) / 1000;
    const last = recorder.seconds[Math.floor(elapsed) - 1];
    const p = percentiles(last?.latenciesMs ?? []);
    const errors = [...recorder.errorsByKey].map(([k, n]) => `${k}×${n}`).join(" ");
    const line = `[${fmt(Math.min(elapsed, durationS), 0).padStart(4)}/${durationS}s] ${String((last?.ok ?? 0) + (last?.errors ?? 0)).padStart(6)} req/s  p50 ${fmt(p.p50)} ms  p99 ${fmt(p.p99)} ms  errors ${recorder.errors}${errors ? ` (${errors})` : ""}`;
    // The error keys hold the server's codes: shown, never obeyed.
    stream.write(`\r\x1b[2K${terminalSafe(line)}`);
  }, 1000);
  timer.unref();
  return () => {
    clearInterval(timer);
    stream.write("\r\x1b[2K");
  };
}
