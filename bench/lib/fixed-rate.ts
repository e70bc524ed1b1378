// An open-loop load generator: requests are scheduled at a fixed rate and
// latency is measured from the scheduled start, so a stalled server is not
// hidden by the generator slowing down (no coordinated omission).
import { Pool } from "undici";

export interface FixedRateResult {
  latenciesMs: number[];
  errors: number;
  sent: number;
  achievedRps: number;
}

export interface RequestSpec {
  method: "GET" | "POST";
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export async function fixedRate(origin: string, spec: RequestSpec, ratePerSecond: number, durationMs: number, connections = 64): Promise<FixedRateResult> {
  const pool = new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 30_000 });
  const latenciesMs: number[] = [];
  let errors = 0;
  let sent = 0;
  const inflight: Promise<void>[] = [];
  const start = performance.now();
  const total = Math.round((ratePerSecond * durationMs) / 1000);
  const fire = async (scheduledAt: number): Promise<void> => {
    try {
      const res = await pool.request({ method: spec.method, path: spec.path, headers: spec.headers, body: spec.body ?? null });
      await res.body.dump();
      if (res.statusCode >= 400) errors += 1;
      else latenciesMs.push(performance.now() - scheduledAt);
    } catch {
      errors += 1;
    }
  };
  while (sent < total) {
    const now = performance.now();
    const due = Math.min(total, Math.floor(((now - start) * ratePerSecond) / 1000));
    while (sent < due) {
      const scheduledAt = start + (sent * 1000) / ratePerSecond;
      inflight.push(fire(scheduledAt));
      sent += 1;
    }
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(inflight);
  const elapsed = performance.now() - start;
  await pool.close();
  return { latenciesMs, errors, sent, achievedRps: (latenciesMs.length * 1000) / elapsed };
}
