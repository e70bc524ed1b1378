// ARCHITECTURE.md's figures match the code: each sentence that states a
// figure is found in the page, and the figure is read back from the code
// (a line count, an exported constant, the operations of one signup), so a
// change to either side fails here until the other follows.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { loadConfig } from "../gateway/config.ts";
import { createLogger } from "../core/log.ts";
import { MAX_MODEL_STEPS_PER_TURN } from "../actors/conversation/turn-loop.ts";
import { MAX_POLL_FAILURES } from "../actors/job/job-steps.ts";
import { MAX_OUTBOX } from "../actors/webhooks/outbox.ts";
import { retryAfterCapMs } from "../actors/webhooks/schedule.ts";
import { AccountService } from "../tenancy/accounts.ts";
import { ApiKeyService } from "../tenancy/api-keys.ts";
import type { StoreOp } from "../core/data-store.ts";
import { EmbeddedDataStore } from "../tenancy/embedded-data-store.ts";

const root = join(import.meta.dirname, "..");
const architecture = readFileSync(join(root, "ARCHITECTURE.md"), "utf8").replace(/\s+/g, " ");

/** The number a pattern of ARCHITECTURE.md captures; fails the test when the sentence is gone. */
function stated(t: Test, what: string, pattern: RegExp): number {
  const m = pattern.exec(architecture);
  t.ok(m, `ARCHITECTURE.md states ${what}`);
  return Number(m?.[1]);
}

t.test("the composition root's size", async (t) => {
  const bound = stated(t, "the composition root's size", /`gateway\/app\.ts` is the \*\*composition root\*\* \(under (\d+) lines\)/);
  const lines = readFileSync(join(root, "gateway/app.ts"), "utf8").trimEnd().split("\n").length;
  t.ok(lines < bound, `gateway/app.ts has ${lines} lines, under ${bound}`);
});

t.test("every feature module is named", async (t) => {
  const paragraph = /\*\*Feature modules\*\*.*?(?=\*\*composition root\*\*)/.exec(architecture)?.[0] ?? "";
  const modules = readdirSync(join(root, "gateway/features"))
    .filter((f) => /export (async )?function \w+Feature\(/.test(readFileSync(join(root, "gateway/features", f), "utf8")))
    .map((f) => f.replace(/\.ts$/, ""));
  t.ok(modules.length >= 9, `found the feature modules: ${modules.join(", ")}`);
  for (const name of modules) t.ok(paragraph.includes(name.replace(/-/g, " ")), `the paragraph names ${name}`);
});

t.test("the bounds the page quotes", async (t) => {
  t.equal(stated(t, "the failed polls that end a job", /\*\*Bound:\*\* (\d+) failed polls in a row \(`MAX_POLL_FAILURES`/), MAX_POLL_FAILURES, "MAX_POLL_FAILURES");
  t.equal(stated(t, "the webhook outbox bound", /at most (\d+) events \(`MAX_OUTBOX`\)/), MAX_OUTBOX, "MAX_OUTBOX");
  t.equal(stated(t, "the Retry-After cap", /`Retry-After` longer than the scheduled wait postpones the next attempt, but by (\d+) h at most/) * 3_600_000, retryAfterCapMs, "retryAfterCapMs");
  t.equal(stated(t, "the model calls of one conversation turn", /whole model loop \(up to (\d+) model calls\)/), MAX_MODEL_STEPS_PER_TURN, "MAX_MODEL_STEPS_PER_TURN");
});

t.test("one signup is one batch of the writes the page counts", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-architecture-"));
  const store = new EmbeddedDataStore(dir, { now: () => Date.now() });
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const batches: StoreOp[][] = [];
  const apply = store.apply.bind(store);
  store.apply = (ops) => (batches.push([...ops]), apply(ops));
  const config = loadConfig({ TROUPE_DATA_DIR: dir });
  const clock = { now: () => Date.now() };
  const accounts = new AccountService(store, config.tenancy, clock, new ApiKeyService(store, config.tenancy, clock, createLogger("silent")));
  await accounts.signup({ email: "figures@example.com", password: "correct horse battery" }, "127.0.0.1");
  const writes = batches.filter((b) => b.some((op) => op.op === "claim" && op.key.includes("figures@example.com")));
  t.equal(writes.length, 1, "the signup's writes are one batch");
  const ops = writes[0] ?? [];
  const count = (kind: StoreOp["op"]) => ops.filter((op) => op.op === kind).length;
  const m = /signup is one batch of (\d+) writes: (\d+) records, (\d+) unique claims and (\d+) index entries/.exec(architecture);
  t.ok(m, "ARCHITECTURE.md counts a signup's writes");
  t.same(
    { writes: ops.length, records: count("put"), claims: count("claim"), indexes: count("index") },
    { writes: Number(m?.[1]), records: Number(m?.[2]), claims: Number(m?.[3]), indexes: Number(m?.[4]) },
    "the signup batch's operations, by kind",
  );
});
