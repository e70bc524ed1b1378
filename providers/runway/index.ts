// The Runway adapter (wire format: docs/api/video-jobs.md): a segment with an image is
// `POST /v1/image_to_video` (`promptImage`), one without is
// `POST /v1/text_to_video` (for the models that have it); both answer a task
// id polled at `GET /v1/tasks/{id}` (PENDING|THROTTLED|RUNNING|SUCCEEDED|
// FAILED|CANCELLED) and cancelled with `DELETE /v1/tasks/{id}`. Every call
// carries `X-Runway-Version`. SUCCEEDED gives `output[0]`, a URL that
// expires in 24–48 h, which the JobActor downloads and re-hosts at once.
import { z } from "zod";
import { ProviderCallError } from "../errors.ts";
import { parseUpstream } from "../parse-upstream.ts";
import { createUpstreamClient, sendForJson, type UpstreamClient } from "../upstream-request.ts";
import { dataUri, deleteTask, readTask, videoPollIntervalEnv } from "../video-http.ts";
import type { VideoAdapter, VideoSegmentRequest, VideoTask, VideoTaskStatus } from "../video.ts";
import type { ProviderAdapter } from "../types.ts";
import { optionalString } from "../../core/env.ts";
import { defineProvider } from "../descriptor.ts";

/** The API version this adapter speaks (Runway requires the header on every call). */
export const runwayApiVersion = "2024-11-06";
/** 16:9 at 720p, the ratio gen4_turbo and the text models share. */
const ratio = "1280:720";
/** Runway's limit on promptText. */
const maxPromptChars = 1000;
/** Runway takes data URIs up to about 5 MB; larger images go by URL (base64 grows bytes by a third). */
const maxInlineImageBytes = 3_500_000;

const submitSchema = z.object({ id: z.string().min(1) }).passthrough();
const taskSchema = z
  .object({
    id: z.string(),
    status: z.enum(["PENDING", "THROTTLED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"]),
    progress: z.number().min(0).max(1).nullable().optional(),
    output: z.array(z.string()).nullable().optional(),
    failure: z.string().nullable().optional(),
    failureCode: z.string().nullable().optional(),
  })
  .passthrough();

export interface RunwayOptions {
  baseUrl: string;
  apiKey: string;
  /** When to poll after a submit or an unfinished poll. */
  pollIntervalMs: number;
  client?: UpstreamClient;
}

export function createRunwayVideo(opts: RunwayOptions, client: UpstreamClient): VideoAdapter {
  const provider = "runway";
  const base = opts.baseUrl.replace(/\/$/, "");
  const headers = { authorization: `Bearer ${opts.apiKey}`, "x-runway-version": runwayApiVersion, accept: "application/json" };
  const taskUrl = (id: string) => `${base}/v1/tasks/${encodeURIComponent(id)}`;

  return {
    async submit(req: VideoSegmentRequest, signal: AbortSignal): Promise<VideoTask> {
      const common = { model: req.model, promptText: req.prompt.slice(0, maxPromptChars), ratio, duration: req.duration_seconds };
      const [path, body] = req.image
        ? ["/v1/image_to_video", { ...common, promptImage: req.image.bytes.length <= maxInlineImageBytes ? dataUri(req.image) : req.image.url }]
        : ["/v1/text_to_video", common];
      const answer = parseUpstream(provider, submitSchema, await sendForJson(provider, client, base + path, { headers, body, signal }));
      return { provider, model: req.model, task_id: answer.id, poll_after_ms: opts.pollIntervalMs, duration_seconds: req.duration_seconds };
    },

    async poll(task: VideoTask, signal: AbortSignal): Promise<VideoTaskStatus> {
      const raw = await readTask(provider, client, taskUrl(task.task_id), headers, signal);
      if (raw === undefined) return { state: "lost" };
      const t = parseUpstream(provider, taskSchema, raw);
      switch (t.status) {
        case "PENDING":
        case "THROTTLED":
          return { state: "pending", progress: null, poll_after_ms: opts.pollIntervalMs };
        case "RUNNING":
          return { state: "running", progress: t.progress ?? null, poll_after_ms: opts.pollIntervalMs };
        case "SUCCEEDED": {
          const url = t.output?.[0];
          if (!url) throw new ProviderCallError(provider, "protocol", `${provider} task ${t.id} SUCCEEDED without an output URL`);
          return { state: "succeeded", clip: { kind: "url", url } };
        }
        case "FAILED":
          return { state: "failed", code: t.failureCode ?? "provider_failed", message: t.failure ?? `${provider} task ${t.id} failed` };
        case "CANCELLED":
          return { state: "failed", code: "cancelled", message: `${provider} task ${t.id} was cancelled` };
      }
    },

    cancel: (task: VideoTask, signal: AbortSignal) => deleteTask(provider, client, taskUrl(task.task_id), headers, signal),
  };
}

export function createRunwayAdapter(opts: RunwayOptions): ProviderAdapter {
  const owned = opts.client === undefined;
  const client = opts.client ?? createUpstreamClient();
  return {
    provider: "runway",
    video: createRunwayVideo(opts, client),
    close: async () => {
      if (owned) await client.close();
    },
  };
}

export const descriptor = defineProvider({
  name: "runway",
  title: "Runway",
  key: "runway",
  env: { RUNWAY_API_KEY: optionalString, RUNWAY_BASE_URL: z.url().default("https://api.dev.runwayml.com"), ...videoPollIntervalEnv },
  secretEnv: ["RUNWAY_API_KEY"],
  settings: (e) => ({ apiKey: e.RUNWAY_API_KEY, baseUrl: e.RUNWAY_BASE_URL, pollIntervalMs: e.VIDEO_POLL_INTERVAL_MS }),
  create: (s, deps) =>
    s.apiKey ? [createRunwayAdapter({ baseUrl: s.baseUrl, apiKey: s.apiKey, pollIntervalMs: s.pollIntervalMs, ...(deps.client ? { client: deps.client } : {}) })] : [],
})
