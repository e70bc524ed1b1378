// The venv with the official `openai` and `anthropic` PyPI packages
// (scripts/python-sdks.sh) and a runner for the scripts in ./python: each
// reads its settings as JSON on stdin and prints one JSON object of what the
// SDK returned. TEST_PYTHON_SDK_PYTHON (CI exports it) or the cached venv;
// in CI a missing venv is a loud failure, outside CI the test file skips
// with the reason (withPythonSdk).
import { spawn } from "node:child_process";
import { accessSync, constants, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Test } from "tap";

const scripts = join(import.meta.dirname, "python");

/** The venv's python, or a string saying why there is none (outside CI only). */
function pythonSdk(): string | { skip: string } {
  const given = process.env["TEST_PYTHON_SDK_PYTHON"];
  const cache = process.env["TROUPE_CACHE_DIR"] ?? join(homedir(), ".cache", "troupe");
  const python = given || join(cache, "python-sdks", "bin", "python");
  try {
    accessSync(python, constants.X_OK);
    // The venv keeps the hash of the pins it was made from: an older venv is not the SDKs this test names.
    readFileSync(join(python, "..", "..", "requirements.sha256"), "utf8");
    return python;
  } catch {
    const why = `no Python SDK venv at ${python}: run \`bash scripts/python-sdks.sh\` (it prints the python to export as TEST_PYTHON_SDK_PYTHON)`;
    if (given || process.env["CI"] === "true") throw new Error(why);
    return { skip: why };
  }
}

/**
 * The frame of every Python SDK test file: `body` gets the venv's python and
 * a started harness, stopped at teardown. Without a venv (outside CI) the
 * file plans no tests and says why, and no harness is started.
 */
export async function withPythonSdk<H extends { stop(): Promise<void> }>(t: Test, start: () => Promise<H>, body: (python: string, h: H) => Promise<void>): Promise<void> {
  const python = pythonSdk();
  if (typeof python !== "string") return t.plan(0, python.skip);
  const h = await start();
  t.teardown(() => h.stop());
  await body(python, h);
}

/** Runs python/<script> with `input` as JSON on stdin; its stdout's JSON, or an error with its stderr. */
export function runPython(python: string, script: string, input: unknown, timeoutMs = 60_000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, ["-B", join(scripts, script)], { stdio: ["pipe", "pipe", "pipe"], timeout: timeoutMs, env: { PATH: process.env["PATH"] ?? "", PYTHONUNBUFFERED: "1" } });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (err += c.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (code !== 0) return reject(new Error(`${script} exited ${signal ?? code}:\n${err}`));
      try {
        resolve(JSON.parse(out));
      } catch {
        reject(new Error(`${script} printed no JSON:\n${out}\n${err}`));
      }
    });
    child.stdin.end(JSON.stringify(input));
  });
}
