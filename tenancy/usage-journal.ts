// The usage journal: every usage record is written to an append-only file
// before its call is answered, so a process that dies right after answering
// (kill -9, an OOM kill, a container restart) has not lost the record — the
// kernel holds it — and the next start replays what the ledger had not yet
// applied. One write(2) of one JSON line per record, a few microseconds; the
// ledger itself is still written off the request path, in batches, by the
// UsageRecorder.
//
// Segments: the recorder rotates the journal each time it takes a batch for
// the ledger (`cut`): every record of the segments closed so far is in that
// batch or in an earlier one that succeeded (one ledger write at a time,
// a failed batch goes back in front). When the batch's write succeeds, those
// segments are deleted (`applied`). A restart replays the segments left in
// order; the ledger is idempotent on usage_key, so a record both applied and
// replayed is billed once.
//
// Grouped writes: a call answered by an HTTP route awaits its record's
// write (appendGrouped) instead of making it: the lines of every call
// answered in the same event-loop turn go out in one write(2) at the end of
// that turn (setImmediate, after the poll phase's I/O callbacks), and then
// their answers. A write(2) costs ~15 µs of the event loop under load on
// this kind of machine whatever its size (bench/chat.ts profiles), so at
// saturation a group of k calls pays it once instead of k times; at a low
// rate a group is one call, the same write as before plus one turn's hop.
// Any synchronous append, a cut and close write the waiting group first.
//
// Machine loss (power, kernel panic) is another matter: the page cache is
// flushed with fdatasync every syncEveryMs in the background, so at most
// that window's records can be lost with the machine.
import { closeSync, fdatasync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { unlink } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import type { Logger } from "../core/log.ts";
import { readVersioned, versionedJson } from "../core/schema-version.ts";
import type { UsageRecord } from "../providers/usage.ts";

/** Background fdatasync of the open segment: the window a machine loss (not a process crash) can cost. */
export const syncEveryMs = 100;

const usageRecordSchema = z.object({
  organization_id: z.string(),
  project_id: z.string(),
  environment_id: z.string(),
  api_key_id: z.string(),
  live: z.boolean(),
  category: z.enum(["chat", "embeddings", "vision", "translation", "images", "audio", "video", "agents"]),
  model: z.string(),
  provider: z.string(),
  input_tokens: z.number(),
  cached_input_tokens: z.number().optional(),
  cache_write_input_tokens: z.number().optional(),
  output_tokens: z.number(),
  units: z.number(),
  cost_usd: z.number(),
  cost_nanos: z.number(),
  request_id: z.string(),
  usage_key: z.string(),
  created_at: z.string(),
});

const segmentName = /^usage-(\d{16})\.log$/;

/** The records a crashed run left behind, oldest first; a torn last line (cut mid-write) is skipped. */
export function readJournal(dir: string, log?: Logger): { records: UsageRecord[]; segments: string[] } {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => segmentName.test(n)).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { records: [], segments: [] };
    throw error;
  }
  const records: UsageRecord[] = [];
  for (const name of names) {
    for (const line of readFileSync(join(dir, name), "utf8").split("\n")) {
      if (line === "") continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        log?.warn("usage journal: a torn line skipped", { segment: name });
        continue;
      }
      // Lines of a release before schema versions are bare records (version 0).
      const record = usageRecordSchema.safeParse(readVersioned("usage-record", parsed));
      if (record.success) records.push(record.data);
      else log?.warn("usage journal: an unreadable record skipped", { segment: name, error: z.prettifyError(record.error) });
    }
  }
  return { records, segments: names.map((n) => join(dir, n)) };
}

export class UsageJournal {
  private readonly dir: string;
  private readonly log: Logger;
  private sequence = 0;
  private fd: number;
  private path: string;
  /** Closed segments whose records are all in a batch taken for the ledger, by the cut that took them. */
  private readonly cutSegments = new Map<number, string[]>();
  private closedSinceCut: string[] = [];
  private cuts = 0;
  private dirty = false;
  private syncing = false;
  /** Segments closed while their fdatasync was in flight: closed when it ends (never an fd number reused under it). */
  private closeAfterSync: number[] = [];
  private readonly syncTimer: NodeJS.Timeout;
  /** Lines of grouped appends not written yet, and the promise their callers await. */
  private group = "";
  private groupWritten: Promise<void> | undefined;
  private endGroup: (() => void) | undefined;
  /** The last grouped write failed: logged once until one succeeds. */
  private groupFailing = false;

  /**
   * Opens a new segment in `dir` (created 0700). `leftover`: the segments a
   * crashed run left (readJournal), whose records the recorder has been
   * given again: they are deleted with the first batch that holds them.
   */
  constructor(dir: string, log: Logger, leftover: readonly string[] = []) {
    this.dir = dir;
    this.log = log;
    this.closedSinceCut = [...leftover];
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // After every segment already there, so a new run never appends to a crashed run's torn last line.
    const existing = readdirSync(dir).map((n) => Number(segmentName.exec(n)?.[1] ?? 0));
    this.sequence = Math.max(Date.now() * 1000, ...existing);
    [this.fd, this.path] = this.openSegment();
    this.syncTimer = setInterval(() => this.sync(), syncEveryMs);
    this.syncTimer.unref();
  }

  private openSegment(): [number, string] {
    this.sequence += 1;
    const path = join(this.dir, `usage-${String(this.sequence).padStart(16, "0")}.log`);
    return [openSync(path, "a", 0o600), path];
  }

  /** Writes one record before its call is answered. Throws only if the file cannot be written. */
  append(record: UsageRecord): void {
    // In its schema-version envelope: two string concatenations around the JSON (bench/journal-append.ts).
    const line = versionedJson(JSON.stringify(record)) + "\n";
    if (this.group === "") writeSync(this.fd, line);
    else {
      // The waiting group first, in the same write: the file keeps the calls' order.
      writeSync(this.fd, this.group + line);
      this.group = "";
    }
    this.dirty = true;
  }

  /**
   * Queues one record's line for the group written at the end of this
   * event-loop turn; the promise settles once it is written (or the write
   * failed, logged: the record is then in memory only, as with append).
   * Answer the call only after it.
   */
  appendGrouped(record: UsageRecord): Promise<void> {
    this.group += versionedJson(JSON.stringify(record)) + "\n";
    if (!this.groupWritten) {
      this.groupWritten = new Promise((resolve) => (this.endGroup = resolve));
      setImmediate(this.writeGroup);
    }
    return this.groupWritten;
  }

  private readonly writeGroup = (): void => {
    const done = this.endGroup;
    this.groupWritten = undefined;
    this.endGroup = undefined;
    this.writeWaitingGroup();
    done?.();
  };

  /**
   * Writes the grouped lines still waiting (a synchronous append may have
   * written them already). A failure is logged, once until a write
   * succeeds: those records are then in memory only, as with append.
   */
  private writeWaitingGroup(): void {
    if (this.group === "") return;
    const lines = this.group;
    this.group = "";
    try {
      writeSync(this.fd, lines);
      this.dirty = true;
      this.groupFailing = false;
    } catch (error) {
      if (!this.groupFailing) this.log.error("usage journal write failed: records are in memory only until it recovers", { error });
      this.groupFailing = true;
    }
  }

  /**
   * The recorder takes a batch for the ledger: every record appended so far
   * is in it or in an earlier batch. Starts a new segment; returns the cut's
   * number, to pass to `applied` once the batch is in the ledger.
   */
  cut(): number {
    // Grouped lines belong to records already in the batch being taken: into the segment that goes with it.
    this.writeWaitingGroup();
    const [fd, path] = this.openSegment();
    const old = this.fd;
    this.closedSinceCut.push(this.path);
    [this.fd, this.path] = [fd, path];
    if (this.syncing) this.closeAfterSync.push(old);
    else closeSync(old);
    this.cuts += 1;
    this.cutSegments.set(this.cuts, this.closedSinceCut);
    this.closedSinceCut = [];
    return this.cuts;
  }

  /**
   * The batch taken at `cut` is in the ledger: its segments, and those of
   * every earlier cut, are not needed. Deleted on libuv's threads: an
   * unlink(2) frees the file's blocks before it returns (0.3 ms for a 420
   * KiB segment on an idle disk, milliseconds under I/O), which would stall
   * every call in flight. A crash before they go only replays records the
   * ledger already holds; it bills each once. Never rejects.
   */
  async applied(cut: number): Promise<void> {
    await Promise.all(
      this.takeSegments(cut).map((path) =>
        unlink(path).catch((error: unknown) => this.log.warn("usage journal: a segment could not be deleted", { path, error })),
      ),
    );
  }

  /** The closed segments of `cut` and every earlier cut, forgotten here. */
  private takeSegments(cut: number): string[] {
    const paths: string[] = [];
    for (const [number, cutPaths] of this.cutSegments) {
      if (number > cut) continue;
      paths.push(...cutPaths);
      this.cutSegments.delete(number);
    }
    return paths;
  }

  private sync(): void {
    if (!this.dirty || this.syncing) return;
    this.dirty = false;
    this.syncing = true;
    fdatasync(this.fd, () => {
      this.syncing = false;
      for (const fd of this.closeAfterSync.splice(0)) closeSync(fd);
    });
  }

  /**
   * At shutdown, after the recorder's last flush. `allApplied`: every record
   * is in the ledger, so no segment is needed; otherwise they all stay for
   * the next start to replay.
   */
  close(allApplied: boolean): void {
    this.writeWaitingGroup();
    clearInterval(this.syncTimer);
    if (!this.syncing) for (const fd of this.closeAfterSync.splice(0)) closeSync(fd);
    closeSync(this.fd);
    if (!allApplied) return;
    for (const path of [...this.takeSegments(Number.MAX_SAFE_INTEGER), ...this.closedSinceCut, this.path]) {
      try {
        unlinkSync(path);
      } catch {
        // Already gone.
      }
    }
  }
}
