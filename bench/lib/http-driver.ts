// A closed-loop HTTP driver for the benchmarks: `concurrency` workers pull
// jobs from a list and send them over one keep-alive undici pool, recording
// each job's latency and failures.
import { Pool } from "undici";

export interface DriveResult {
  latenciesMs: number[];
  errors: number;
  firstError: string | undefined;
  seconds: number;
}

export interface Job {
  method: "GET" | "POST";
  path: string;
  body?: unknown;
}

export async function drive(origin: string, headers: Record<string, string>, jobs: Job[], concurrency: number): Promise<DriveResult> {
  const pool = new Pool(origin, { connections: concurrency, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: 120_000, bodyTimeout: 120_000 });
  const latenciesMs: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let next = 0;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    for (;;) {
      const index = next++;
      const job = jobs[index];
      if (!job) return;
      const t0 = performance.now();
      try {
        const res = await pool.request({
          method: job.method,
          path: job.path,
          headers: job.body === undefined ? headers : { ...headers, "content-type": "application/json" },
          body: job.body === undefined ? null : JSON.stringify(job.body),
        });
        const text = await res.body.text();
        if (res.statusCode >= 400) {
          errors += 1;
          firstError ??= `${res.statusCode} ${text.slice(0, 300)}`;
        } else latenciesMs.push(performance.now() - t0);
      } catch (error) {
        errors += 1;
        firstError ??= error instanceof Error ? error.message : String(error);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  return { latenciesMs, errors, firstError, seconds };
}

/** Resident memory of a process in MiB (Linux /proc). */
export async function rssMiB(pid: number | undefined): Promise<number> {
  if (!pid) return NaN;
  const { readFile } = await import("node:fs/promises");
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}
