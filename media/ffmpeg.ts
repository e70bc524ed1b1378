// Runs ffmpeg/ffprobe as child processes with argument arrays (never a
// shell, so no file name or prompt can inject anything), a time limit and
// an optional AbortSignal. A failure carries the end of ffmpeg's stderr,
// which is where it says what went wrong.
import { execFile } from "node:child_process";

/** missing: the tool is not installed; timeout: killed at the time limit; failed: it exited with an error (bad input, usually). */
export type FfmpegFailure = "missing" | "timeout" | "failed";

export class FfmpegError extends Error {
  readonly tool: string;
  readonly kind: FfmpegFailure;
  readonly stderrTail: string;
  constructor(tool: string, kind: FfmpegFailure, message: string, stderrTail: string, options: { cause?: unknown } = {}) {
    super(stderrTail ? `${message}: ${stderrTail}` : message, options);
    this.name = "FfmpegError";
    this.tool = tool;
    this.kind = kind;
    this.stderrTail = stderrTail;
  }
}

export interface RunOptions {
  /** Kill the process after this long (default 120 s: a few clips of a few seconds re-encode well within it). */
  timeoutMs?: number;
  signal?: AbortSignal | undefined;
}

/** Lines of stderr kept in errors: enough for ffmpeg's diagnosis, not its whole banner. */
const stderrTailChars = 800;

/** Runs `tool` (ffmpeg or ffprobe) with `args`; resolves with stdout. */
export function runTool(tool: "ffmpeg" | "ffprobe", args: readonly string[], opts: RunOptions = {}): Promise<string> {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  return new Promise((resolve, reject) => {
    execFile(
      tool,
      [...args],
      { timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 16 * 1024 * 1024, ...(opts.signal ? { signal: opts.signal } : {}) },
      (error, stdout, stderr) => {
        if (!error) return resolve(stdout);
        const tail = stderr.trim().slice(-stderrTailChars);
        const err = error as NodeJS.ErrnoException & { killed?: boolean };
        if (err.code === "ENOENT") return reject(new FfmpegError(tool, "missing", `${tool} is not installed (not found on PATH)`, "", { cause: error }));
        if (opts.signal?.aborted) return reject(opts.signal.reason ?? error);
        if (err.killed) return reject(new FfmpegError(tool, "timeout", `${tool} did not finish within ${timeoutMs} ms`, tail, { cause: error }));
        reject(new FfmpegError(tool, "failed", `${tool} failed (exit ${String(err.code)})`, tail, { cause: error }));
      },
    );
  });
}

/** ffmpeg with the flags every call wants: quiet, overwrite, no stdin. */
export function ffmpeg(args: readonly string[], opts: RunOptions = {}): Promise<string> {
  return runTool("ffmpeg", ["-hide_banner", "-nostdin", "-v", "error", "-y", ...args], opts);
}

let filtersCache: Promise<string> | undefined;
/** Whether this ffmpeg build has a filter (drawtext needs libfreetype). Asked once per process. */
export async function hasFilter(name: string): Promise<boolean> {
  filtersCache ??= runTool("ffmpeg", ["-hide_banner", "-filters"], { timeoutMs: 10_000 }).catch(() => "");
  const list = await filtersCache;
  return new RegExp(`^\\s*\\S+\\s+${name}\\s`, "m").test(list);
}
