// What the JobActor announces of a turn — its directory snapshot, its live
// `job.updated` event and the transition it counts — leaves once the turn's
// state is committed, as the ConversationActor's announcements do. Run on the
// turn machinery both hosts share (actors/hosts/activation.ts) with a state
// write the test controls, a real JobDirectory on the embedded data store and
// a video double:
// - a cancel or a submitting step whose state write fails announces nothing
//   and leaves the directory as it was;
// - committed, each announces after its state was written, the snapshot
//   before the event.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { systemClock } from "../../core/clock.ts";
import { createLogger } from "../../core/log.ts";
import { eraseDefinition } from "../../actors/actor.ts";
import { Activation } from "../../actors/hosts/activation.ts";
import { JobDirectory, type JobPlace } from "../../actors/job/directory.ts";
import { createJobActor, type CreateJobInput, type JobActorDeps } from "../../actors/job/job-actor.ts";
import type { Job, JobState, OpenAiVideoFields } from "../../actors/job/types.ts";
import { Catalogue } from "../../providers/catalogue.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { waitFor } from "../support/net.ts";
import { offlineActorServices, unused } from "../support/offline-actor-services.ts";

const dataDir = mkdtempSync(join(tmpdir(), "troupe-job-after-commit-"));
const store = new EmbeddedDataStore(dataDir, systemClock);
t.teardown(async () => {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Everything the job's turns did outside the actor, in order, with the status each carried. */
const trail: string[] = [];
class RecordingDirectory extends JobDirectory {
  override async updated(place: JobPlace, job: Job, openaiVideo: OpenAiVideoFields | null = null): Promise<void> {
    trail.push(`directory:${job.status}`);
    await super.updated(place, job, openaiVideo);
  }
}
const directory = new RecordingDirectory(store);
const task = { provider: "double", model: "double-video", task_id: "task-1", poll_after_ms: 60_000, duration_seconds: 2 };

const deps: JobActorDeps = {
  video: {
    submitVideo: async () => task,
    // The provider keeps the task a submission whose turn did not commit made.
    findVideo: async () => task,
    pollVideo: unused,
    cancelVideo: async () => undefined,
  },
  plan: () => ({ model: "double-video", provider: "double" }),
  narrate: unused,
  compose: { concatClips: unused, muxVoiceover: unused, extractLastFrame: unused },
  // A text job's submission reads none of the media services; the step only asks whether video is available.
  media: { capabilities: { missing: () => undefined } } as unknown as JobActorDeps["media"],
  catalogue: Catalogue.load([]),
  bill: async () => undefined,
  log: createLogger("silent"),
  now: () => Date.now(),
  directory,
  events: { publish: (event) => void trail.push(`event:${event.job.status}`), listen: async () => async () => undefined },
  metrics: { jobTransition: (status) => void trail.push(`transition:${status}`) },
  watchdogMs: 60_000,
};
const job = createJobActor(deps);

// Reminders are registered at once, not at commit (actors/actor.ts): only what the turn announces is under test.
const services = offlineActorServices({ setReminder: async () => undefined, clearReminder: async () => undefined });
let refuseWrites = false;
const persist = async (json: string | null): Promise<void> => {
  await new Promise((resolve) => setTimeout(resolve, 5)); // a write that takes a while
  if (refuseWrites) throw new Error("store unavailable");
  trail.push(`persisted:${(JSON.parse(json ?? "{}") as JobState).job?.status ?? "none"}`);
};

const owner = { organization_id: "org_1", project_id: "prj_1", environment_id: "env_1" };
const input: CreateJobInput = {
  owner,
  payer: { ...owner, api_key_id: "key_1", live: true },
  prompt: "a lighthouse",
  duration_seconds: 2,
  narration_text: null,
  scenes: null,
  model: null,
  routing_strategy: "auto",
  image: null,
  callback: null,
};
let n = 0;
async function newJob(): Promise<{ id: string; activation: Activation }> {
  const id = `00000000-0000-4000-8000-${String(++n).padStart(12, "0")}`;
  const initial: JobState = { job: null };
  const activation = new Activation(eraseDefinition(job), id, JSON.stringify(initial), services, persist);
  await activation.invoke("create", input);
  return { id, activation };
}
const listed = async (id: string) => (await directory.get("org_1", id))?.job.status;
/** A turn's announcements leave right after its commit; this gives any that leaked time to land. */
const settled = () => new Promise((resolve) => setTimeout(resolve, 100));

t.test("a cancel whose state write fails announces nothing and leaves the directory as it was", async (t) => {
  const { id, activation } = await newJob();
  await settled();
  trail.length = 0;
  refuseWrites = true;
  try {
    await t.rejects(activation.invoke("cancel", { organization_id: "org_1" }), /store unavailable/);
  } finally {
    refuseWrites = false;
  }
  await settled();
  t.same(trail, [], "no snapshot, event or transition of the cancel that did not commit");
  t.equal(await listed(id), "queued", "the directory still lists the job as it was committed");
  t.match(await activation.invoke("get", { organization_id: "org_1" }), { status: "queued" }, "and so does the actor");
});

t.test("a committed cancel announces after its state was written: the snapshot, then the event", async (t) => {
  const { id, activation } = await newJob();
  await settled();
  trail.length = 0;
  t.match(await activation.invoke("cancel", { organization_id: "org_1" }), { status: "failed", error: { code: "cancelled" } });
  await waitFor(async () => trail.includes("event:failed"), 5_000, "the cancel's event");
  t.same(trail, ["persisted:failed", "transition:failed", "directory:failed", "event:failed"]);
  t.equal(await listed(id), "failed");
});

t.test("a submitting step whose state write fails announces nothing; run again and committed, it announces processing", async (t) => {
  const { id, activation } = await newJob();
  await settled();
  trail.length = 0;
  refuseWrites = true;
  try {
    await t.rejects(activation.invoke("step", {}), /store unavailable/);
  } finally {
    refuseWrites = false;
  }
  await settled();
  t.same(trail, [], "nothing of the submission that did not commit");
  t.equal(await listed(id), "queued");

  await activation.invoke("step", {});
  await waitFor(async () => trail.includes("event:processing"), 5_000, "the submission's event");
  t.same(trail, ["persisted:processing", "transition:processing", "directory:processing", "event:processing"], "announced once its state was written");
  t.equal(await listed(id), "processing", "the directory lists it processing");
});
