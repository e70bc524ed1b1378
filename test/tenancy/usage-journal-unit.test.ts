// The usage journal (tenancy/usage-journal.ts) in process, without the
// recorder: a temp dir of real segment files, Node's mock clock (Date and
// setInterval) so segment names and the background fdatasync are the test's
// to step, a logger that keeps its lines, and the journal's fdatasync calls
// watched (passed through to the real one) so a sync in flight can be held
// in view. What it pins is what a crash or a restart would cost: which
// records a later start reads back after a given run of cuts and applied
// marks, a torn or foreign line skipped, grouped lines in the file once
// their promise settles and in the segment of their batch, a failed write
// logged once, and which segment files stay open. Fast on purpose: the
// mutation run runs this file once per mutant.
import fs, { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { mock } from "node:test";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import t, { type Test } from "tap";
import { recordingLog } from "../support/recording-log.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { readJournal, syncEveryMs, UsageJournal } from "../../tenancy/usage-journal.ts";
import { usageRecord } from "../support/usage-record.ts";

/** The mock clock's start (ms): the first segment of a journal built then is `base + 1`, in microseconds. */
const now = 1_764_790_000_000;
const base = now * 1000;
/** The name of the `k`th segment a journal built at `now` opens (1: the one the constructor opens). */
const seg = (k: number): string => `usage-${String(base + k).padStart(16, "0")}.log`;

const record = (key: string, overrides: Partial<UsageRecord> = {}): UsageRecord => usageRecord({ request_id: key, ...overrides });
const keys = (records: readonly UsageRecord[]) => records.map((r) => r.usage_key);

/** Lets the turn end: grouped writes (setImmediate) and unlinks already started run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

function tempDir(): string {
  // Real path: the open-file check compares /proc/self/fd targets with it.
  return realpathSync(mkdtempSync(join(tmpdir(), "troupe-journal-unit-")));
}

/** The files of `dir` this process holds open, by name. */
function openIn(dir: string): string[] {
  const open: string[] = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // the fd of the listing itself, gone by now
    }
    if (target.startsWith(`${dir}/`)) open.push(basename(target));
  }
  return open.sort();
}

const logFiles = (dir: string) => readdirSync(dir).filter((n) => n.endsWith(".log"));
const linesOf = (dir: string, name: string) => readFileSync(join(dir, name), "utf8");

/** Mocks Date (at `now`) and setInterval for this test: the journal's segment names and its sync timer. */
function mockClock(t: Test): void {
  mock.timers.enable({ apis: ["Date", "setInterval"], now });
  t.teardown(() => mock.timers.reset());
}

/** Every fdatasync the journal starts (the segment it syncs, and when it has ended), passed through to the real one. */
function watchSyncs(t: Test): { segment: string; done: Promise<void> }[] {
  const syncs: { segment: string; done: Promise<void> }[] = [];
  const real = fs.fdatasync;
  const watched = (fd: number, callback: (error: NodeJS.ErrnoException | null) => void): void => {
    let ended = (): void => undefined;
    let segment = "(a closed fd)";
    try {
      segment = basename(readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      // A sync of a closed segment: counted all the same.
    }
    syncs.push({ segment, done: new Promise<void>((resolve) => (ended = resolve)) });
    real(fd, (error) => {
      callback(error);
      ended();
    });
  };
  // The journal imports fdatasync by name: syncBuiltinESMExports carries the replacement into that binding.
  Object.assign(fs, { fdatasync: watched });
  syncBuiltinESMExports();
  t.teardown(() => {
    Object.assign(fs, { fdatasync: real });
    syncBuiltinESMExports();
  });
  return syncs;
}

t.test("a new journal opens the segment after the clock's microsecond, 0600 in a 0700 directory it creates", (t) => {
  mockClock(t);
  const parent = tempDir();
  const dir = join(parent, "a", "journal");
  const journal = new UsageJournal(dir, recordingLog().log);
  t.same(logFiles(dir), [seg(1)]);
  t.equal(statSync(dir).mode & 0o777, 0o700, "the directory is the process's own");
  t.equal(statSync(join(dir, seg(1))).mode & 0o777, 0o600);
  t.same(openIn(dir), [seg(1)], "only the segment being written is open");
  journal.append(record("r1"));
  t.same(keys(readJournal(dir).records), ["r1"], "a later start finds the segment by its name");
  journal.close(false);
  t.same(openIn(dir), [], "close closes it");
  t.end();
});

t.test("a new run opens after every segment already there, whatever else the directory holds", (t) => {
  mockClock(t);
  const dir = tempDir();
  // A crashed run's segment from a clock ahead of this one, ending on a torn line; and files that are no segment.
  writeFileSync(join(dir, "usage-9000000000000000.log"), '{"organization_id":"or');
  writeFileSync(join(dir, "notes.txt"), "");
  writeFileSync(join(dir, "usage-12.log"), "");
  const journal = new UsageJournal(dir, recordingLog().log);
  t.same(openIn(dir), ["usage-9000000000000001.log"], "never appended to the torn line");
  journal.append(record("r1"));
  t.same(linesOf(dir, "usage-9000000000000000.log"), '{"organization_id":"or', "the old segment is left as it was");
  journal.close(false);
  t.end();
});

t.test("readJournal reads only segment files, oldest first, and returns their paths", (t) => {
  const dir = tempDir();
  const line = (key: string) => JSON.stringify(record(key)) + "\n";
  writeFileSync(join(dir, "usage-0000000000000002.log"), line("b"));
  writeFileSync(join(dir, "usage-0000000000000001.log"), line("a"));
  writeFileSync(join(dir, "usage-0000000000000010.log"), line("c"));
  // Near misses of the segment name: a leftover of an editor or a copy, too few or too many digits, no digits.
  for (const name of ["usage-0000000000000003.log.tmp", "old-usage-0000000000000004.log", "usage-000000000000005.log", "usage-00000000000000006.log", "usage-abcdefghijklmnop.log"]) {
    writeFileSync(join(dir, name), line(name));
  }
  const { log, lines } = recordingLog();
  const read = readJournal(dir, log);
  t.same(keys(read.records), ["a", "b", "c"]);
  t.same(read.segments, ["usage-0000000000000001.log", "usage-0000000000000002.log", "usage-0000000000000010.log"].map((n) => join(dir, n)));
  t.same(lines, [], "a clean journal logs nothing");
  t.end();
});

t.test("readJournal of a directory not there is empty; any other error is thrown", (t) => {
  const dir = tempDir();
  t.same(readJournal(join(dir, "never-made")), { records: [], segments: [] });
  writeFileSync(join(dir, "a-file"), "");
  t.throws(() => readJournal(join(dir, "a-file")), { code: "ENOTDIR" });
  t.end();
});

t.test("readJournal skips a torn last line and an unreadable record, logging each, and reads a bare record of before versions", (t) => {
  const dir = tempDir();
  const good = record("good");
  const bare = record("bare");
  const content = [
    JSON.stringify({ ...good, schema_version: 1 }),
    "",
    JSON.stringify({ schema_version: 1, usage_key: "half", live: "yes" }),
    JSON.stringify(bare), // version 0: no mark
    JSON.stringify(record("torn")).slice(0, 40),
  ].join("\n");
  const name = "usage-0000000000000001.log";
  writeFileSync(join(dir, name), content);
  const { log, lines } = recordingLog();
  t.same(readJournal(dir, log).records, [good, bare]);
  t.same(
    lines.map((l) => [l.level, l.msg, l.fields?.segment]),
    [
      ["warn", "usage journal: an unreadable record skipped", name],
      ["warn", "usage journal: a torn line skipped", name],
    ],
  );
  t.match(lines[0]?.fields?.error, /organization_id/, "what was wrong with it");
  t.same(keys(readJournal(dir).records), ["good", "bare"], "without a logger, the same records and no throw");
  t.end();
});

t.test("every field of every category's record comes back as appended", (t) => {
  mockClock(t);
  const dir = tempDir();
  const journal = new UsageJournal(dir, recordingLog().log);
  const categories = ["chat", "embeddings", "vision", "translation", "images", "audio", "video", "agents"] as const;
  const written = categories.map((category) => record(category, { category }));
  written.push(record("cached", { cached_input_tokens: 3, cache_write_input_tokens: 2 }));
  for (const r of written) journal.append(r);
  t.same(readJournal(dir).records, written);
  journal.close(false);
  t.end();
});

t.test("applied(cut) deletes that cut's segments and every earlier cut's, never a later one's", async (t) => {
  mockClock(t);
  const dir = tempDir();
  const { log, lines } = recordingLog();
  const journal = new UsageJournal(dir, log);
  journal.append(record("r1"));
  const first = journal.cut();
  t.same(openIn(dir), [seg(2)], "the closed segment's file is closed at once (no sync in flight)");
  journal.append(record("r2"));
  const second = journal.cut();
  journal.append(record("r3"));
  const third = journal.cut();
  journal.append(record("r4"));
  t.same([first, second, third], [1, 2, 3], "cuts are numbered from 1");
  await journal.applied(second);
  t.same(logFiles(dir), [seg(3), seg(4)], "the first two cuts' segments are gone when applied returns");
  t.same(keys(readJournal(dir).records), ["r3", "r4"], "a restart now replays only what the ledger may not have");
  await journal.applied(first);
  t.same(logFiles(dir), [seg(3), seg(4)], "an earlier cut, applied late, has nothing left to delete");
  await journal.applied(third);
  t.same(logFiles(dir), [seg(4)]);
  t.same(lines, [], "no segment was deleted twice");
  journal.close(false);
  t.end();
});

t.test("a segment that cannot be deleted is logged; applied still resolves", async (t) => {
  mockClock(t);
  const dir = tempDir();
  const { log, lines } = recordingLog();
  const journal = new UsageJournal(dir, log);
  journal.append(record("r1"));
  const cut = journal.cut();
  unlinkSync(join(dir, seg(1)));
  await journal.applied(cut);
  t.same(
    lines.map((l) => [l.level, l.msg, l.fields?.path]),
    [["warn", "usage journal: a segment could not be deleted", join(dir, seg(1))]],
  );
  t.match(lines[0]?.fields?.error, { code: "ENOENT" });
  journal.close(false);
  t.end();
});

t.test("a crashed run's segments are deleted with the first batch cut after the restart", async (t) => {
  mockClock(t);
  const dir = tempDir();
  const crashed = new UsageJournal(dir, recordingLog().log);
  crashed.append(record("r1"));
  crashed.close(false); // as a crash leaves them: every segment kept
  const leftover = readJournal(dir);
  mock.timers.tick(5); // the restart, 5 ms later
  const journal = new UsageJournal(dir, recordingLog().log, leftover.segments);
  journal.append(record("r2"));
  await journal.applied(journal.cut());
  t.same(readJournal(dir).records, [], "the replayed records and the new one went with the batch");
  t.equal(logFiles(dir).length, 1, "only the open segment is left");
  journal.close(false);
  t.end();
});

t.test("close(false) keeps every segment for the next start; close(true) deletes them all", async (t) => {
  mockClock(t);
  const keep = tempDir();
  const kept = new UsageJournal(keep, recordingLog().log);
  kept.append(record("r1"));
  await kept.applied(kept.cut());
  kept.append(record("r2"));
  kept.cut();
  kept.append(record("r3"));
  kept.close(false);
  t.same(keys(readJournal(keep).records), ["r2", "r3"], "every record not applied stays to be replayed");
  t.same(openIn(keep), []);

  const drop = tempDir();
  writeFileSync(join(drop, "usage-0000000000000001.log"), JSON.stringify(record("r0")) + "\n");
  const journal = new UsageJournal(drop, recordingLog().log, readJournal(drop).segments);
  journal.append(record("r1"));
  journal.cut(); // not applied
  journal.append(record("r2"));
  journal.cut();
  unlinkSync(join(drop, seg(2))); // already gone: the others are still deleted
  journal.append(record("r3"));
  journal.close(true);
  t.same(readdirSync(drop), [], "a crashed run's, every cut's and the open segment all go");
  t.same(openIn(drop), []);
  t.end();
});

t.test("grouped appends of one turn share one promise, written at the end of the turn", async (t) => {
  mockClock(t);
  const dir = tempDir();
  const { log, lines } = recordingLog();
  const journal = new UsageJournal(dir, log);
  const first = journal.appendGrouped(record("r1"));
  const second = journal.appendGrouped(record("r2"));
  t.ok(first instanceof Promise);
  t.equal(second, first, "one group, one promise");
  t.same(readJournal(dir).records, [], "not written during the turn");
  let settled = false;
  void first.then(() => void (settled = true));
  await settle();
  await settle();
  t.ok(settled, "the promise settles at the end of the turn, without another call");
  t.same(keys(readJournal(dir).records), ["r1", "r2"]);
  const next = journal.appendGrouped(record("r3"));
  t.not(next, first, "a later turn starts a new group");
  t.same(keys(readJournal(dir).records), ["r1", "r2"]);
  await next;
  t.same(keys(readJournal(dir).records), ["r1", "r2", "r3"], "and writes it");
  t.same(lines, []);
  journal.close(false);
  t.end();
});

t.test("an append writes the waiting group first, in call order, and the group is not written again", async (t) => {
  mockClock(t);
  const dir = tempDir();
  const journal = new UsageJournal(dir, recordingLog().log);
  const grouped = journal.appendGrouped(record("r1"));
  journal.append(record("r2"));
  t.same(keys(readJournal(dir).records), ["r1", "r2"]);
  await grouped;
  journal.append(record("r3"));
  t.same(keys(readJournal(dir).records), ["r1", "r2", "r3"]);
  journal.close(false);
  t.end();
});

t.test("a cut writes the waiting group into the segment it closes", async (t) => {
  mockClock(t);
  const dir = tempDir();
  const journal = new UsageJournal(dir, recordingLog().log);
  const grouped = journal.appendGrouped(record("r1"));
  const cut = journal.cut();
  await grouped;
  t.match(linesOf(dir, seg(1)), /"usage_key":"r1"/);
  t.equal(linesOf(dir, seg(2)), "", "not into the next one");
  await journal.applied(cut);
  t.same(readJournal(dir).records, [], "nothing left to replay twice");
  journal.close(false);
  t.end();
});

t.test("close writes the waiting group; its promise then settles with nothing more to write", async (t) => {
  mockClock(t);
  const dir = tempDir();
  const { log, lines } = recordingLog();
  const journal = new UsageJournal(dir, log);
  const grouped = journal.appendGrouped(record("r1"));
  journal.close(false);
  t.same(keys(readJournal(dir).records), ["r1"]);
  await grouped;
  t.same(lines, [], "no write after close");
  t.end();
});

t.test("a failed grouped write is logged once until a write succeeds; its promise still settles", async (t) => {
  mockClock(t);
  const dir = tempDir();
  const { log, lines } = recordingLog();
  const journal = new UsageJournal(dir, log);
  // The second and fourth segments are the full device: every write to them fails with ENOSPC.
  symlinkSync("/dev/full", join(dir, seg(2)));
  symlinkSync("/dev/full", join(dir, seg(4)));
  const errors = () => lines.filter((l) => l.level === "error");
  journal.cut();
  t.throws(() => journal.append(record("sync")), { code: "ENOSPC" }, "a synchronous append throws");
  await journal.appendGrouped(record("r1"));
  t.same(
    errors().map((l) => l.msg),
    ["usage journal write failed: records are in memory only until it recovers"],
  );
  t.match(errors()[0]?.fields?.error, { code: "ENOSPC" });
  await journal.appendGrouped(record("r2"));
  t.equal(errors().length, 1, "not logged again while it keeps failing");
  journal.cut();
  await journal.appendGrouped(record("r3"));
  t.match(linesOf(dir, seg(3)), /"usage_key":"r3"/, "written once the disk has room");
  t.equal(errors().length, 1);
  journal.cut();
  await journal.appendGrouped(record("r4"));
  t.equal(errors().length, 2, "a new failure after a success is logged again");
  journal.close(false);
  t.end();
});

t.test("a dirty segment is synced every syncEveryMs; a clean one is not", async (t) => {
  mockClock(t);
  const syncs = watchSyncs(t);
  const dir = tempDir();
  const journal = new UsageJournal(dir, recordingLog().log);
  mock.timers.tick(syncEveryMs);
  t.equal(syncs.length, 0, "nothing written, nothing synced");
  journal.append(record("r1"));
  mock.timers.tick(syncEveryMs);
  t.same(syncs.map((s) => s.segment), [seg(1)]);
  journal.append(record("r2"));
  mock.timers.tick(syncEveryMs);
  t.equal(syncs.length, 1, "one sync at a time");
  await syncs[0]?.done;
  mock.timers.tick(syncEveryMs);
  t.equal(syncs.length, 2, "what was written during it, at the next tick");
  await syncs[1]?.done;
  mock.timers.tick(syncEveryMs);
  t.equal(syncs.length, 2, "synced: clean again");
  await journal.appendGrouped(record("r3"));
  mock.timers.tick(syncEveryMs - 1);
  t.equal(syncs.length, 2);
  mock.timers.tick(1);
  t.equal(syncs.length, 3, "a grouped write is synced too");
  await syncs[2]?.done;
  journal.cut(); // no group waiting: writes nothing
  mock.timers.tick(syncEveryMs);
  t.equal(syncs.length, 3, "a cut alone leaves nothing to sync");
  journal.append(record("r4"));
  journal.close(false);
  mock.timers.tick(syncEveryMs);
  t.equal(syncs.length, 3, "close stops the background sync");
  t.end();
});

t.test("a segment cut while its sync is in flight stays open until the sync ends, then closes", async (t) => {
  mockClock(t);
  const syncs = watchSyncs(t);
  const dir = tempDir();
  const journal = new UsageJournal(dir, recordingLog().log);
  journal.append(record("r1"));
  mock.timers.tick(syncEveryMs);
  journal.cut();
  t.same(openIn(dir), [seg(1), seg(2)], "its fd is not closed (nor reused) under the sync");
  await syncs[0]?.done;
  t.same(openIn(dir), [seg(2)], "closed once the sync ends");
  journal.cut();
  t.same(openIn(dir), [seg(3)], "with no sync in flight, a cut closes the old segment at once");
  journal.append(record("r2"));
  mock.timers.tick(syncEveryMs);
  journal.cut();
  journal.close(false);
  t.same(openIn(dir), [seg(3)], "close leaves the segment under a sync to the sync's end");
  await syncs[1]?.done;
  t.same(openIn(dir), []);
  t.end();
});

t.test("the sync timer does not keep the process alive", (t) => {
  const dir = tempDir();
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
  const before = timers();
  const journal = new UsageJournal(dir, recordingLog().log);
  t.equal(timers(), before);
  journal.close(false);
  t.end();
});

t.test("a journal opens in a directory already there", (t) => {
  mockClock(t);
  const dir = tempDir();
  mkdirSync(join(dir, "j"));
  const journal = new UsageJournal(join(dir, "j"), recordingLog().log);
  t.same(logFiles(join(dir, "j")), [seg(1)]);
  journal.close(true);
  t.same(readdirSync(join(dir, "j")), []);
  t.end();
});

t.test("a segment opened on a clock at the epoch still has a name a restart reads", (t) => {
  // A machine without a real-time clock starts at 1970: a sequence of fewer than 16 digits, zero-padded.
  mock.timers.enable({ apis: ["Date", "setInterval"], now: 0 });
  t.teardown(() => mock.timers.reset());
  const dir = tempDir();
  const journal = new UsageJournal(dir, recordingLog().log);
  t.same(logFiles(dir), ["usage-0000000000000001.log"]);
  journal.append(record("r1"));
  t.same(keys(readJournal(dir).records), ["r1"]);
  journal.close(false);
  t.end();
});
