// What keeps a batch's own CPU off the interactive calls beside it
// (docs/api/batches.md, "Priority"): a line reader that decodes each stored
// page once, answers reported to the actor in groups (one write and one turn
// for lines that finish together), and the actor counting a group as it
// counts single answers — once per line, whatever the repeats; and the
// runner's bound on lines leased and not yet counted.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { eraseDefinition } from "../../../actors/actor.ts";
import { AnswerReporter, type StoredAnswer } from "../../../actors/batch/answer-reporter.ts";
import { createBatchActor } from "../../../actors/batch/batch-actor.ts";
import { BatchFiles, outputFileId, pageLines } from "../../../actors/batch/batch-files.ts";
import { BatchRunner } from "../../../actors/batch/batch-runner.ts";
import { callActor } from "../../../actors/host.ts";
import { EmbeddedActorHost } from "../../../actors/hosts/embedded/embedded-host.ts";
import { systemClock } from "../../../core/clock.ts";
import { createLogger } from "../../../core/log.ts";
import { EmbeddedDataStore } from "../../../tenancy/embedded-data-store.ts";

const owner = { organization_id: "org_1", environment_id: "env_1" };

/** The embedded store, counting its reads. */
class CountingStore extends EmbeddedDataStore {
  reads = 0;
  override async get(key: string): Promise<unknown> {
    this.reads += 1;
    return super.get(key);
  }
}

t.test("a line reader reads each page of the file once, in order, and says when a line is not there", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-batch-lines-"));
  const store = new CountingStore(dir, systemClock);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const files = new BatchFiles(store, () => Date.now());
  const total = pageLines * 2 + 7;
  const lines = Array.from({ length: total }, (_, i) => `{"line":${i}}`);
  const file = await files.put(owner, { filename: "in.jsonl", purpose: "batch", lines, bytes: 1 });
  const read = files.lineReader(file.id);
  const got: Array<string | undefined> = [];
  for (let i = 0; i < total; i++) got.push(await read(i));
  t.same(got, lines, "every line, in order");
  t.equal(store.reads, 3, "three pages, three reads");
  t.equal(await read(total), undefined, "past the end: no line");
  t.equal(await read(3), lines[3], "an earlier page is read again when asked");
});

t.test("answers arriving together go as one group: at maxGroup, when no other line is running, else after the window", async (t) => {
  const sent: number[][] = [];
  let running = 5;
  // The group is handed over synchronously (the send starts at once), so what was sent can be read right after a report.
  const reporter = new AnswerReporter(async (answers: readonly StoredAnswer[]) => void sent.push(answers.map((a) => a.index)), () => running, { windowMs: 40, maxGroup: 3 });
  const result = { ok: true, custom_id: "c", text: "{}" };
  await Promise.all([reporter.report(0, result), reporter.report(1, result), reporter.report(2, result)]);
  t.same(sent, [[0, 1, 2]], "three answers, a group of at most three: sent at the third");
  running = 1;
  const alone = reporter.report(3, result);
  t.same(sent[1], [3], "no other line running: sent at once, not after the window");
  await alone;
  running = 2;
  const started = performance.now();
  await reporter.report(5, result);
  const waited = performance.now() - started;
  t.same(sent[2], [5], "another line still running: the lone answer waited, then went alone");
  t.ok(waited >= 30, `it waited for the window (${waited.toFixed(1)} ms)`);
  const failing = new AnswerReporter(async () => Promise.reject(new Error("store down")), () => 1, { windowMs: 40, maxGroup: 8 });
  await t.rejects(failing.report(9, result), /store down/, "a group that cannot be stored fails each of its lines");
});

t.test("answeredMany counts each line once, frees its leases and finalizes at the last", async (t) => {
  const clock = { now: () => Date.parse("2026-12-01T12:00:00.000Z") };
  const actor = createBatchActor({ kick: () => undefined, watchdogMs: 3_600_000 });
  const host = new EmbeddedActorHost({ dataDir: mkdtempSync(join(tmpdir(), "troupe-batch-many-")), idleTimeoutMs: 60_000, clock, log: createLogger("silent") });
  host.register([eraseDefinition(actor)]);
  await host.start();
  t.teardown(() => host.stop());
  const key = { id: "key_1", name: "k", display_prefix: "trp_test_x", scopes: [], live: false, environment_id: "env_1", project_id: "prj_1", organization_id: "org_1", rate_limit_per_minute: 600, token_limit_per_minute: null, models: null, max_concurrent: null, created_at: "2026-12-01T00:00:00.000Z", last_used_at: null, revoked_at: null };
  await callActor(host, actor, "batch_m", "create", { api: "openai", key, endpoint: "/v1/chat/completions", input_file_id: "file-1", completion_window: "24h", metadata: null, total: 4, errors: null, window_ms: 24 * 3600_000 });
  t.same((await callActor(host, actor, "batch_m", "lease", { epoch: "e", max: 4 })).indices, [0, 1, 2, 3]);
  const first = await callActor(host, actor, "batch_m", "answeredMany", { epoch: "e", answers: [{ index: 0, ok: true }, { index: 1, ok: false }, { index: 1, ok: true }] });
  t.equal(first.status, "in_progress");
  let b = await callActor(host, actor, "batch_m", "get", owner);
  t.same([b.completed, b.failed], [1, 1], "line 1 counted once, as its first answer said");
  t.same(b.leased.map((l) => l.index), [2, 3], "the answered lines' leases are freed");
  const last = await callActor(host, actor, "batch_m", "answeredMany", { epoch: "e", answers: [{ index: 2, ok: true }, { index: 3, ok: true }, { index: 0, ok: true }] });
  t.equal(last.status, "finalizing", "the last answers finalize the batch");
  b = await callActor(host, actor, "batch_m", "get", owner);
  t.same([b.completed, b.failed, b.leased.length], [3, 1, 0]);
});

/** Answers that cannot be stored yet: every group waits until `open()`. */
class HeldResults extends BatchFiles {
  private gate: Promise<void>;
  open: () => void = () => undefined;
  constructor(store: EmbeddedDataStore) {
    super(store, () => Date.now());
    this.gate = new Promise<void>((resolve) => (this.open = resolve));
  }
  override async putResults(batchId: string, answers: Parameters<BatchFiles["putResults"]>[1]): Promise<void> {
    await this.gate;
    return super.putResults(batchId, answers);
  }
}

t.test("lines leased and not yet counted stay within twice the concurrency, whatever waits to be stored", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-batch-bound-"));
  const store = new EmbeddedDataStore(join(dir, "store"), systemClock);
  const files = new HeldResults(store);
  let runner: BatchRunner | undefined;
  const actor = createBatchActor({ kick: (id) => runner?.kick(id), watchdogMs: 3_600_000 });
  const host = new EmbeddedActorHost({ dataDir: join(dir, "actors"), idleTimeoutMs: 60_000, clock: systemClock, log: createLogger("silent") });
  host.register([eraseDefinition(actor)]);
  await host.start();
  t.teardown(async () => {
    files.open();
    await runner?.stop();
    await host.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const concurrency = 4;
  const total = 40;
  const file = await files.put(owner, { filename: "in.jsonl", purpose: "batch", lines: Array.from({ length: total }, (_, i) => `{"line":${i}}`), bytes: 1 });
  const calls: number[] = [];
  runner = new BatchRunner({
    host,
    batch: actor,
    files,
    // Every model call answers at once: only the held stores keep lines from being counted.
    runLine: async (_batch, index) => (calls.push(index), { kind: "answered", ok: true, custom_id: `c-${index}`, text: "{}" }),
    outputs: async () => ({ output: [], errors: [] }),
    concurrency,
    busy: () => false,
    log: createLogger("silent"),
  });
  const key = { id: "key_1", name: "k", display_prefix: "trp_test_x", scopes: [], live: false, environment_id: "env_1", project_id: "prj_1", organization_id: "org_1", rate_limit_per_minute: 600, token_limit_per_minute: null, models: null, max_concurrent: null, created_at: "2026-12-01T00:00:00.000Z", last_used_at: null, revoked_at: null };
  await callActor(host, actor, "batch_bound", "create", { api: "openai", key, endpoint: "/v1/chat/completions", input_file_id: file.id, completion_window: "24h", metadata: null, total, errors: null, window_ms: 24 * 3600_000 });
  // Until the lines in their model call and those waiting for their group fill both halves; then nothing more starts.
  for (let waited = 0; calls.length < 2 * concurrency && waited < 10_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.equal(calls.length, 2 * concurrency, `${2 * concurrency} model calls while no answer could be stored, not more`);
  const held = await callActor(host, actor, "batch_bound", "get", owner);
  t.equal(held.leased.length, 2 * concurrency, "as many lines leased: what a kill now would run again");
  files.open();
  for (let waited = 0; (await callActor(host, actor, "batch_bound", "get", owner)).status === "in_progress" && waited < 20_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
  const done = await callActor(host, actor, "batch_bound", "get", owner);
  t.equal(done.completed, total, "once stored, every line is counted");
  t.same([...new Set(calls)].length, total, "each line ran");
  t.equal(calls.length, total, "none ran twice");
});

/** A store that fails the write of an output file's head: a finalize cut off after its pages, as by a kill. */
class HeadlessOutputs extends EmbeddedDataStore {
  override async apply(ops: Parameters<EmbeddedDataStore["apply"]>[0]): Promise<void> {
    if (ops.some((op) => op.op === "put" && /^batchfile:file-[^:]+-output$/.test(op.key))) throw new Error("killed before the head");
    return super.apply(ops);
  }
}

t.test("a batch's erasure removes the pages of an output file whose head was never written", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-batch-erase-"));
  const store = new HeadlessOutputs(dir, systemClock);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const files = new BatchFiles(store, () => Date.now());
  const total = pageLines * 2 + 3;
  const id = outputFileId("batch_cut", "output");
  await t.rejects(files.put(owner, { id, filename: "out.jsonl", purpose: "batch_output", lines: Array.from({ length: total }, (_, i) => `{"answer":${i}}`), bytes: 1 }), /killed before the head/);
  const pageKeys = [0, 1, 2].map((page) => `batchfile:${id}:page:${page}`);
  t.ok((await store.getMany(pageKeys)).every((v) => v !== undefined), "the pages were written, the head not");
  t.same((await files.list(owner, 10, undefined)).data, [], "no listing finds them");
  await files.putResult("batch_cut", 0, { ok: true, custom_id: "c", text: "{}" });
  await files.eraseBatch("batch_cut", total);
  t.same(await store.getMany(pageKeys), [undefined, undefined, undefined], "erased with the batch");
  t.same(await files.results("batch_cut", 1), [undefined], "and its answers");
});
