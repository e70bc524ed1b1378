// The video generation contract (docs/api/video-jobs.md, "Video providers,
// catalogue, composition"): what a video adapter does for ONE segment (one provider clip of a
// few seconds, silent), and what the JobActor drives through the router.
// Provider tasks are asynchronous: submit answers a task id at once, poll
// reports progress until the clip is ready, and the clip is then downloaded
// and re-hosted by the caller. Everything here is JSON-serialisable except
// the image bytes, so a JobActor can keep submitted tasks in its state and
// poll them again after a restart.

export interface VideoImage {
  /** A durable URL the provider can fetch (Troupe's own /v1/files URL). */
  url: string;
  content_type: string;
  /** The same image, for providers that take it inline (a data URI). */
  bytes: Uint8Array;
}

export interface VideoSegmentRequest {
  /** A catalogue model id of category `video`. */
  model: string;
  /** The visual description of this segment. */
  prompt: string;
  /** Requested seconds; the adapter picks the nearest duration its model offers. */
  duration_seconds: number;
  /** image_to_video: the clip animates this image (the job's image_url, or the previous clip's last frame). */
  image?: VideoImage | undefined;
}

/** A task the provider accepted; stored by the JobActor, so plain JSON. */
export interface VideoTask {
  provider: string;
  model: string;
  task_id: string;
  /** When to poll first (the provider's hint, or the adapter's default). */
  poll_after_ms: number;
  /** Seconds the clip will last (what the provider was asked for). */
  duration_seconds: number;
}

/** Where a finished clip can be read from. */
export type VideoClipSource =
  /** A provider-hosted URL (often expiring): download it through the outbound fetcher. */
  | { kind: "url"; url: string }
  /** A local file (the simulated provider renders with ffmpeg). */
  | { kind: "file"; path: string };

export type VideoTaskStatus =
  | { state: "pending" | "running"; progress: number | null; poll_after_ms: number }
  | { state: "succeeded"; clip: VideoClipSource }
  | { state: "failed"; code: string; message: string }
  /** The provider no longer knows the task (expired, or lost on its side): resubmitting is allowed. */
  | { state: "lost" };

/** One provider's video adapter. The router wraps submit with routing, fallback and breakers. */
export interface VideoAdapter {
  submit(request: VideoSegmentRequest, signal: AbortSignal): Promise<VideoTask>;
  poll(task: VideoTask, signal: AbortSignal): Promise<VideoTaskStatus>;
  /** Cancels a task in flight where the provider allows it; a no-op otherwise. */
  cancel(task: VideoTask, signal: AbortSignal): Promise<void>;
  /**
   * Finds the task a submission of exactly this request made at or after
   * `sinceMs` (ms since the epoch), for a submission whose answer a crash
   * cut off; undefined when there is none. Only providers that can list
   * their tasks implement it (Luma); without it such a segment is submitted
   * again.
   */
  find?(request: VideoSegmentRequest, sinceMs: number, signal: AbortSignal): Promise<VideoTask | undefined>;
}
