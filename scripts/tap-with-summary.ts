// Runs tap with the arguments given, passes its output through unchanged, and
// ends with the failures, if any (each failed file and its first failed
// assertions, one line each), then one plain line, "tests: N passed, N
// failed" (", N skipped" when some were). CI shows only a run's closing
// lines, after tap's coverage table: the failures must be among them.
// tap's own summary is an object literal (`# { total: N, pass: N }`) that
// CI's result reader does not recognise, so without this line a green run
// is recorded as having run no test. The exit code is tap's; a run
// whose summary cannot be found exits non-zero even if tap did not.
import { spawn } from "node:child_process";

const summaryLine = /^# \{ (total: \d+(?:, \w+: \d+)*) \}$/m;
/** Colour codes would hide the summary and the failures from the patterns. */
const colourCodes = /\u001b\[[0-9;]*m/g;

/** Reads `# { total: 12, pass: 10, fail: 1, skip: 1 }` into its counts. */
function countsOf(summary: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const pair of summary.split(", ")) {
    const [name, value] = pair.split(": ");
    if (name !== undefined && value !== undefined) counts.set(name, Number(value));
  }
  return counts;
}

// Every test signs up from 127.0.0.1 and, in CI, on one shared Redis: the
// per-address signup limit (20 an hour by default) is lifted for the whole
// run, child processes included, unless set (signup-throttle.test.ts sets its own).
const testEnv = { SIGNUP_LIMIT_PER_ADDRESS: "1000000", ...process.env };
const env = process.stdout.isTTY ? { ...testEnv, FORCE_COLOR: "1" } : testEnv;
// `tap` from node_modules/.bin, which npm scripts put on PATH.
const child = spawn("tap", process.argv.slice(2), { stdio: ["inherit", "pipe", "inherit"], env });

/** A top-level "not ok": a test file that failed. */
const failedFile = /^not ok \d+ - (\S+)/;
/** An indented "not ok": an assertion or subtest inside a file. */
const failedAssertion = /^\s+not ok \d+ - (.*)$/;
const shownAssertions = 5;
const failures: string[] = [];
let assertionsOfFile: string[] = [];

let tail = "";
let partialLine = "";
child.stdout.on("data", (chunk: Buffer) => {
  process.stdout.write(chunk);
  const text = chunk.toString("utf8");
  tail = (tail + text).slice(-8192);
  const lines = (partialLine + text).replace(colourCodes, "").split("\n");
  partialLine = lines.pop() ?? "";
  for (const line of lines) noteFailure(line);
});

/** Keeps each failed file with its first failed assertions (nested ones come before their file's line). */
function noteFailure(line: string): void {
  const file = failedFile.exec(line)?.[1];
  if (file) {
    failures.push(`FAILED ${file}`, ...assertionsOfFile.slice(0, shownAssertions).map((a) => `  not ok: ${a.slice(0, 300)}`));
    assertionsOfFile = [];
    return;
  }
  const assertion = failedAssertion.exec(line)?.[1];
  if (assertion) assertionsOfFile.push(assertion);
  else if (/^ok \d+ - /.test(line)) assertionsOfFile = [];
}

child.on("close", (code, signal) => {
  const plain = tail.replace(colourCodes, "");
  const match = summaryLine.exec(plain);
  if (!match?.[1]) {
    console.error(`tap ended (${signal ?? `exit ${code}`}) without its summary line`);
    process.exit(code || 1);
  }
  const counts = countsOf(match[1]);
  const skipped = (counts.get("skip") ?? 0) + (counts.get("todo") ?? 0);
  const suffix = skipped > 0 ? `, ${skipped} skipped` : "";
  if (failures.length > 0) process.stdout.write(`\nfailed test files:\n${failures.join("\n")}\n`);
  process.stdout.write(`tests: ${counts.get("pass") ?? 0} passed, ${counts.get("fail") ?? 0} failed${suffix}\n`);
  process.exit(code ?? 1);
});
