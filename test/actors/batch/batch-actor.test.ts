// The BatchActor's transitions on the embedded host, at a controlled time:
// leases per runner epoch (a dead epoch's lines are leased again), a line
// answered twice counted once, cancel, expiry after the completion window,
// and each final status announced once as its webhook event.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { eraseDefinition } from "../../../actors/actor.ts";
import { createBatchActor, type CreateBatchInput } from "../../../actors/batch/batch-actor.ts";
import { callActor } from "../../../actors/host.ts";
import { EmbeddedActorHost } from "../../../actors/hosts/embedded/embedded-host.ts";
import { createLogger } from "../../../core/log.ts";
import { recordingPublisher } from "../../support/billing.ts";

const key = {
  id: "key_1",
  name: "k",
  display_prefix: "trp_test_x",
  scopes: [],
  live: false,
  environment_id: "env_1",
  project_id: "prj_1",
  organization_id: "org_1",
  rate_limit_per_minute: 600,
  token_limit_per_minute: null,
  models: null,
  max_concurrent: null,
  created_at: "2026-12-01T00:00:00.000Z",
  last_used_at: null,
  revoked_at: null,
};
const caller = { organization_id: "org_1", environment_id: "env_1" };

async function setup(t: { teardown(fn: () => unknown): void }) {
  let nowMs = Date.parse("2026-12-01T12:00:00.000Z");
  const clock = { now: () => nowMs };
  const publisher = recordingPublisher();
  const kicked: string[] = [];
  const actor = createBatchActor({ kick: (id) => void kicked.push(id), publisher, watchdogMs: 3_600_000 });
  const host = new EmbeddedActorHost({ dataDir: mkdtempSync(join(tmpdir(), "troupe-batch-actor-")), idleTimeoutMs: 60_000, clock, log: createLogger("silent") });
  host.register([eraseDefinition(actor)]);
  await host.start();
  t.teardown(() => host.stop());
  const create = (id: string, total: number) => {
    const input: CreateBatchInput = { api: "openai", key, endpoint: "/v1/chat/completions", input_file_id: "file-1", completion_window: "24h", metadata: null, total, errors: null, window_ms: 24 * 3600_000 };
    return callActor(host, actor, id, "create", input);
  };
  return { host, actor, publisher, kicked, create, advance: (ms: number) => void (nowMs += ms) };
}

t.test("leases: a dead epoch's lines are leased again; a line answered twice counts once; completion announced once", async (t) => {
  const { host, actor, publisher, kicked, create } = await setup(t);
  const created = await create("batch_a", 5);
  t.equal(created.status, "in_progress");
  t.same(kicked, ["batch_a"], "the runner is kicked after creation");
  const first = await callActor(host, actor, "batch_a", "lease", { epoch: "old", max: 3 });
  t.same(first.indices, [0, 1, 2]);
  await callActor(host, actor, "batch_a", "answered", { epoch: "old", index: 0, ok: true });
  // The old process dies holding lines 1 and 2: a new epoch gets them first, then new lines.
  const second = await callActor(host, actor, "batch_a", "lease", { epoch: "new", max: 10 });
  t.same(second.indices, [1, 2, 3, 4], "the dead epoch's leases, then the rest");
  t.same((await callActor(host, actor, "batch_a", "lease", { epoch: "new", max: 10 })).indices, [], "nothing leased twice to the same epoch");
  for (const index of [1, 2, 3]) await callActor(host, actor, "batch_a", "answered", { epoch: "new", index, ok: index !== 3 });
  await callActor(host, actor, "batch_a", "answered", { epoch: "new", index: 1, ok: true });
  const last = await callActor(host, actor, "batch_a", "answered", { epoch: "new", index: 4, ok: true });
  t.equal(last.status, "finalizing");
  const b = await callActor(host, actor, "batch_a", "get", caller);
  t.same([b.completed, b.failed], [4, 1], "line 1 counted once");
  await callActor(host, actor, "batch_a", "finalized", { output_file_id: "file-out", error_file_id: "file-err" });
  await callActor(host, actor, "batch_a", "finalized", { output_file_id: "file-out", error_file_id: "file-err" });
  await callActor(host, actor, "batch_a", "watchdog", {});
  const done = await callActor(host, actor, "batch_a", "get", caller);
  t.equal(done.status, "completed");
  t.same(
    publisher.events.map((e) => [e.type, e.id]),
    [["batch.completed", "evt_batch_a_completed"]],
    "one batch.completed",
  );
  t.rejects(callActor(host, actor, "batch_a", "get", { organization_id: "org_1", environment_id: "env_2" }), { code: "not_found" }, "another environment's batch is 404");
});

t.test("cancel: no lease after it; ends cancelled once the leased lines are answered", async (t) => {
  const { host, actor, publisher, create } = await setup(t);
  await create("batch_c", 10);
  await callActor(host, actor, "batch_c", "lease", { epoch: "e", max: 2 });
  const cancelling = await callActor(host, actor, "batch_c", "cancel", caller);
  t.equal(cancelling.status, "cancelling");
  t.same((await callActor(host, actor, "batch_c", "lease", { epoch: "e", max: 5 })).indices, [], "no new line after the cancel");
  await callActor(host, actor, "batch_c", "answered", { epoch: "e", index: 0, ok: true });
  await callActor(host, actor, "batch_c", "answered", { epoch: "e", index: 1, ok: true });
  const ended = await callActor(host, actor, "batch_c", "finalized", { output_file_id: "file-out", error_file_id: null });
  t.equal(ended.status, "cancelled");
  t.same(ended.request_counts, { total: 10, completed: 2, failed: 0 });
  t.same(publisher.events.map((e) => e.type), ["batch.cancelled"]);
});

t.test("cancel while a leased line is being released (a budget refusal): the batch still ends cancelled", async (t) => {
  const { host, actor, publisher, create } = await setup(t);
  await create("batch_r", 10);
  await callActor(host, actor, "batch_r", "lease", { epoch: "e", max: 2 });
  await callActor(host, actor, "batch_r", "cancel", caller);
  // The runner's two lines were refused their reservation after the cancel: they give their leases back.
  await callActor(host, actor, "batch_r", "release", { index: 0, pause: "budget_exceeded" });
  await callActor(host, actor, "batch_r", "release", { index: 1, pause: null });
  const after = await callActor(host, actor, "batch_r", "lease", { epoch: "e", max: 1 });
  t.same(after.batch?.leased, [], "no lease is left to wait for");
  const ended = await callActor(host, actor, "batch_r", "finalized", { output_file_id: null, error_file_id: null });
  t.equal(ended.status, "cancelled");
  t.same(publisher.events.map((e) => e.type), ["batch.cancelled"]);
});

t.test("past its completion window a batch expires, keeping what was answered", async (t) => {
  const { host, actor, publisher, create, advance } = await setup(t);
  await create("batch_e", 4);
  await callActor(host, actor, "batch_e", "lease", { epoch: "e", max: 1 });
  await callActor(host, actor, "batch_e", "answered", { epoch: "e", index: 0, ok: true });
  advance(24 * 3600_000 + 1000);
  t.same((await callActor(host, actor, "batch_e", "lease", { epoch: "e", max: 4 })).indices, [], "nothing starts past the window");
  const b = await callActor(host, actor, "batch_e", "get", caller);
  t.equal(b.status, "expired");
  await callActor(host, actor, "batch_e", "finalized", { output_file_id: "file-out", error_file_id: null });
  t.same(publisher.events.map((e) => e.type), ["batch.expired"]);
});

t.test("a budget pause stops leases until the watchdog", async (t) => {
  const { host, actor, create } = await setup(t);
  await create("batch_p", 3);
  await callActor(host, actor, "batch_p", "lease", { epoch: "e", max: 1 });
  const paused = await callActor(host, actor, "batch_p", "release", { index: 0, pause: "budget_exceeded" });
  t.equal(paused.paused, "budget_exceeded");
  t.same((await callActor(host, actor, "batch_p", "lease", { epoch: "e", max: 3 })).indices, [], "paused: nothing leased");
  await callActor(host, actor, "batch_p", "watchdog", {});
  t.same((await callActor(host, actor, "batch_p", "lease", { epoch: "e", max: 3 })).indices, [0, 1, 2], "resumed: the released line first");
});
