// A video job's state as the JobActor and its steps hold it, for in-process
// tests: a queued text_to_video job of one owner and key with every field
// set, the test overriding only what it is about.
import type { JobData, SegmentState } from "../../actors/job/types.ts";

export function segmentState(index: number, over: Partial<SegmentState> = {}): SegmentState {
  return { index, prompt: `scene ${index}`, status: "pending", progress: 0, task: null, submissions: 0, armed_at: null, file_id: null, frame_file_id: null, billed: false, poll_failures: 0, ...over };
}

export function jobData(over: Partial<JobData> = {}): JobData {
  const createdAt = "2025-12-03T19:26:40.000Z";
  return {
    id: "job_1",
    owner: { organization_id: "org", project_id: "proj", environment_id: "env" },
    payer: { organization_id: "org", project_id: "proj", environment_id: "env", api_key_id: "key", live: true },
    type: "text_to_video",
    status: "queued",
    requested_model: "asked-model",
    routing_strategy: "auto",
    model: "planned-model",
    provider: "planned-provider",
    prompt: "a film",
    duration_seconds: 4,
    narration_text: null,
    image: null,
    segments: [segmentState(0)],
    narration_file_id: null,
    result_file_id: null,
    result_url: null,
    error: null,
    callback: null,
    budget: null,
    openai_video: null,
    event_published: false,
    callback_done: false,
    next_step_at: 0,
    step_failures: 0,
    snapshot_dirty: false,
    created_at: createdAt,
    updated_at: createdAt,
    ...over,
  };
}
