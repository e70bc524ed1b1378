// Closed-loop steady load: each worker runs its workload's step in a loop
// until stopped, and every request is recorded with its start and end, so a
// fault's figures are read off the record afterwards: requests in flight at
// the instant of the fault, and failures that ended after it.
import { Balancer } from "./balancer.ts";
import type { Workload } from "./workloads.ts";

export interface RequestRecord {
  workload: string;
  startMs: number;
  endMs: number;
  ok: boolean;
  detail?: string;
  /** Which replica answered (billed calls), or the failed request was sent to, when known. */
  replica?: number;
  /** The resource it was for, when the workload says (an agent turn's conversation id). */
  resource?: string;
}

export class SteadyLoad {
  readonly records: RequestRecord[] = [];
  private readonly inFlight = new Set<{ workload: string; startMs: number }>();
  private running = false;
  private loops: Promise<void>[] = [];

  private readonly client: Balancer;
  /** [workload, workers] pairs. */
  private readonly plan: readonly (readonly [Workload, number])[];
  /** Pause between a worker's requests (ms): a steady rate rather than saturation. */
  private readonly thinkMs: number;

  constructor(client: Balancer, plan: readonly (readonly [Workload, number])[], thinkMs: number) {
    this.client = client;
    this.plan = plan;
    this.thinkMs = thinkMs;
  }

  start(): void {
    this.running = true;
    for (const [workload, workers] of this.plan) {
      for (let w = 0; w < workers; w++) this.loops.push(this.loop(workload, w));
    }
  }

  /** Requests sent and not yet answered, now (of one workload when named). */
  inFlightNow(workload?: string): number {
    if (workload === undefined) return this.inFlight.size;
    return [...this.inFlight].filter((entry) => entry.workload === workload).length;
  }

  /** Stops sending and waits for every request in flight to end. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  /** Records of `workload` that were in flight at some instant of [fromMs, toMs] (at fromMs when toMs is omitted). */
  inFlightDuring(workload: string, fromMs: number, toMs = fromMs): RequestRecord[] {
    return this.records.filter((r) => r.workload === workload && r.startMs <= toMs && r.endMs > fromMs);
  }

  /** Records that ended in [fromMs, toMs). */
  between(fromMs: number, toMs: number): RequestRecord[] {
    return this.records.filter((r) => r.endMs >= fromMs && r.endMs < toMs);
  }

  private async loop(workload: Workload, worker: number): Promise<void> {
    while (this.running) {
      const entry = { workload: workload.name, startMs: Date.now() };
      this.inFlight.add(entry);
      let record: RequestRecord;
      try {
        const outcome = await workload.step(this.client, worker);
        record = { workload: workload.name, startMs: entry.startMs, endMs: Date.now(), ...outcome };
      } catch (error) {
        record = { workload: workload.name, startMs: entry.startMs, endMs: Date.now(), ok: false, detail: describeError(error), replica: Balancer.replicaOf(error) };
      }
      this.inFlight.delete(entry);
      this.records.push(record);
      if (this.thinkMs > 0) await new Promise((r) => setTimeout(r, this.thinkMs));
    }
  }
}

export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: string }).code;
  return `${code ? `${code} ` : ""}${error.message}`.slice(0, 160);
}
