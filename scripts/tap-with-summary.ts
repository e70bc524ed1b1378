// Runs tap with the arguments given, passes its output through unchanged, and
// ends with one plain line, "tests: N passed, N failed" (", N skipped" when
// some were). tap's own summary is an object literal (`# { total: N, pass:
// N }`) that CI's result reader does not recognise, so without this line a
// green run is recorded as having run no test. The exit code is tap's; a run
// whose summary cannot be found exits non-zero even if tap did not.
import { spawn } from "node:child_process";

const summaryLine = /^# \{ (total: \d+(?:, \w+: \d+)*) \}$/m;

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

let tail = "";
child.stdout.on("data", (chunk: Buffer) => {
  process.stdout.write(chunk);
  tail = (tail + chunk.toString("utf8")).slice(-8192);
});

child.on("close", (code, signal) => {
  // Colour codes would hide the summary from the pattern.
  const plain = tail.replace(/\u001b\[[0-9;]*m/g, "");
  const match = summaryLine.exec(plain);
  if (!match?.[1]) {
    console.error(`tap ended (${signal ?? `exit ${code}`}) without its summary line`);
    process.exit(code || 1);
  }
  const counts = countsOf(match[1]);
  const skipped = (counts.get("skip") ?? 0) + (counts.get("todo") ?? 0);
  const suffix = skipped > 0 ? `, ${skipped} skipped` : "";
  process.stdout.write(`tests: ${counts.get("pass") ?? 0} passed, ${counts.get("fail") ?? 0} failed${suffix}\n`);
  process.exit(code ?? 1);
});
