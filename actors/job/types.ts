// A video job's state and public shapes (docs/api/video-jobs.md).
// The JobActor keeps everything it needs to resume after a crash in its
// state: each segment's provider task (so a restarted job polls the task it
// already submitted instead of submitting again), the re-hosted clip, whether
// the segment was billed, the narration's stored file and the final file.
import { z } from "zod";
import { uriOut } from "../../core/uri-schema.ts";
import { routingStrategySchema } from "../../providers/types.ts";
import { payerSchema } from "../../providers/usage.ts";
import { ownerSchema } from "../conversation/types.ts";
import { jobBudgetSchema } from "./job-budget.ts";

export const jobStatusSchema = z.enum(["queued", "processing", "completed", "failed"]);
export type JobStatus = z.infer<typeof jobStatusSchema>;
export const jobTypeSchema = z.enum(["text_to_video", "image_to_video"]);
export const segmentStatusSchema = z.enum(["pending", "processing", "completed", "failed", "cancelled"]);
export type SegmentStatus = z.infer<typeof segmentStatusSchema>;

export const jobErrorSchema = z.object({ code: z.string(), message: z.string() });
export type JobError = z.infer<typeof jobErrorSchema>;

export const videoTaskSchema = z.object({
  provider: z.string(),
  model: z.string(),
  task_id: z.string(),
  poll_after_ms: z.number(),
  duration_seconds: z.number(),
});

export const segmentStateSchema = z.object({
  index: z.number().int(),
  prompt: z.string(),
  status: segmentStatusSchema,
  progress: z.number(),
  /** The provider task in flight (kept once the clip is stored, for the record). */
  task: videoTaskSchema.nullable(),
  /** Provider submissions of this segment: 1 unless the provider lost a task. */
  submissions: z.number().int(),
  /**
   * When the segment became the next to submit (ms since the epoch; null
   * until then). A task the provider made for this request from then on is
   * this segment's: a submission whose answer a crash cut off is looked for
   * from here (job-steps.ts). Absent in states written before it existed.
   */
  armed_at: z.number().nullable().default(null),
  /** The re-hosted clip. */
  file_id: z.string().nullable(),
  /** image_to_video: the stored frame this segment animated (deleted with the job). Absent in older states. */
  frame_file_id: z.string().nullable().default(null),
  billed: z.boolean(),
  /** Consecutive failed polls (network, provider 5xx): the job fails past a bound. */
  poll_failures: z.number().int(),
});
export type SegmentState = z.infer<typeof segmentStateSchema>;

/**
 * How the OpenAI-compatible mount (/openai/v1/videos) presents a job: the
 * seconds asked (duration × scenes for a job made elsewhere) and the size
 * asked there (null: made elsewhere, none asked).
 */
export const openAiVideoFieldsSchema = z.object({ seconds: z.string(), size: z.string().nullable() });
export type OpenAiVideoFields = z.infer<typeof openAiVideoFieldsSchema>;

/** Who to tell when the job ends: the conversation whose generate_video started it. */
export const jobCallbackSchema = z.object({ conversation_id: z.string(), tool_call_id: z.string() });
export type JobCallback = z.infer<typeof jobCallbackSchema>;

export const jobDataSchema = z.object({
  id: z.string(),
  owner: ownerSchema,
  payer: payerSchema,
  type: jobTypeSchema,
  status: jobStatusSchema,
  /** As requested (null: routed). */
  requested_model: z.string().nullable(),
  routing_strategy: routingStrategySchema,
  /** The model and provider serving the job: planned at creation, then the last submitted task's. */
  model: z.string(),
  provider: z.string(),
  prompt: z.string(),
  duration_seconds: z.number().int(),
  narration_text: z.string().nullable(),
  /** image_to_video: the caller's image, re-hosted at creation. */
  image: z.object({ file_id: z.string(), content_type: z.string() }).nullable(),
  segments: z.array(segmentStateSchema),
  narration_file_id: z.string().nullable(),
  result_file_id: z.string().nullable(),
  result_url: z.string().nullable(),
  error: jobErrorSchema.nullable(),
  callback: jobCallbackSchema.nullable(),
  /** What the job holds of its project's hard limit (actors/job/job-budget.ts); null: nothing held (absent in older states). */
  budget: jobBudgetSchema.nullable().default(null),
  /** What /openai/v1/videos presents (openAiVideoFieldsSchema). Absent in older states. */
  openai_video: openAiVideoFieldsSchema.nullable().default(null),
  /** Steps still owed after the job reached a final status. */
  event_published: z.boolean(),
  callback_done: z.boolean(),
  /** When the next step is due (ms); a step that fires earlier (the watchdog) does nothing. */
  next_step_at: z.number(),
  /** Consecutive steps that failed on our side (file store, ffmpeg): bounded. */
  step_failures: z.number().int(),
  /**
   * Always false now: the snapshot is written after each turn commits
   * (job-actor.ts), not inside it. Kept in the shape so the release before
   * this one still reads the states this one writes.
   */
  snapshot_dirty: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type JobData = z.infer<typeof jobDataSchema>;

export const jobStateSchema = z.object({ job: jobDataSchema.nullable() });
export type JobState = z.infer<typeof jobStateSchema>;

export const publicSegmentSchema = z.object({
  index: z.number().int(),
  prompt: z.string(),
  status: segmentStatusSchema,
  progress: z.number().min(0).max(1),
  provider: z.string().nullable(),
  model: z.string().nullable(),
});

/** The public Job, with progress and segments (docs/api/video-jobs.md). */
export const jobSchema = z.object({
  id: z.string(),
  category: z.literal("video"),
  type: jobTypeSchema,
  status: jobStatusSchema,
  provider: z.string(),
  model: z.string(),
  progress: z.number().min(0).max(1),
  segments: z.array(publicSegmentSchema),
  result_url: uriOut().nullable(),
  error: jobErrorSchema.nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type Job = z.infer<typeof jobSchema>;

/** Share of the progress bar the clips take; narration and composition take the rest. */
const clipsShare = 0.9;

export function jobProgress(data: JobData): number {
  if (data.status === "completed") return 1;
  const n = data.segments.length;
  const clips = data.segments.reduce((sum, s) => sum + (s.status === "completed" ? 1 : Math.min(1, Math.max(0, s.progress))), 0) / n;
  const finishing = data.segments.every((s) => s.status === "completed") && (data.narration_text === null || data.narration_file_id !== null) ? 0.05 : 0;
  return Math.round((clips * clipsShare + finishing) * 1000) / 1000;
}

export function toPublicJob(data: JobData): Job {
  return {
    id: data.id,
    category: "video",
    type: data.type,
    status: data.status,
    provider: data.provider,
    model: data.model,
    progress: jobProgress(data),
    segments: data.segments.map((s) => ({
      index: s.index,
      prompt: s.prompt,
      status: s.status,
      progress: s.status === "completed" ? 1 : s.progress,
      provider: s.task?.provider ?? null,
      model: s.task?.model ?? null,
    })),
    result_url: data.result_url,
    error: data.error,
    created_at: data.created_at,
    updated_at: data.updated_at,
  };
}

/** Every file the job stored (caller's image, frames, clips, narration, result): what deleting the job removes. */
export function jobFileIds(data: JobData): string[] {
  const ids = [data.image?.file_id, data.narration_file_id, data.result_file_id, ...data.segments.flatMap((s) => [s.file_id, s.frame_file_id])];
  return ids.filter((id): id is string => typeof id === "string");
}

export function isFinal(status: JobStatus): boolean {
  return status === "completed" || status === "failed";
}
