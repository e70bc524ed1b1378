// End-to-end video job cases over HTTP, shared by the embedded run and the
// two-replica Dapr cluster run: `at(i)` is the replica to send through, so a
// job is created on one and read, listened to and cancelled on the other.
// Clips come from the simulated video provider (real MP4s from ffmpeg), the
// narration from the simulated speech provider; composition is real ffmpeg.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Test } from "tap";
import { probeMedia } from "../../media/video-compose.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import type { RequestOptions, TestResponse } from "../support/troupe.ts";
import { field, str } from "../support/troupe.ts";
import { openEventSocket } from "../support/event-socket.ts";

export type Requester = (method: string, path: string, options?: RequestOptions) => Promise<TestResponse>;

export interface JobTarget {
  at(replica: number): Requester;
  wsUrl(replica: number): string;
  /** Two API keys of two different organizations, both with every scope. */
  keyA: string;
  keyB: string;
  /** Usage records written so far (read back from where the gateway keeps them). */
  usage(): Promise<UsageRecord[]>;
  /** Seconds of one simulated clip for duration_seconds 1. */
  clipSeconds: number;
  /** Organization A's id (keyA's). */
  orgA: string;
  /** The ids of the stored files of an organization, where the test can see the store (embedded: the data directory). */
  storedFiles?: (organizationId: string) => Promise<string[]>;
  /** Whether the job's actor state is gone from the actor state store (checked after a delete). */
  actorStateGone?: (jobId: string) => Promise<boolean>;
  /** Merged into every job request (the cluster names the simulated model: a real provider is configured there too). */
  videoDefaults?: Record<string, unknown>;
}

export interface JobView {
  id: string;
  status: string;
  type: string;
  category: string;
  progress: number;
  provider: string;
  model: string;
  result_url: string | null;
  error: { code: string; message: string } | null;
  segments: { index: number; status: string; progress: number; prompt: string }[];
}

export async function startJob(r: Requester, key: string, body: Record<string, unknown>): Promise<string> {
  const res = await r("POST", "/v1/video/generate", { token: key, body });
  if (res.status !== 202) throw new Error(`generate: ${res.status} ${res.text}`);
  return str(res.body, "job_id");
}

/** Polls GET /v1/jobs/{id} until `done`; every distinct (status, progress, segments) seen is kept. */
export async function watchJob(r: Requester, key: string, id: string, timeoutMs = 60_000, done = (j: JobView) => j.status === "completed" || j.status === "failed") {
  const seen: JobView[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await r("GET", `/v1/jobs/${id}`, { token: key });
    if (res.status !== 200) throw new Error(`get job: ${res.status} ${res.text}`);
    const job = res.body as JobView;
    const last = seen.at(-1);
    if (!last || JSON.stringify([last.status, last.progress, last.segments]) !== JSON.stringify([job.status, job.progress, job.segments])) seen.push(job);
    if (done(job)) return { job, seen };
    if (Date.now() > deadline) throw new Error(`job ${id} did not finish in ${timeoutMs} ms: ${JSON.stringify(job)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function download(url: string): Promise<{ status: number; type: string | null; bytes: Buffer }> {
  const res = await fetch(url);
  return { status: res.status, type: res.headers.get("content-type"), bytes: Buffer.from(await res.arrayBuffer()) };
}

export function jobSuite(t: Test, target: JobTarget): void {
  const r0 = target.at(0);
  const r1 = target.at(1);
  const start = (r: Requester, key: string, body: Record<string, unknown>) => startJob(r, key, { ...target.videoDefaults, ...body });

  t.test("bad requests are 400 naming the field", async (t) => {
    const cases: [Record<string, unknown>, string][] = [
      [{}, "prompt"],
      [{ prompt: "   " }, "prompt"],
      [{ prompt: "a cat", duration_seconds: 2.5 }, "duration_seconds"],
      [{ prompt: "a cat", duration_seconds: 0 }, "duration_seconds"],
      [{ prompt: "a cat", scenes: [] }, "scenes"],
      [{ prompt: "a cat", scenes: ["one", " "] }, "scenes.1"],
      [{ prompt: "a cat", scenes: Array.from({ length: 11 }, (_, i) => `scene ${i}`) }, "scenes"],
      [{ prompt: "a cat", narration_text: "x".repeat(4097) }, "narration_text"],
      [{ prompt: "a cat", image_url: "not a url" }, "image_url"],
      [{ prompt: "a cat", image_url: "http://127.0.0.1:1/cat.png" }, "image_url"],
      [{ prompt: "a cat", model: "gpt-4.1" }, "model"],
      [{ prompt: "a cat", routing_strategy: "manual" }, "model"],
      [{ prompt: "a cat", routing_strategy: "fastest" }, "routing_strategy"],
      [{ prompt: "a cat", extra: 1 }, ""],
    ];
    for (const [body, path] of cases) {
      const res = await r0("POST", "/v1/video/generate", { token: target.keyA, body });
      t.equal(res.status, 400, `${JSON.stringify(body).slice(0, 80)} → 400`);
      t.equal(field(res.body, "error", "code"), "invalid_request");
      if (path) t.match(JSON.stringify(field(res.body, "error", "details")), path, `names ${path}`);
    }
  });

  t.test("a 3-scene job with narration completes: segments and progress move, one usage record per scene, an MP4 with video and audio", async (t) => {
    const narration = "A short story told over three scenes, long enough to be heard.";
    const id = await start(r0, target.keyA, {
      prompt: "a city at dawn",
      scenes: ["the sun rises over the roofs", "a tram crosses the square", "birds leave a tree"],
      duration_seconds: 1,
      narration_text: narration,
    });
    const { job, seen } = await watchJob(r1, target.keyA, id);
    t.equal(job.status, "completed", JSON.stringify(job.error));
    t.match(job, { id, category: "video", type: "text_to_video", provider: "simulated", model: "simulated-video", progress: 1, error: null });
    t.same(job.segments.map((s) => [s.index, s.status, s.progress]), [[0, "completed", 1], [1, "completed", 1], [2, "completed", 1]]);
    t.same(job.segments.map((s) => s.prompt), ["the sun rises over the roofs", "a tram crosses the square", "birds leave a tree"]);
    t.ok(seen.some((j) => j.status === "processing"), "processing was seen");
    t.ok(seen.some((j) => j.segments[0]?.status === "completed" && j.segments[2]?.status !== "completed"), "segments complete one after the other");
    const progress = seen.map((j) => j.progress);
    t.ok(progress.every((p, i) => i === 0 || p >= progress[i - 1]!), `progress never goes back: ${progress.join(" ")}`);
    t.ok(progress.some((p) => p > 0 && p < 1), `intermediate progress seen: ${progress.join(" ")}`);

    t.match(job.result_url, /\/v1\/files\/file_[A-Za-z0-9_-]{22}$/);
    const file = await download(job.result_url!);
    t.equal(file.status, 200);
    t.equal(file.type, "video/mp4");
    const dir = await mkdtemp(join(tmpdir(), "troupe-job-result-"));
    try {
      await writeFile(join(dir, "out.mp4"), file.bytes);
      const probe = await probeMedia(join(dir, "out.mp4"));
      t.ok(probe.has_video, "a video stream");
      t.ok(probe.has_audio, "an audio stream (the narration)");
      // Narration never cut: the video lasts at least the three clips, and at least the narration.
      t.ok(probe.duration_seconds >= 3 * target.clipSeconds - 0.2, `duration ${probe.duration_seconds} s covers the three clips`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }

    let records: UsageRecord[] = [];
    for (let i = 0; i < 50 && records.filter((u) => u.category === "video").length < 3; i++) {
      records = (await target.usage()).filter((u) => u.request_id.startsWith(`job:${id}:`));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const video = records.filter((u) => u.category === "video");
    t.same(video.map((u) => u.request_id).sort(), [0, 1, 2].map((i) => `job:${id}:segment:${i}`), "one record per scene, keyed by (job, segment)");
    t.ok(video.every((u) => u.units === target.clipSeconds && u.model === "simulated-video" && u.provider === "simulated" && u.live === false));
    t.same(records.filter((u) => u.category === "audio").map((u) => [u.request_id, u.units]), [[`job:${id}:narration`, [...narration].length]], "the narration is billed once, as speech");
  });

  t.test("a single prompt makes one segment; jobs are listed newest first; another organization sees none of them", async (t) => {
    const first = await start(r0, target.keyA, { prompt: "a quiet lake", duration_seconds: 1 });
    const second = await start(r1, target.keyA, { prompt: "a loud street", duration_seconds: 1 });
    const { job } = await watchJob(r0, target.keyA, first);
    t.equal(job.status, "completed");
    t.equal(job.segments.length, 1);
    t.equal(job.segments[0]?.prompt, "a quiet lake");
    const probeDir = await mkdtemp(join(tmpdir(), "troupe-job-silent-"));
    try {
      await writeFile(join(probeDir, "out.mp4"), (await download(job.result_url!)).bytes);
      const probe = await probeMedia(join(probeDir, "out.mp4"));
      t.ok(probe.has_video && !probe.has_audio, "no narration, no audio stream");
    } finally {
      await rm(probeDir, { recursive: true, force: true });
    }

    const page = await r1("GET", "/v1/jobs?limit=2", { token: target.keyA });
    t.equal(page.status, 200);
    t.same((field(page.body, "data") as JobView[]).map((j) => j.id), [second, first], "newest first");
    t.type(field(page.body, "next_cursor"), "string");
    const next = await r1("GET", `/v1/jobs?limit=2&cursor=${encodeURIComponent(str(page.body, "next_cursor"))}`, { token: target.keyA });
    t.notOk((field(next.body, "data") as JobView[]).some((j) => j.id === first || j.id === second), "the next page continues after them");

    for (const r of [r0, r1]) {
      t.equal((await r("GET", `/v1/jobs/${first}`, { token: target.keyB })).status, 404, "another organization: 404");
      t.equal((await r("POST", `/v1/jobs/${second}/cancel`, { token: target.keyB })).status, 404);
      t.equal((await r("DELETE", `/v1/jobs/${second}`, { token: target.keyB })).status, 404);
    }
    const theirs = await r0("GET", "/v1/jobs", { token: target.keyB });
    t.notOk((field(theirs.body, "data") as JobView[]).some((j) => j.id === first || j.id === second));
    t.equal((await r0("GET", "/v1/jobs/not-a-uuid", { token: target.keyA })).status, 404);
    t.equal((await r0("GET", "/v1/jobs/00000000-0000-4000-8000-000000000000", { token: target.keyA })).status, 404);
    await watchJob(r0, target.keyA, second);
  });

  t.test("cancelling a job mid-way: failed with error.code cancelled, unfinished scenes unbilled, a second cancel is 409", async (t) => {
    const id = await start(r0, target.keyA, { prompt: "p", scenes: ["one", "two", "three", "four"], duration_seconds: 1 });
    await watchJob(r1, target.keyA, id, 60_000, (j) => j.segments[0]?.status === "completed");
    const cancelled = await r1("POST", `/v1/jobs/${id}/cancel`, { token: target.keyA });
    t.equal(cancelled.status, 200, cancelled.text);
    t.match(cancelled.body, { id, status: "failed", error: { code: "cancelled" } });
    const { job } = await watchJob(r0, target.keyA, id);
    t.equal(job.status, "failed");
    t.equal(job.error?.code, "cancelled");
    t.equal(job.result_url, null);
    t.equal(job.segments[0]?.status, "completed");
    t.ok(job.segments.slice(1).every((s) => s.status === "cancelled" || s.status === "completed"), JSON.stringify(job.segments));
    const completed = job.segments.filter((s) => s.status === "completed").length;
    t.equal((await r0("POST", `/v1/jobs/${id}/cancel`, { token: target.keyA })).status, 409, "a finished job cannot be cancelled");
    // Nothing more happens to it afterwards.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const after = (await r0("GET", `/v1/jobs/${id}`, { token: target.keyA })).body as JobView;
    t.same(after.segments.map((s) => s.status), job.segments.map((s) => s.status), "no segment moves after the cancel");
    const billed = (await target.usage()).filter((u) => u.request_id.startsWith(`job:${id}:segment:`));
    t.equal(billed.length, completed, `only the ${completed} finished scene(s) are billed`);
  });

  t.test("DELETE removes a job and its files: 404 on every replica, not listed, the result URL 404, the actor state gone; an unfinished one is cancelled first", async (t) => {
    const filesBefore = await target.storedFiles?.(target.orgA);
    const done = await start(r0, target.keyA, { prompt: "a kite", scenes: ["up", "down"], duration_seconds: 1, narration_text: "Up and down it goes." });
    const { job } = await watchJob(r1, target.keyA, done);
    t.equal(job.status, "completed", JSON.stringify(job.error));
    t.equal((await download(job.result_url!)).status, 200);
    const deleted = await r1("DELETE", `/v1/jobs/${done}`, { token: target.keyA });
    t.equal(deleted.status, 200, deleted.text);
    t.same(deleted.body, { id: done, deleted: true });
    for (const r of [r0, r1]) {
      t.equal((await r("GET", `/v1/jobs/${done}`, { token: target.keyA })).status, 404, "GET answers 404");
      t.equal((await r("POST", `/v1/jobs/${done}/cancel`, { token: target.keyA })).status, 404, "cancel answers 404");
      t.equal((await r("DELETE", `/v1/jobs/${done}`, { token: target.keyA })).status, 404, "a second DELETE answers 404");
      const listed = (field((await r("GET", "/v1/jobs?limit=100", { token: target.keyA })).body, "data") as JobView[]).map((j) => j.id);
      t.notOk(listed.includes(done), "not listed");
    }
    t.equal((await download(job.result_url!)).status, 404, "the result file is gone");
    if (target.storedFiles) t.same((await target.storedFiles(target.orgA)).sort(), filesBefore!.sort(), "no file of the job is left (clips, narration, result)");
    if (target.actorStateGone) t.ok(await target.actorStateGone(done), "the JobActor's state is removed");

    const running = await start(r0, target.keyA, { prompt: "p", scenes: ["one", "two", "three", "four"], duration_seconds: 1 });
    await watchJob(r1, target.keyA, running, 60_000, (j) => j.segments[0]?.status === "completed");
    const gone = await r0("DELETE", `/v1/jobs/${running}`, { token: target.keyA });
    t.equal(gone.status, 200, gone.text);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    for (const r of [r0, r1]) t.equal((await r("GET", `/v1/jobs/${running}`, { token: target.keyA })).status, 404, "the unfinished job is gone");
    const billed = (await target.usage()).filter((u) => u.request_id.startsWith(`job:${running}:segment:`));
    t.ok(billed.length < 4, `cancelled before the end: ${billed.length} of 4 scenes billed, nothing after the delete`);
    if (target.storedFiles) t.same((await target.storedFiles(target.orgA)).sort(), filesBefore!.sort(), "its clips are gone too");
    if (target.actorStateGone) t.ok(await target.actorStateGone(running), "its actor state is removed");
  });

  t.test("live job events over the WebSocket, on the other replica", async (t) => {
    const id = await start(r0, target.keyA, { prompt: "p", scenes: ["one", "two"], duration_seconds: 1 });
    const { frames, closed } = await openEventSocket<{ type: string; job: JobView }>(`${target.wsUrl(1)}/v1/jobs/${id}/events`, ["troupe.v1", `bearer.${target.keyA}`]);
    const code = await Promise.race([closed, new Promise<number>((resolve) => setTimeout(() => resolve(-1), 60_000))]);
    t.equal(code, 1000, "the server closes the socket once the job is final");
    t.equal(frames[0]?.type, "job", "first frame is the job");
    const updates = frames.filter((f) => f.type === "job.updated");
    t.ok(updates.length >= 3, `status and progress changes pushed: ${updates.length}`);
    t.equal(updates.at(-1)?.job.status, "completed");
    t.ok(updates.some((f) => f.job.status === "processing" && f.job.progress > 0 && f.job.progress < 1), "an intermediate progress frame");

    const refused = await openEventSocket<unknown>(`${target.wsUrl(0)}/v1/jobs/${id}/events`, ["troupe.v1", `bearer.${target.keyB}`]);
    t.equal((await refused.closing).code, 4404, "another organization cannot listen: closed as not found");
    t.same(refused.frames, [], "not a frame of the job");
  });

  t.test("an agent's generate_video: generating_media (messages 409) until the job calls back, then idle with the video URL in its history", async (t) => {
    const created = await r0("POST", "/v1/agents/conversations", { token: target.keyA, body: { system_prompt: "You make videos." } });
    t.equal(created.status, 201, created.text);
    const id = str(created.body, "id");
    const sent = await r1("POST", `/v1/agents/conversations/${id}/messages`, { token: target.keyA, body: { content: 'call generate_video {"prompt":"a cat on a piano","duration_seconds":1,"narration_text":"The cat plays."}; then answer' } });
    t.equal(sent.status, 200, sent.text);
    t.equal(field(sent.body, "status"), "generating_media");
    const calls = (field(sent.body, "messages") as { role: string; tool_calls: { id: string; name: string }[] | null }[]).flatMap((m) => m.tool_calls ?? []);
    t.same(calls.map((c) => c.name), ["generate_video"]);
    const busy = await r0("POST", `/v1/agents/conversations/${id}/messages`, { token: target.keyA, body: { content: "say are you done?" } });
    t.equal(busy.status, 409, "messages are refused while the video is made");
    t.equal(field(busy.body, "error", "code"), "conflict");

    const deadline = Date.now() + 60_000;
    let conversation: unknown;
    for (;;) {
      conversation = (await r1("GET", `/v1/agents/conversations/${id}`, { token: target.keyA })).body;
      if (field(conversation, "status") === "idle" || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    t.equal(field(conversation, "status"), "idle", "back to idle once the job finished");
    const messages = field(conversation, "messages") as { role: string; content: string; tool_call_id: string | null }[];
    const tool = messages.find((m) => m.role === "tool" && m.tool_call_id === calls[0]?.id);
    t.ok(tool, "the tool call is answered");
    const output = JSON.parse(tool!.content) as { job_id: string; status: string; result_url: string };
    t.equal(output.status, "completed");
    t.match(output.result_url, /\/v1\/files\/file_/);
    t.equal(messages.at(-1)?.role, "assistant", "the model's turn completed");
    t.match(messages.at(-1)?.content, output.result_url, "the answer quotes the video URL");
    const job = await r0("GET", `/v1/jobs/${output.job_id}`, { token: target.keyA });
    t.match(job.body, { status: "completed", result_url: output.result_url }, "the job is listed like any other");
    const media = await fetch(output.result_url);
    t.equal(media.status, 200);
    await media.arrayBuffer();
    const again = await r0("POST", `/v1/agents/conversations/${id}/messages`, { token: target.keyA, body: { content: "say thanks" } });
    t.equal(again.status, 200, "messages are accepted again");
  });
}
