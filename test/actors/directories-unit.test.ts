// The per-owner directories in the data store, in process on a temp-dir
// EmbeddedDataStore with an injected clock (actors/conversation/directory.ts,
// actors/job/directory.ts, actors/webhooks/directory.ts). What it pins:
// - the documents and index entries each writes, under their exact keys,
//   scored by the creation time;
// - the lists: newest first, pages of exactly `limit`, a cursor only when
//   more follow (none when the last page is exactly full), the next page
//   starting after the cursor; one environment never lists another's
//   entries, and an organization's list holds all of its own only;
// - conversations: updates coalesced per conversation and written by the
//   flush or by the ~100 ms timer (re-armed after a flush), a failed write
//   told to onError and not blocking the next; the model by id; a summary
//   whose document is gone is skipped; erasure by organization and by ids;
// - jobs: get only within the organization, old snapshots' defaults
//   (environment null, openai_video null), updates without re-indexing,
//   removal from the snapshot and both indexes, the three lists, erasure;
// - webhooks: the record with organization and audience, the environment
//   index only for an audience, lists without the audience, the fan-out's
//   filter (active, subscribed, audience) and its per-organization cache
//   (kept until a change here or a broadcast from another directory, a
//   failed read not kept), the scan across index pages, the quota of
//   active webhooks (403 quota_exceeded at one over, an inactive one gives
//   its slot up), erasure of records, indexes and quota slots.
// Fast on purpose: the mutation run runs this file once per mutant.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { isoTime, type Clock } from "../../core/clock.ts";
import type { IndexPage, StoreOp } from "../../core/data-store.ts";
import { ConversationDirectory } from "../../actors/conversation/directory.ts";
import type { ConversationSummary } from "../../actors/conversation/types.ts";
import { JobDirectory, type JobPlace } from "../../actors/job/directory.ts";
import type { Job } from "../../actors/job/types.ts";
import { WebhookDirectory } from "../../actors/webhooks/directory.ts";
import type { Webhook, WebhookAudience } from "../../actors/webhooks/types.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { rejectedWith } from "../support/thrown-by.ts";

/** Noon on 1 June 2026 (UTC). */
const startMs = Date.UTC(2026, 5, 1, 12);
const clock: Clock = { now: () => startMs };
const at = (seconds: number) => isoTime(startMs + seconds * 1000);

/** The embedded store, whose writes and page reads the test can make fail (a page read once, when `failPage` settles), and which keeps each batch it applies. */
class FlakyStore extends EmbeddedDataStore {
  failApply: Error | null = null;
  failPage: Promise<never> | null = null;
  pages: string[] = [];
  applied: StoreOp[][] = [];
  override async apply(ops: StoreOp[]): Promise<void> {
    if (this.failApply) throw this.failApply;
    this.applied.push(ops);
    return super.apply(ops);
  }
  override async page(indexKey: string, limit: number, cursor?: string | null): Promise<IndexPage> {
    this.pages.push(indexKey);
    if (this.failPage) {
      const failing = this.failPage;
      this.failPage = null;
      return failing;
    }
    return super.page(indexKey, limit, cursor);
  }
}

const dir = mkdtempSync(join(tmpdir(), "directories-unit-"));
const store = new FlakyStore(dir, clock);
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** Every page of a list, following its cursors: the ids of each page and whether a cursor came with it. */
async function allPages<T extends { id: string }>(list: (cursor: string | null) => Promise<{ data: T[]; next_cursor: string | null }>): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const page: { data: T[]; next_cursor: string | null } = await list(cursor);
    pages.push(page.data.map((d) => d.id));
    cursor = page.next_cursor;
  } while (cursor !== null && pages.length < 20);
  return pages;
}

const members = async (key: string) => (await store.page(key, 100)).members;

// ---------------------------------------------------------------- conversations

const summary = (id: string, seconds: number, over: Partial<ConversationSummary> = {}): ConversationSummary => ({
  id,
  model: "gpt-4.1-mini",
  routing_strategy: "auto",
  status: "idle",
  message_count: 0,
  created_at: at(seconds),
  updated_at: at(seconds),
  ...over,
});

t.test("conversations: created writes the summary and both indexes, scored by creation", async (t) => {
  const errors: unknown[] = [];
  const conversations = new ConversationDirectory(store, (e) => errors.push(e));
  const owner = { organization_id: "org_c1", environment_id: "env_c1" };
  await conversations.created(owner, summary("conv_a", 1));
  await conversations.created(owner, summary("conv_b", 2, { model: null }));
  await conversations.created({ organization_id: "org_c1", environment_id: "env_c2" }, summary("conv_c", 3));
  t.same(await store.get("conversation-summary:conv_a"), summary("conv_a", 1));
  t.same(await members("org-conversations:org_c1"), ["conv_c", "conv_b", "conv_a"]);
  t.same(await members("env-conversations:env_c1"), ["conv_b", "conv_a"]);
  t.same(await members("env-conversations:env_c2"), ["conv_c"]);
  const page = await store.page("env-conversations:env_c1", 1);
  t.equal(page.nextCursor?.split(".")[0], String(startMs + 2000), "scored by created_at in ms");
  t.equal(await conversations.model("conv_a"), "gpt-4.1-mini");
  t.equal(await conversations.model("conv_b"), null, "routed");
  t.equal(await conversations.model("conv_missing"), null, "unknown");
  t.same(errors, []);
});

t.test("conversations: the list is per environment, newest first, in pages", async (t) => {
  const conversations = new ConversationDirectory(store, () => {});
  const owner = { organization_id: "org_c2", environment_id: "env_c3" };
  for (let i = 1; i <= 5; i++) await conversations.created(owner, summary(`conv_p${i}`, 10 + i));
  await conversations.created({ organization_id: "org_c2", environment_id: "env_c4" }, summary("conv_other", 30));
  t.same(await allPages((c) => conversations.list("env_c3", 2, c)), [["conv_p5", "conv_p4"], ["conv_p3", "conv_p2"], ["conv_p1"]]);
  t.same(await allPages((c) => conversations.list("env_c3", 5, c)), [["conv_p5", "conv_p4", "conv_p3", "conv_p2", "conv_p1"]], "exactly full: no cursor");
  t.same(await allPages((c) => conversations.list("env_c3", 4, c)), [["conv_p5", "conv_p4", "conv_p3", "conv_p2"], ["conv_p1"]], "one over: a cursor");
  const first = await conversations.list("env_c3", 1, null);
  t.same(first.data, [summary("conv_p5", 15)], "whole summaries");
  t.same((await conversations.list("env_c4", 10, undefined)).data.map((s) => s.id), ["conv_other"]);
  t.same(await conversations.list("env_none", 10, null), { data: [], next_cursor: null });
});

t.test("conversations: updates coalesce, flush writes them, the timer flushes too", async (t) => {
  const errors: unknown[] = [];
  const conversations = new ConversationDirectory(store, (e) => errors.push(e));
  const owner = { organization_id: "org_c3", environment_id: "env_c5" };
  await conversations.created(owner, summary("conv_u1", 1));
  await conversations.created(owner, summary("conv_u2", 2));
  conversations.updated(summary("conv_u1", 1, { message_count: 1 }));
  conversations.updated(summary("conv_u1", 1, { message_count: 2, status: "requires_action" }));
  conversations.updated(summary("conv_u2", 2, { message_count: 7 }));
  t.same(await store.get("conversation-summary:conv_u1"), summary("conv_u1", 1), "not written yet");
  await conversations.flush();
  t.same((await conversations.list("env_c5", 10, null)).data.map((s) => [s.id, s.message_count, s.status]), [
    ["conv_u2", 7, "idle"],
    ["conv_u1", 2, "requires_action"],
  ]);
  store.applied = [];
  await conversations.flush();
  t.same(store.applied, [], "an empty flush writes nothing");
  // After a flush the timer is armed again by the next update.
  conversations.updated(summary("conv_u2", 2, { message_count: 8 }));
  for (let i = 0; i < 200 && (await conversations.list("env_c5", 1, null)).data[0]?.message_count !== 8; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal((await conversations.list("env_c5", 1, null)).data[0]?.message_count, 8, "written by the timer");
  t.same(errors, []);
});

t.test("conversations: a failed write goes to onError and the next flush still writes", async (t) => {
  const errors: unknown[] = [];
  const conversations = new ConversationDirectory(store, (e) => errors.push(e));
  await conversations.created({ organization_id: "org_c4", environment_id: "env_c6" }, summary("conv_f", 1));
  const boom = new Error("store down");
  store.failApply = boom;
  conversations.updated(summary("conv_f", 1, { message_count: 3 }));
  await conversations.flush();
  store.failApply = null;
  t.same(errors, [boom]);
  conversations.updated(summary("conv_f", 1, { message_count: 4 }));
  await conversations.flush();
  t.equal((await conversations.list("env_c6", 1, null)).data[0]?.message_count, 4);
  t.equal(errors.length, 1);
});

t.test("conversations: erasure, and a listed id whose summary is gone is skipped", async (t) => {
  const conversations = new ConversationDirectory(store, () => {});
  await conversations.created({ organization_id: "org_c5", environment_id: "env_c7" }, summary("conv_e1", 1));
  await conversations.created({ organization_id: "org_c5", environment_id: "env_c8" }, summary("conv_e2", 2));
  await conversations.created({ organization_id: "org_c6", environment_id: "env_c9" }, summary("conv_keep", 3));
  await conversations.eraseDocuments(["conv_e2"]);
  t.equal(await store.get("conversation-summary:conv_e2"), undefined);
  t.same(await members("env-conversations:env_c8"), ["conv_e2"], "the index entry stays");
  t.same(await conversations.list("env_c8", 10, null), { data: [], next_cursor: null }, "skipped");
  t.same(await conversations.eraseOrganization("org_c5", ["env_c7", "env_c8"]), ["conv_e2", "conv_e1"]);
  t.same(await members("org-conversations:org_c5"), []);
  t.same(await members("env-conversations:env_c7"), []);
  t.same(await members("env-conversations:env_c8"), []);
  t.equal(await store.get("conversation-summary:conv_e1"), undefined);
  t.same((await conversations.list("env_c9", 10, null)).data.map((s) => s.id), ["conv_keep"], "another organization's stays");
});

// ---------------------------------------------------------------- jobs

const job = (id: string, seconds: number, over: Partial<Job> = {}): Job => ({
  id,
  category: "video",
  type: "text_to_video",
  status: "queued",
  provider: "simulated",
  model: "simulated-video",
  progress: 0,
  segments: [],
  result_url: null,
  error: null,
  created_at: at(seconds),
  updated_at: at(seconds),
  ...over,
});

t.test("jobs: created writes the snapshot and both indexes; get only within the organization", async (t) => {
  const jobs = new JobDirectory(store);
  const place: JobPlace = { organization_id: "org_j1", environment_id: "env_j1" };
  await jobs.created(place, job("job_a", 1));
  await jobs.created(place, job("job_b", 2), { seconds: "8", size: "720x1280" });
  t.same(await store.get("job:job_a"), { organization_id: "org_j1", environment_id: "env_j1", job: job("job_a", 1) }, "no openai_video field without one");
  t.same(await store.get("job:job_b"), { organization_id: "org_j1", environment_id: "env_j1", job: job("job_b", 2), openai_video: { seconds: "8", size: "720x1280" } });
  t.same(await members("org-jobs:org_j1"), ["job_b", "job_a"]);
  t.same(await members("env-jobs:env_j1"), ["job_b", "job_a"]);
  t.equal((await store.page("env-jobs:env_j1", 1)).nextCursor?.split(".")[0], String(startMs + 2000));
  t.same(await jobs.get("org_j1", "job_a"), { job: job("job_a", 1), environment_id: "env_j1", openai_video: null });
  t.same(await jobs.get("org_j1", "job_b"), { job: job("job_b", 2), environment_id: "env_j1", openai_video: { seconds: "8", size: "720x1280" } });
  t.equal(await jobs.get("org_other", "job_a"), undefined, "another organization's");
  t.equal(await jobs.get("org_j1", "job_missing"), undefined);
});

t.test("jobs: an old snapshot without environment or openai_video reads with nulls", async (t) => {
  const jobs = new JobDirectory(store);
  await store.apply([{ op: "put", key: "job:job_old", value: { organization_id: "org_j2", job: job("job_old", 1) } }]);
  t.same(await jobs.get("org_j2", "job_old"), { job: job("job_old", 1), environment_id: null, openai_video: null });
  await store.apply([{ op: "put", key: "job:job_bad", value: { organization_id: "org_j2", job: { id: "job_bad" } } }]);
  t.equal(await jobs.get("org_j2", "job_bad"), undefined, "unparseable");
});

t.test("jobs: updated rewrites the snapshot only; removed takes it out of everything", async (t) => {
  const jobs = new JobDirectory(store);
  const place: JobPlace = { organization_id: "org_j3", environment_id: "env_j3" };
  await jobs.created(place, job("job_u", 1));
  await jobs.created(place, job("job_v", 2));
  await jobs.updated(place, job("job_u", 1, { status: "processing", progress: 0.5, updated_at: at(9) }), { seconds: "5", size: null });
  t.same(await jobs.get("org_j3", "job_u"), { job: job("job_u", 1, { status: "processing", progress: 0.5, updated_at: at(9) }), environment_id: "env_j3", openai_video: { seconds: "5", size: null } });
  t.same(await members("env-jobs:env_j3"), ["job_v", "job_u"], "the order stays the creation's");
  await jobs.updated(place, job("job_u", 1, { status: "completed" }));
  t.same(await store.get("job:job_u"), { organization_id: "org_j3", environment_id: "env_j3", job: job("job_u", 1, { status: "completed" }) });
  await jobs.removed(place, "job_u");
  t.equal(await store.get("job:job_u"), undefined);
  t.equal(await jobs.get("org_j3", "job_u"), undefined);
  t.same(await members("org-jobs:org_j3"), ["job_v"]);
  t.same(await members("env-jobs:env_j3"), ["job_v"]);
});

t.test("jobs: the environment's lists and the organization's, in pages", async (t) => {
  const jobs = new JobDirectory(store);
  for (let i = 1; i <= 3; i++) await jobs.created({ organization_id: "org_j4", environment_id: "env_j4" }, job(`job_e${i}`, 10 + i));
  await jobs.created({ organization_id: "org_j4", environment_id: "env_j5" }, job("job_f1", 20), { seconds: "4", size: null });
  await jobs.created({ organization_id: "org_j5", environment_id: "env_j6" }, job("job_g1", 30));
  t.same(await allPages((c) => jobs.listEnvironment("env_j4", 2, c)), [["job_e3", "job_e2"], ["job_e1"]]);
  t.same(await allPages((c) => jobs.listEnvironment("env_j4", 3, c)), [["job_e3", "job_e2", "job_e1"]], "exactly full: no cursor");
  t.same((await jobs.listEnvironment("env_j5", 10, null)).data, [job("job_f1", 20)]);
  t.same(await jobs.listEnvironmentEntries("env_j5", 10, undefined), { data: [{ job: job("job_f1", 20), environment_id: "env_j5", openai_video: { seconds: "4", size: null } }], next_cursor: null });
  const entries = await jobs.listEnvironmentEntries("env_j4", 1, null);
  t.same(entries.data, [{ job: job("job_e3", 13), environment_id: "env_j4", openai_video: null }]);
  t.same((await jobs.listEnvironmentEntries("env_j4", 1, entries.next_cursor)).data.map((e) => e.job.id), ["job_e2"]);
  t.same(await allPages((c) => jobs.list("org_j4", 3, c)), [["job_f1", "job_e3", "job_e2"], ["job_e1"]], "the organization's: every environment, no other organization");
  t.same((await jobs.list("org_j4", 1, null)).data, [job("job_f1", 20)]);
  // A listed id whose snapshot is gone is skipped.
  await jobs.eraseDocuments(["job_e2"]);
  t.same((await jobs.listEnvironment("env_j4", 10, null)).data.map((j) => j.id), ["job_e3", "job_e1"]);
  t.same((await jobs.listEnvironmentEntries("env_j4", 10, null)).data.map((e) => e.job.id), ["job_e3", "job_e1"]);
  t.same((await jobs.list("org_j4", 10, null)).data.map((j) => j.id), ["job_f1", "job_e3", "job_e1"]);
  t.same(await jobs.eraseOrganization("org_j4", ["env_j4", "env_j5"]), ["job_f1", "job_e3", "job_e2", "job_e1"]);
  t.same(await members("org-jobs:org_j4"), []);
  t.same(await members("env-jobs:env_j4"), []);
  t.same(await members("env-jobs:env_j5"), []);
  t.equal(await store.get("job:job_e1"), undefined);
  t.same((await jobs.list("org_j5", 10, null)).data.map((j) => j.id), ["job_g1"], "another organization's stays");
});

// ---------------------------------------------------------------- webhooks

const hook = (id: string, seconds: number, over: Partial<Webhook> = {}): Webhook => ({
  id,
  url: "https://receiver.example/hook",
  events: ["job.completed"],
  status: "active",
  disabled_reason: null,
  created_at: at(seconds),
  ...over,
});
const audienceOf = (environment_id: string, live = true): WebhookAudience => ({ environment_id, project_id: "proj_w", live });
const wholeOrg = (organization_id: string) => ({ organization_id, project_id: null, environment_id: null });

t.test("webhooks: created writes the record and the indexes; the lists hide the audience", async (t) => {
  const webhooks = new WebhookDirectory(store);
  await webhooks.created("org_w1", hook("wh_a", 1));
  await webhooks.created("org_w1", hook("wh_b", 2), audienceOf("env_w1"));
  await webhooks.created("org_w1", hook("wh_c", 3), audienceOf("env_w1"));
  await webhooks.created("org_w1", hook("wh_d", 4), audienceOf("env_w2"));
  await webhooks.created("org_w9", hook("wh_z", 5), audienceOf("env_w9"));
  t.same(await store.get("webhook:wh_a"), { ...hook("wh_a", 1), organization_id: "org_w1", audience: null });
  t.same(await store.get("webhook:wh_b"), { ...hook("wh_b", 2), organization_id: "org_w1", audience: audienceOf("env_w1") });
  t.same(await members("org-webhooks:org_w1"), ["wh_d", "wh_c", "wh_b", "wh_a"]);
  t.same(await members("env-webhooks:env_w1"), ["wh_c", "wh_b"]);
  t.equal((await store.page("env-webhooks:env_w1", 1)).nextCursor?.split(".")[0], String(startMs + 3000));
  t.same(await allPages((c) => webhooks.list("org_w1", 3, c)), [["wh_d", "wh_c", "wh_b"], ["wh_a"]], "a session's list: the organization's");
  t.same(await allPages((c) => webhooks.list("org_w1", 4, c, null)), [["wh_d", "wh_c", "wh_b", "wh_a"]], "exactly full");
  t.same(await allPages((c) => webhooks.list("org_w1", 1, c, "env_w1")), [["wh_c"], ["wh_b"]], "a key's list: its environment's");
  t.same(await webhooks.list("org_w1", 10, undefined, "env_w2"), { data: [hook("wh_d", 4)], next_cursor: null }, "no audience or organization in the list");
  t.same(await webhooks.idsOf("org_w1"), ["wh_d", "wh_c", "wh_b", "wh_a"], "newest first");
  t.same(await webhooks.list("org_w2", 10, null), { data: [], next_cursor: null });
});

t.test("webhooks: subscribed takes active, subscribed webhooks whose audience receives the event", async (t) => {
  const webhooks = new WebhookDirectory(store);
  await webhooks.created("org_w3", hook("wh_all", 1, { events: ["job.completed", "job.failed"] }));
  await webhooks.created("org_w3", hook("wh_env", 2), audienceOf("env_w3"));
  await webhooks.created("org_w3", hook("wh_test", 3), audienceOf("env_w4", false));
  await webhooks.created("org_w3", hook("wh_off", 4, { status: "inactive" }));
  await webhooks.created("org_w3", hook("wh_dis", 5, { status: "disabled", disabled_reason: "410 Gone" }));
  t.same(await webhooks.subscribed(wholeOrg("org_w3"), "job.completed"), ["wh_all"], "an organization-wide event: only those made without an audience");
  t.same(await webhooks.subscribed(wholeOrg("org_w3"), "job.failed"), ["wh_all"]);
  t.same(await webhooks.subscribed({ organization_id: "org_w3", project_id: "proj_w", environment_id: "env_w3" }, "job.completed"), ["wh_env", "wh_all"], "an environment's event: its audience's too");
  t.same(await webhooks.subscribed({ organization_id: "org_w3", project_id: "proj_w", environment_id: "env_w4" }, "job.completed"), ["wh_test", "wh_all"], "a test environment's too");
  t.same(await webhooks.subscribed({ organization_id: "org_w3", project_id: "proj_w", environment_id: null }, "job.completed"), ["wh_env", "wh_all"], "a project event: live audiences");
  t.same(await webhooks.subscribed(wholeOrg("org_w4"), "job.completed"), []);
});

t.test("webhooks: the fan-out's cache is kept until a change, here or broadcast", async (t) => {
  const here = new WebhookDirectory(store);
  const there = new WebhookDirectory(store);
  await here.start();
  await here.created("org_w5", hook("wh_1", 1));
  t.same(await here.subscribed(wholeOrg("org_w5"), "job.completed"), ["wh_1"]);
  // Written behind the directory's back: the cached list stands.
  await store.apply([
    { op: "put", key: "webhook:wh_2", value: { ...hook("wh_2", 2), organization_id: "org_w5", audience: null } },
    { op: "index", key: "org-webhooks:org_w5", member: "wh_2", score: startMs + 2000 },
  ]);
  t.same(await here.subscribed(wholeOrg("org_w5"), "job.completed"), ["wh_1"], "cached");
  t.same(await here.subscribed(wholeOrg("org_w5"), "job.failed"), [], "cached for every type");
  await there.updated("org_w5", hook("wh_1", 1, { status: "inactive" }));
  t.same(await here.subscribed(wholeOrg("org_w5"), "job.completed"), ["wh_2"], "another directory's change is broadcast");
  await here.updated("org_w5", hook("wh_1", 1));
  t.same(await here.subscribed(wholeOrg("org_w5"), "job.completed"), ["wh_2", "wh_1"], "its own change at once");
  t.same(await there.subscribed(wholeOrg("org_w5"), "job.completed"), ["wh_2", "wh_1"]);
  await here.created("org_w5", hook("wh_3", 3));
  t.same(await there.subscribed(wholeOrg("org_w5"), "job.completed"), ["wh_2", "wh_1"], "not started: no broadcast reaches it");
  t.same(await here.subscribed(wholeOrg("org_w5"), "job.completed"), ["wh_3", "wh_2", "wh_1"]);
});

t.test("webhooks: a failed read is not cached", async (t) => {
  const webhooks = new WebhookDirectory(store);
  await webhooks.created("org_w6", hook("wh_r", 1));
  store.failPage = Promise.reject(new Error("index down"));
  await t.rejects(webhooks.subscribed(wholeOrg("org_w6"), "job.completed"), { message: "index down" });
  t.same(await webhooks.subscribed(wholeOrg("org_w6"), "job.completed"), ["wh_r"], "read again");
});

t.test("webhooks: a read that fails after a change does not drop the newer cached list", async (t) => {
  const webhooks = new WebhookDirectory(store);
  await webhooks.created("org_w10", hook("wh_s1", 1));
  let fail: (error: Error) => void = () => {};
  store.failPage = new Promise<never>((_, reject) => (fail = reject));
  const stale = webhooks.subscribed(wholeOrg("org_w10"), "job.completed");
  await webhooks.updated("org_w10", hook("wh_s1", 1, { events: ["job.completed", "job.failed"] }));
  t.same(await webhooks.subscribed(wholeOrg("org_w10"), "job.failed"), ["wh_s1"], "the newer list, cached");
  fail(new Error("slow index down"));
  await t.rejects(stale, { message: "slow index down" });
  await store.apply([
    { op: "put", key: "webhook:wh_s2", value: { ...hook("wh_s2", 2), organization_id: "org_w10", audience: null } },
    { op: "index", key: "org-webhooks:org_w10", member: "wh_s2", score: startMs + 2000 },
  ]);
  t.same(await webhooks.subscribed(wholeOrg("org_w10"), "job.completed"), ["wh_s1"], "still the newer cached list");
});

t.test("webhooks: changes are broadcast on webhooks-changed; a listed id without its record is skipped", async (t) => {
  const heard: string[] = [];
  await store.subscribe("webhooks-changed", (org) => heard.push(org));
  const webhooks = new WebhookDirectory(store);
  await webhooks.created("org_w11", hook("wh_t1", 1));
  await webhooks.updated("org_w11", hook("wh_t1", 1, { status: "inactive" }));
  t.same(heard, ["org_w11", "org_w11"]);
  await store.apply([{ op: "index", key: "org-webhooks:org_w11", member: "wh_gone", score: startMs + 5000 }]);
  t.same((await webhooks.list("org_w11", 10, null)).data.map((w) => w.id), ["wh_t1"]);
  t.same(await webhooks.subscribed(wholeOrg("org_w11"), "job.completed"), []);
  t.same(await webhooks.eraseOrganization("org_w11", []), ["wh_gone", "wh_t1"]);
  t.same(heard, ["org_w11", "org_w11", "org_w11"], "erasure too");
});

t.test("webhooks: the fan-out reads every index page, 100 at a time", async (t) => {
  const webhooks = new WebhookDirectory(store);
  const ops: StoreOp[] = [];
  for (let i = 0; i < 201; i++) {
    const id = `wh_many_${String(i).padStart(3, "0")}`;
    ops.push(
      { op: "put", key: `webhook:${id}`, value: { ...hook(id, i), organization_id: "org_w7", audience: null } },
      { op: "index", key: "org-webhooks:org_w7", member: id, score: startMs + i * 1000 },
    );
  }
  await store.apply(ops);
  store.pages = [];
  const ids = await webhooks.subscribed(wholeOrg("org_w7"), "job.completed");
  t.equal(ids.length, 201);
  t.equal(ids[0], "wh_many_200", "newest first");
  t.equal(ids[200], "wh_many_000");
  t.equal(new Set(ids).size, 201);
  t.same(store.pages, ["org-webhooks:org_w7", "org-webhooks:org_w7", "org-webhooks:org_w7"], "three pages of at most 100");
});

t.test("webhooks: at most perOrganization active, one over refused, an inactive one frees its slot", async (t) => {
  const webhooks = new WebhookDirectory(store, 2);
  await webhooks.created("org_w8", hook("wh_q1", 1));
  await webhooks.created("org_w8", hook("wh_q2", 2), audienceOf("env_w8"));
  const refused = await rejectedWith(webhooks.created("org_w8", hook("wh_q3", 3)));
  t.same(
    { code: refused.code, status: refused.status, message: refused.message },
    { code: "quota_exceeded", status: 403, message: "this organization has as many active webhooks as it may: the limit is 2" },
  );
  t.equal(await store.get("webhook:wh_q3"), undefined, "nothing kept");
  t.same(await webhooks.idsOf("org_w8"), ["wh_q2", "wh_q1"]);
  const envW8 = { organization_id: "org_w8", project_id: "proj_w", environment_id: "env_w8" };
  t.same(await webhooks.subscribed(envW8, "job.completed"), ["wh_q2", "wh_q1"]);
  await webhooks.updated("org_w8", hook("wh_q1", 1, { status: "inactive" }));
  await webhooks.created("org_w8", hook("wh_q3", 3));
  t.same(await webhooks.subscribed(envW8, "job.completed"), ["wh_q3", "wh_q2"], "created, and the cache dropped");
  await rejectedWith(webhooks.created("org_w8", hook("wh_q4", 4)));
  t.equal((await members("quota-turns:webhooks:org_w8")).length, 3, "the quota's turns: two first takes, one retake");
  t.same(
    [await store.get("quota-holder:webhooks:org_w8:0"), await store.get("quota-holder:webhooks:org_w8:1")].sort(),
    ["wh_q2", "wh_q3"],
    "the holders: the active ones",
  );
  store.applied = [];
  t.same(await webhooks.eraseOrganization("org_w8", ["env_w8"]), ["wh_q3", "wh_q2", "wh_q1"]);
  t.same(store.applied.flat().filter((op) => typeof op !== "object"), [], "only store ops");
  t.equal(store.applied.length, 1, "one batch");
  t.same(await members("org-webhooks:org_w8"), []);
  t.same(await members("env-webhooks:env_w8"), []);
  t.equal(await store.get("webhook:wh_q2"), undefined);
  t.same(await members("quota-turns:webhooks:org_w8"), [], "the quota's turns erased");
  t.equal(await store.get("quota-holder:webhooks:org_w8:0"), undefined, "and its holders");
  t.equal(await store.get("quota-holder:webhooks:org_w8:1"), undefined);
  t.equal(await store.lookup("quota-turn:webhooks:org_w8:0:-"), undefined);
  t.same(await webhooks.subscribed(envW8, "job.completed"), [], "the cache dropped");
  store.applied = [];
  t.same(await webhooks.eraseOrganization("org_w8", []), [], "nothing left");
  t.same(store.applied, [], "and nothing to apply");
});
