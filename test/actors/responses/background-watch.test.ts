// The ResponseActor's background run without a gateway (embedded host,
// the runner's calls made by hand): the watch reminder starts a queued run,
// fails a run whose process is gone (at once on a single-process host, after
// its heartbeat went stale otherwise) and leaves a live one alone; the end
// is announced once, with the budget hold released; a runner's finish after
// a cancel does not overwrite it.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { eraseDefinition } from "../../../actors/actor.ts";
import { callActor } from "../../../actors/host.ts";
import { EmbeddedActorHost } from "../../../actors/hosts/embedded/embedded-host.ts";
import type { RunState } from "../../../actors/responses/background-run.ts";
import { createResponseActor, type BackgroundRunDeps, type StoredResponse } from "../../../actors/responses/response-actor.ts";
import { systemClock } from "../../../core/clock.ts";
import { createLogger } from "../../../core/log.ts";
import { recordingPublisher } from "../../support/billing.ts";

const owner = { organization_id: "org_1", project_id: "prj_1", environment_id: "env_1" };
const reader = { organization_id: owner.organization_id, environment_id: owner.environment_id };
const payer = { ...owner, api_key_id: "key_1", live: true };

async function hostWith(overrides: Partial<BackgroundRunDeps>) {
  const started: string[] = [];
  const released: string[][] = [];
  const publisher = recordingPublisher();
  const deps: BackgroundRunDeps = {
    start: (id) => void started.push(id),
    runs: () => false,
    runner: "runner_now",
    singleProcess: true,
    publisher,
    budget: { releaseParts: async (_held, ids) => void released.push(ids) },
    // Long: the test calls watch itself.
    watchMs: 3_600_000,
    staleMs: 15_000,
    ...overrides,
  };
  const actor = createResponseActor(deps);
  const host = new EmbeddedActorHost({ dataDir: mkdtempSync(join(tmpdir(), "troupe-bg-watch-")), idleTimeoutMs: 60_000, clock: systemClock, log: createLogger("silent") });
  host.register([eraseDefinition(actor)]);
  await host.start();
  return { host, actor, started, released, publisher };
}

let n = 0;
async function enqueue(h: Awaited<ReturnType<typeof hostWith>>): Promise<string> {
  const id = `resp_01ARZ3NDEKTSV4RRFFQ69G5FA${n++}`;
  const response = { id, object: "response", status: "queued", background: true, error: null, output: [] };
  const stored: StoredResponse = { owner, expires_at: Date.now() + 3_600_000, previous_response_id: null, input: [], response };
  const run: RunState = { status: "queued", body: { model: "m", input: "hi", background: true }, payer, category: "chat", budget: { project_id: "prj_1", period: "2026-12", parts: [{ id: `resp:${id}:0`, amount_nanos: 1000, open: true }] }, events: [], runner: null, heartbeat_at: 0, announced: false };
  await callActor(h.host, h.actor, id, "enqueue", { stored, run });
  return id;
}

const status = async (h: Awaited<ReturnType<typeof hostWith>>, id: string) => (await callActor(h.host, h.actor, id, "current", reader))?.response;

t.test("a queued run is started by the watch; a run of a process gone ends failed, announced once, its hold released", async (t) => {
  const h = await hostWith({});
  t.teardown(() => h.host.stop());
  const id = await enqueue(h);
  t.equal(await callActor(h.host, h.actor, id, "get", reader), null, "not readable as a stored response while it runs");
  await callActor(h.host, h.actor, id, "watch", {});
  await new Promise((r) => setTimeout(r, 20));
  t.same(h.started, [id], "queued: started here");

  // Claimed by an earlier process (a kill -9 since): on a single-process host it is dead.
  t.ok(await callActor(h.host, h.actor, id, "claim", { runner: "runner_before" }));
  await callActor(h.host, h.actor, id, "progress", { runner: "runner_before", events: [{ type: "response.created", sequence_number: 0 }] });
  await callActor(h.host, h.actor, id, "watch", {});
  t.match(await status(h, id), { status: "failed", error: { code: "server_error", message: /stopped before it finished/ } });
  await callActor(h.host, h.actor, id, "watch", {});
  await callActor(h.host, h.actor, id, "announce", {});
  t.same(h.publisher.events.map((e) => [e.id, e.type]), [[`${id}:response.failed`, "response.failed"]], "announced once");
  t.same(h.released, [[`resp:${id}:0`]], "the unspent hold released once");
  const log = await callActor(h.host, h.actor, id, "events", { ...reader, after: -1 });
  t.same(log?.events.map((e) => e.type), ["response.created", "response.failed"], "the log ends with its terminal event");
  t.ok(await callActor(h.host, h.actor, id, "get", reader), "readable once it ended");
  const late = await callActor(h.host, h.actor, id, "finish", { runner: "runner_before", events: [], response: { status: "completed" }, billed: true });
  t.equal(late.accepted, false, "the dead runner's late finish is refused");
});

t.test("replicas: a live heartbeat is left alone, a stale one is failed", async (t) => {
  const live = await hostWith({ singleProcess: false });
  t.teardown(() => live.host.stop());
  const id = await enqueue(live);
  await callActor(live.host, live.actor, id, "claim", { runner: "runner_other_replica" });
  await callActor(live.host, live.actor, id, "watch", {});
  t.match(await status(live, id), { status: "in_progress" }, "another replica's fresh run runs on");

  const stale = await hostWith({ singleProcess: false, staleMs: -1 });
  t.teardown(() => stale.host.stop());
  const other = await enqueue(stale);
  await callActor(stale.host, stale.actor, other, "claim", { runner: "runner_other_replica" });
  await callActor(stale.host, stale.actor, other, "watch", {});
  t.match(await status(stale, other), { status: "failed" }, "a stale one is failed");
});

t.test("cancel: the runner is told to stop, its finish refused; announced cancelled once", async (t) => {
  const h = await hostWith({ runs: () => true });
  t.teardown(() => h.host.stop());
  const id = await enqueue(h);
  await callActor(h.host, h.actor, id, "claim", { runner: "runner_now" });
  t.same(await callActor(h.host, h.actor, id, "progress", { runner: "runner_now", events: [] }), { stop: false });
  t.match(await callActor(h.host, h.actor, id, "cancel", reader), { status: "cancelled" });
  t.same(await callActor(h.host, h.actor, id, "progress", { runner: "runner_now", events: [] }), { stop: true }, "the next report says stop");
  t.equal((await callActor(h.host, h.actor, id, "finish", { runner: "runner_now", events: [], response: { status: "completed" }, billed: false })).accepted, false);
  t.match(await callActor(h.host, h.actor, id, "cancel", reader), { status: "cancelled" }, "cancelling again answers it");
  await new Promise((r) => setTimeout(r, 50)); // the announce reminder (due at once)
  await callActor(h.host, h.actor, id, "watch", {});
  t.same(h.publisher.events.map((e) => e.type), ["response.cancelled"]);
});
