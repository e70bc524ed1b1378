// One step of a video job at a time (the JobActor calls `advance` from a
// durable reminder): submit the next segment, poll the one in flight, store a
// finished clip and bill it, synthesize the narration, compose. Each step
// does one piece of work and records it in the job's state before the next,
// so a process killed between steps resumes where it stopped: a submitted
// task is polled again, never submitted again (unless the provider lost it),
// and a billed segment is never billed again. The one gap, a kill after the
// provider accepted a submission and before the turn committed its task, is
// closed where the provider can list its tasks: a submission that may have
// happened already first looks for its task there (`mayHaveSubmitted`).
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isTroupeError, TroupeError } from "../../core/errors.ts";
import { nameUuid } from "../../core/ids.ts";
import type { Logger } from "../../core/log.ts";
import type { FileStore } from "../../media/file-store.ts";
import { rehostAll, type MediaDeps } from "../../media/rehost.ts";
import type { Catalogue } from "../../providers/catalogue.ts";
import type { AudioBytes } from "../../providers/media-types.ts";
import type { RoutingStrategy } from "../../providers/types.ts";
import { usageRecord, type UsageRecord } from "../../providers/usage.ts";
import type { VideoImage, VideoSegmentRequest, VideoTask, VideoTaskStatus } from "../../providers/video.ts";
import type { Reservation } from "../../tenancy/ledger.ts";
import type { Limiter } from "./compose-limit.ts";
import { closePart, partsFor } from "./job-budget.ts";
import type { JobData, SegmentState } from "./types.ts";

/** The router's video methods (providers/router.ts): routing and fallback at submit, poll and cancel on the task's provider. */
export interface VideoRouting {
  submitVideo(request: VideoSegmentRequest & { routing_strategy: RoutingStrategy }, ctx: { signal?: AbortSignal }): Promise<VideoTask>;
  findVideo(request: VideoSegmentRequest & { routing_strategy: RoutingStrategy }, sinceMs: number, ctx: { signal?: AbortSignal }): Promise<VideoTask | undefined>;
  pollVideo(task: VideoTask, ctx: { signal?: AbortSignal }): Promise<VideoTaskStatus>;
  cancelVideo(task: VideoTask, ctx: { signal?: AbortSignal }): Promise<void>;
}

/** ffmpeg composition (media/video-compose.ts). */
export interface VideoComposer {
  concatClips(inputPaths: string[], outPath: string): Promise<void>;
  muxVoiceover(videoPath: string, audioPath: string, outPath: string): Promise<void>;
  extractLastFrame(videoPath: string, outPngPath: string): Promise<void>;
}

export interface NarrationOutcome {
  audio: AudioBytes;
  model: string;
  provider: string;
  /** Billed units: characters. */
  characters: number;
}

export interface StepDeps {
  video: VideoRouting;
  /** Speech for the voiceover, with the configured model and voice. */
  narrate(text: string, signal: AbortSignal): Promise<NarrationOutcome>;
  compose: VideoComposer;
  /** Bounds the compositions running at once (actors/job/compose-limit.ts); absent: unbounded. */
  composeSlots?: Limiter;
  media: MediaDeps;
  catalogue: Catalogue;
  /** Awaited, durable and idempotent on request_id (the ledger); then releases `settles`, the parts of the job's hold (project's, key's) the record replaces. */
  bill(record: UsageRecord, settles?: readonly Reservation[]): Promise<void>;
  log: Logger;
  now(): number;
  /** First wait after a failed poll; doubles per failure up to 30 s (default 500 ms; tests shorten it). */
  pollRetryBaseMs?: number;
}

/** What a step asks for next: run again after `afterMs`. */
export interface StepOutcome {
  afterMs: number;
}

/**
 * Polls that fail in a row (network, provider 5xx, after the router's own
 * retries) before the job fails: a task that cannot be polled would
 * otherwise keep the job `processing` forever. With the default waits
 * (1, 2, 4, 8, 16, 30, 30 s between them) the job fails about 91 s after the
 * first failed poll; one successful poll resets the count.
 */
export const MAX_POLL_FAILURES = 8;
const pollRetryMs = (failures: number, baseMs: number) => Math.min(30_000, baseMs * 2 ** failures);
/** A provider call or a composition never holds a turn longer than this. */
const stepTimeoutMs = 120_000;

export const segmentRequestId = (jobId: string, index: number) => `job:${jobId}:segment:${index}`;
export const narrationRequestId = (jobId: string) => `job:${jobId}:narration`;

export function failJob(job: JobData, code: string, message: string): void {
  job.status = "failed";
  job.error = { code, message };
  for (const s of job.segments) if (s.status === "pending" || s.status === "processing") s.status = s.status === "processing" ? "failed" : "cancelled";
}

/** The next segment to submit, when the next step is a submission. */
export function segmentToSubmit(job: JobData): SegmentState | undefined {
  const segment = job.segments.find((s) => s.status !== "completed");
  return segment && (segment.task === null || segment.status === "pending") ? segment : undefined;
}

/**
 * Does the next piece of work on an unfinished job. Throws only for failures
 * on our side (retried by the caller). `mayHaveSubmitted`: the next
 * segment's submission may have reached the provider in a turn that never
 * committed (the caller cannot vouch that it did not).
 */
export async function advance(job: JobData, deps: StepDeps, mayHaveSubmitted = true): Promise<StepOutcome> {
  // A job resumed by a server started without ffmpeg can never be composed: it fails now, not after every poll and retry ran out.
  const gap = deps.media.capabilities.missing("video");
  if (gap) {
    failJob(job, "capability_unavailable", `video generation is unavailable on this server: ${gap.reason}`);
    return { afterMs: 0 };
  }
  const signal = AbortSignal.timeout(stepTimeoutMs);
  const segment = job.segments.find((s) => s.status !== "completed");
  if (segment) {
    if (segmentToSubmit(job)) return submit(job, segment, deps, signal, mayHaveSubmitted);
    return poll(job, segment, segment.task!, deps, signal);
  }
  if (job.narration_text !== null && job.narration_file_id === null) return narrate(job, job.narration_text, deps, signal);
  return deps.composeSlots ? deps.composeSlots(() => compose(job, deps)) : compose(job, deps);
}

async function submit(job: JobData, segment: SegmentState, deps: StepDeps, signal: AbortSignal, mayHaveSubmitted: boolean): Promise<StepOutcome> {
  const image = await imageFor(job, segment, deps);
  const request = {
    model: job.requested_model ?? job.model,
    prompt: segment.prompt,
    duration_seconds: job.duration_seconds,
    ...(image ? { image } : {}),
    routing_strategy: job.routing_strategy,
  };
  let task: VideoTask;
  try {
    const found = mayHaveSubmitted ? await findSubmitted(job, segment, request, deps, signal) : undefined;
    task = found ?? (await deps.video.submitVideo(request, { signal }));
  } catch (error) {
    // The router already retried and fell back: the job cannot go on.
    if (!isTroupeError(error)) throw error;
    failJob(job, error.code, error.message);
    return { afterMs: 0 };
  }
  segment.task = task;
  segment.status = "processing";
  segment.progress = 0;
  segment.submissions += 1;
  segment.poll_failures = 0;
  job.status = "processing";
  job.model = task.model;
  job.provider = task.provider;
  return { afterMs: task.poll_after_ms };
}

/** The task an earlier, uncommitted run of this submission made, if the provider can tell; a failed lookup is logged and treated as none. */
async function findSubmitted(
  job: JobData,
  segment: SegmentState,
  request: Parameters<VideoRouting["findVideo"]>[0],
  deps: StepDeps,
  signal: AbortSignal,
): Promise<VideoTask | undefined> {
  const sinceMs = segment.armed_at ?? Date.parse(job.created_at);
  try {
    const found = await deps.video.findVideo(request, sinceMs, { signal });
    if (found) deps.log.warn("video submission recovered after a crash: polling the task it made", { job_id: job.id, segment: segment.index, provider: found.provider, task_id: found.task_id });
    return found;
  } catch (error) {
    // Better a second submission than a job stuck on a provider that cannot list its tasks right now.
    deps.log.warn("could not look for an earlier submission; submitting", { job_id: job.id, segment: segment.index, error });
    return undefined;
  }
}

/** image_to_video: the first clip animates the caller's image, each later one the previous clip's last frame (its stored id kept on the segment). */
async function imageFor(job: JobData, segment: SegmentState, deps: StepDeps): Promise<VideoImage | undefined> {
  if (job.type !== "image_to_video") return undefined;
  if (segment.index === 0 && job.image) {
    const bytes = await readStored(deps.media.files, job.image.file_id);
    return { url: deps.media.fileUrl(job.image.file_id), content_type: job.image.content_type, bytes };
  }
  const previous = job.segments[segment.index - 1];
  if (!previous?.file_id) return undefined;
  const dir = await mkdtemp(join(tmpdir(), "troupe-frame-"));
  try {
    const clip = join(dir, "clip.mp4");
    await writeFile(clip, await readStored(deps.media.files, previous.file_id));
    const frame = join(dir, "frame.png");
    await deps.compose.extractLastFrame(clip, frame);
    const bytes = await readFile(frame);
    const stored = await deps.media.files.put({ body: bytes, contentType: "image/png", organizationId: job.owner.organization_id, environmentId: job.owner.environment_id, scope: "video" });
    segment.frame_file_id = stored.id;
    return { url: deps.media.fileUrl(stored.id), content_type: "image/png", bytes };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function poll(job: JobData, segment: SegmentState, task: VideoTask, deps: StepDeps, signal: AbortSignal): Promise<StepOutcome> {
  let status: VideoTaskStatus;
  try {
    status = await deps.video.pollVideo(task, { signal });
  } catch (error) {
    segment.poll_failures += 1;
    deps.log.warn("video poll failed", { job_id: job.id, segment: segment.index, failures: segment.poll_failures, error });
    if (segment.poll_failures >= MAX_POLL_FAILURES) {
      const last = error instanceof Error ? error.message : String(error);
      failJob(
        job,
        isTroupeError(error) ? error.code : "provider_error",
        `segment ${segment.index}: ${task.provider} could not be polled ${MAX_POLL_FAILURES} times in a row (last error: ${last})`,
      );
      return { afterMs: 0 };
    }
    return { afterMs: pollRetryMs(segment.poll_failures, deps.pollRetryBaseMs ?? 500) };
  }
  segment.poll_failures = 0;
  switch (status.state) {
    case "pending":
    case "running":
      if (status.progress !== null) segment.progress = Math.min(0.99, Math.max(segment.progress, status.progress));
      return { afterMs: status.poll_after_ms };
    case "failed":
      segment.status = "failed";
      failJob(job, "provider_error", `segment ${segment.index} failed at ${task.provider}: ${status.message} (${status.code})`);
      return { afterMs: 0 };
    case "lost":
      // The provider forgot the task: the one case where a segment is submitted again.
      deps.log.warn("video task lost by the provider; resubmitting", { job_id: job.id, segment: segment.index, provider: task.provider });
      segment.task = null;
      segment.status = "pending";
      segment.progress = 0;
      segment.armed_at = null;
      return { afterMs: 0 };
    case "succeeded": {
      const payload =
        status.clip.kind === "url"
          ? ({ kind: "url", url: status.clip.url } as const)
          : ({ kind: "bytes", bytes: await readFile(status.clip.path), contentType: "video/mp4" } as const);
      const [file] = await rehostAll(deps.media, [payload], {
        organizationId: job.owner.organization_id,
        environmentId: job.owner.environment_id,
        scope: "video",
        provider: task.provider,
        accept: ["video/", "application/octet-stream"],
        check: (bytes) => (bytes.length < 64 ? "the clip is empty" : undefined),
        contentTypeOf: () => "video/mp4",
      });
      await deps.bill(
        usageRecord(
          deps.catalogue,
          { ...job.payer, request_id: segmentRequestId(job.id, segment.index) },
          "video",
          { model: task.model, provider: task.provider, input_tokens: 0, units: task.duration_seconds },
          deps.now(),
        ),
        partsFor(job.budget, segment.index),
      );
      closePart(job.budget, segment.index);
      segment.file_id = file!.id;
      segment.billed = true;
      segment.status = "completed";
      segment.progress = 1;
      return { afterMs: 0 };
    }
  }
}

async function narrate(job: JobData, text: string, deps: StepDeps, signal: AbortSignal): Promise<StepOutcome> {
  let speech: NarrationOutcome;
  try {
    speech = await deps.narrate(text, signal);
  } catch (error) {
    if (!isTroupeError(error)) throw error;
    failJob(job, error.code, `narration: ${error.message}`);
    return { afterMs: 0 };
  }
  const stored = await deps.media.files.put({ body: speech.audio.bytes, contentType: speech.audio.contentType, organizationId: job.owner.organization_id, environmentId: job.owner.environment_id, scope: "video" });
  await deps.bill(
    usageRecord(
      deps.catalogue,
      { ...job.payer, request_id: narrationRequestId(job.id) },
      "audio",
      { model: speech.model, provider: speech.provider, input_tokens: 0, units: speech.characters },
      deps.now(),
    ),
    partsFor(job.budget, job.segments.length),
  );
  closePart(job.budget, job.segments.length);
  job.narration_file_id = stored.id;
  return { afterMs: 0 };
}

/** Joins the clips in order, muxes the narration, stores the result: the job is complete. */
async function compose(job: JobData, deps: StepDeps): Promise<StepOutcome> {
  const dir = await mkdtemp(join(tmpdir(), "troupe-compose-"));
  try {
    const clips: string[] = [];
    for (const segment of job.segments) {
      const path = join(dir, `clip-${segment.index}.mp4`);
      await writeFile(path, await readStored(deps.media.files, segment.file_id!));
      clips.push(path);
    }
    const joined = join(dir, "joined.mp4");
    await deps.compose.concatClips(clips, joined);
    let final = joined;
    if (job.narration_file_id) {
      const audio = join(dir, "narration.audio");
      await writeFile(audio, await readStored(deps.media.files, job.narration_file_id));
      final = join(dir, "final.mp4");
      await deps.compose.muxVoiceover(joined, audio, final);
    }
    const stored = await deps.media.files.put({ body: await readFile(final), contentType: "video/mp4", organizationId: job.owner.organization_id, environmentId: job.owner.environment_id, scope: "video" });
    job.result_file_id = stored.id;
    job.result_url = deps.media.fileUrl(stored.id);
    job.status = "completed";
    job.error = null;
    return { afterMs: 0 };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function readStored(files: FileStore, id: string): Promise<Buffer> {
  const got = await files.get(id);
  if (!got) throw new TroupeError("internal_error", `stored file ${id} is missing`);
  const chunks: Buffer[] = [];
  for await (const chunk of got.body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** The same id for the same job and event type, so a re-publish after a crash is the same event (UUID-shaped). */
export function jobEventId(jobId: string, type: string): string {
  return nameUuid(`${jobId}:${type}`);
}
