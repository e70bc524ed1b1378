// Runs batches' lines in this process (docs/api/batches.md, "Priority"). A
// batch's driver leases a few lines from its BatchActor, runs each through
// the injected `runLine` (the mount's own route, in process), stores the
// answer, then reports it; the actor counts each line once. Lines never run
// inside an actor turn, so cancel and retrieve answer at once.
//
// Priority: interactive traffic first. At most `concurrency` lines run at a
// time in the whole process (all batches together), a line starts only after
// the I/O already queued (setImmediate: interactive requests that arrived
// first are read before it), and not while `busy()` says interactive traffic
// needs the process (the event loop's recent delay above a threshold).
import { randomBytes } from "node:crypto";
import type { Logger } from "../../core/log.ts";
import { callActor, type ActorHost } from "../host.ts";
import { needsFiles, type BatchActorDefinition } from "./batch-actor.ts";
import { AnswerReporter } from "./answer-reporter.ts";
import { outputFileId, type BatchFiles } from "./batch-files.ts";
import type { BatchData } from "./types.ts";

/** What running one line came to. */
export type LineOutcome =
  /** Answered (successfully or with an error answer): `text` is its output line. */
  | { kind: "answered"; ok: boolean; custom_id: string; text: string }
  /** The budget is exhausted: the batch pauses until the watchdog tries again. */
  | { kind: "budget" }
  /** The key's rate limit: the line goes back and runs again after `retryInMs` (a second at most, then it is asked again). */
  | { kind: "later"; retryInMs: number };

export interface BatchRunnerDeps {
  host: ActorHost;
  batch: BatchActorDefinition;
  files: BatchFiles;
  runLine(batch: BatchData, index: number, line: string): Promise<LineOutcome>;
  /** The output and error files of a batch whose lines are settled, in the batch's API's line shape. */
  outputs(batch: BatchData, results: Awaited<ReturnType<BatchFiles["results"]>>): Promise<{ output: string[]; errors: string[] }>;
  /** Lines in flight at once, all batches of this process together. */
  concurrency: number;
  /** True while interactive traffic needs the process: no line starts. */
  busy(): boolean;
  log: Logger;
}

/** How long a stored answer may wait for others to be counted with it: a model call's time, short beside a batch's hours. */
const reportWindowMs = 25;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/**
 * The longest a line refused by its key's rate limit waits before it goes
 * back to be leased again: short, so a cancel is seen within it and a window
 * that turned is used at once; the wait does not hold a slot.
 */
const rateLimitedWaitMs = 1_000;

export class BatchRunner {
  /** This process's runner: leases held by another epoch are a dead process's. */
  readonly epoch = randomBytes(8).toString("hex");
  private readonly deps: BatchRunnerDeps;
  private readonly drivers = new Map<string, Promise<void>>();
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private stopped = false;

  constructor(deps: BatchRunnerDeps) {
    this.deps = deps;
  }

  /** Starts a driver on the batch unless one runs; what it finds to do decides the rest. */
  kick(batchId: string): void {
    if (this.stopped || this.drivers.has(batchId)) return;
    const driver = this.drive(batchId)
      .catch((error: unknown) => this.deps.log.warn("batch driver stopped; the watchdog resumes it", { batch_id: batchId, error }))
      .finally(() => this.drivers.delete(batchId));
    this.drivers.set(batchId, driver);
  }

  /** No new line starts; the lines in flight finish (their answers are stored and counted). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const w of this.waiting.splice(0)) w();
    await Promise.allSettled([...this.drivers.values()]);
  }

  private async drive(batchId: string): Promise<void> {
    const { host, batch: definition, concurrency } = this.deps;
    /** Lines leased and not yet through their model call: what `concurrency` bounds, so the next lines start while answers wait for their group. */
    const inFlight = new Set<Promise<void>>();
    /** Answers waiting to be stored and counted. */
    const reporting = new Set<Promise<void>>();
    let readLine: ((index: number) => Promise<string | undefined>) | undefined;
    const reporter = new AnswerReporter(
      async (answers) => {
        // The answers are stored before they are counted: a crash in between re-runs those lines, whose second answers overwrite the first.
        await this.deps.files.putResults(batchId, answers);
        await callActor(host, definition, batchId, "answeredMany", { epoch: this.epoch, answers: answers.map((a) => ({ index: a.index, ok: a.result.ok })) });
      },
      () => inFlight.size,
      { windowMs: reportWindowMs, maxGroup: concurrency },
    );
    const track = (report: Promise<void>) => {
      reporting.add(report);
      void report.finally(() => reporting.delete(report));
    };
    for (;;) {
      if (this.stopped) break;
      // Lines leased and not yet counted stay under twice the concurrency (those in their model call, and the answers
      // waiting for their group): they are what a kill makes run again (docs/api/batches.md).
      const free = Math.min(concurrency - inFlight.size, 2 * concurrency - inFlight.size - reporting.size);
      const { batch, indices } = free > 0 ? await callActor(host, definition, batchId, "lease", { epoch: this.epoch, max: free }) : { batch: undefined, indices: [] };
      if (batch && !readLine) readLine = this.deps.files.lineReader(batch.input_file_id);
      for (const index of indices) {
        const line = this.runOne(batchId, batch!, index, readLine!, reporter, track).finally(() => inFlight.delete(line));
        inFlight.add(line);
      }
      if (indices.length > 0 && inFlight.size < concurrency) continue;
      if (inFlight.size === 0) {
        // The last answers counted first: the next lease then sees the batch as they left it (finalizing, or lines left).
        if (reporting.size > 0) {
          await Promise.allSettled([...reporting]);
          continue;
        }
        if (batch && needsFiles(batch)) await this.finalize(batch);
        if (batch?.status === "cancelling") {
          // Lines leased before the cancel and answered since: the actor now sees no lease left.
          const after = await callActor(host, definition, batchId, "lease", { epoch: this.epoch, max: 1 });
          if (after.batch && needsFiles(after.batch)) await this.finalize(after.batch);
        }
        break;
      }
      await Promise.race(inFlight);
    }
    await Promise.allSettled([...inFlight]);
    await Promise.allSettled([...reporting]);
  }

  /** Runs one line's model call; its answer goes to `reporter`, whose pending report `track` is given (the line is done with its slot then). */
  private async runOne(batchId: string, batch: BatchData, index: number, readLine: (index: number) => Promise<string | undefined>, reporter: AnswerReporter, track: (report: Promise<void>) => void): Promise<void> {
    const { host, batch: definition } = this.deps;
    await this.acquire();
    let holdsSlot = true;
    try {
      // Cancelled since the lease: the line never starts.
      if (this.stopped) return;
      const line = await readLine(index);
      const outcome = line === undefined ? missingLine(index) : await this.deps.runLine(batch, index, line);
      if (outcome.kind === "budget") {
        await callActor(host, definition, batchId, "release", { index, pause: "budget_exceeded" });
        return;
      }
      if (outcome.kind === "later") {
        // Other batches (other keys) take the slot meanwhile.
        holdsSlot = false;
        this.release();
        await sleep(Math.min(outcome.retryInMs, rateLimitedWaitMs));
        await callActor(host, definition, batchId, "release", { index, pause: null });
        return;
      }
      track(
        reporter.report(index, { ok: outcome.ok, custom_id: outcome.custom_id, text: outcome.text }).catch(async (error: unknown) => {
          this.deps.log.warn("batch answers could not be stored or counted; those lines run again", { batch_id: batchId, index, error });
          await callActor(host, definition, batchId, "release", { index, pause: null }).catch(() => undefined);
        }),
      );
    } catch (error) {
      this.deps.log.warn("batch line failed on our side; it runs again", { batch_id: batchId, index, error });
      await callActor(host, definition, batchId, "release", { index, pause: null }).catch(() => undefined);
    } finally {
      if (holdsSlot) this.release();
    }
  }

  private async finalize(batch: BatchData): Promise<void> {
    const { files, host, batch: definition } = this.deps;
    const { output, errors } = await this.deps.outputs(batch, await files.results(batch.id, batch.total));
    const owner = { organization_id: batch.key.organization_id, environment_id: batch.key.environment_id };
    // Ids from the batch's: a finalize retried after a crash writes the same files again.
    const write = async (suffix: "output" | "error", lines: string[]) => {
      if (lines.length === 0) return null;
      const bytes = lines.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0);
      return (await files.put(owner, { id: outputFileId(batch.id, suffix), filename: `${batch.id}_${suffix}.jsonl`, purpose: "batch_output", lines, bytes })).id;
    };
    const outputId = await write("output", output);
    const errorId = await write("error", errors);
    await callActor(host, definition, batch.id, "finalized", { output_file_id: outputId, error_file_id: errorId });
  }

  /** A process-wide slot, after the I/O already queued and while interactive traffic does not need the process. */
  private async acquire(): Promise<void> {
    while (this.running >= this.deps.concurrency) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running += 1;
    await new Promise((resolve) => setImmediate(resolve));
    while (this.deps.busy() && !this.stopped) await sleep(10);
  }

  private release(): void {
    this.running -= 1;
    this.waiting.shift()?.();
  }
}

function missingLine(index: number): LineOutcome {
  return { kind: "answered", ok: false, custom_id: `line-${index + 1}`, text: JSON.stringify({ id: `batch_req_missing_${index}`, custom_id: `line-${index + 1}`, response: null, error: { code: "line_missing", message: `line ${index + 1} of the input file is gone (the file was deleted)` } }) };
}
