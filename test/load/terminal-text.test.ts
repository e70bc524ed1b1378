// troupe-load prints strings the measured server chose (error codes and
// examples, request ids): their escape sequences are shown, never sent to
// the terminal.
import t from "tap";
import { reportSchema, summaryTable, type Report } from "../../load/report.ts";
import { terminalSafe } from "../../load/terminal-text.ts";

const osc8Link = "\u001b]8;;https://evil.example/\u0007click\u001b]8;;\u0007";
const clearScreen = "\u001b[2J\u001b[H";
const c1Csi = "\u009b31m";

t.test("control characters are written as escapes, text and tabs kept", async (t) => {
  t.equal(terminalSafe("plain\ttext é ✓"), "plain\ttext é ✓");
  t.equal(terminalSafe(clearScreen), "\\u001b[2J\\u001b[H");
  t.equal(terminalSafe("a\nb\rc"), "a\\u000ab\\u000dc", "a server's message cannot start a line of its own");
  t.equal(terminalSafe(c1Csi), "\\u009b31m", "C1's one-byte CSI too");
  t.equal(terminalSafe("\u007f"), "\\u007f");
});

t.test("the summary table shows a hostile server's codes and ids without their escapes", async (t) => {
  const empty = { count: 0, mean: null, p50: null, p90: null, p99: null, p999: null, max: null };
  const report: Report = reportSchema.parse({
    tool: "troupe-load",
    version: 1,
    scenario: "chat",
    model: `simulated-chat${clearScreen}`,
    target: "http://127.0.0.1:1",
    mode: "closed",
    concurrency: 1,
    rate: null,
    duration_s: 1,
    ramp_up_s: 0,
    started_at: "2026-11-25T12:00:00.000Z",
    elapsed_s: 1,
    requests: 1,
    ok: 0,
    errors: 1,
    throughput_rps: 1,
    latency_ms: { all: { ...empty, count: 1, mean: 1, p50: 1, p90: 1, p99: 1, p999: 1, max: 1 }, by_operation: {} },
    scheduler_lag_ms: empty,
    errors_by_code: { [`500 ${osc8Link}`]: 1 },
    error_examples: { [`500 ${osc8Link}`]: `boom${c1Csi}` },
    slowest: [{ latency_ms: 1, operation: "chat", request_id: `req_1${clearScreen}`, status: 500, at_s: 0.5 }],
    per_second: [],
  });
  const table = summaryTable(report);
  t.notMatch(table, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/, "no control character but newlines reaches the terminal");
  t.match(table, "\\u001b]8;;https://evil.example/\\u0007click", "the link is shown as text");
  t.match(table, "req_1\\u001b[2J", "the request id too");
});
