// The Luma Dream Machine adapter (REFERENCE.md "Video"):
// `POST /dream-machine/v1/generations` (`duration` "5s"|"9s", an image as
// `keyframes.frame0` = {type: "image", url}), polled at
// `GET /dream-machine/v1/generations/{id}` (state queued|dreaming|completed|
// failed; `assets.video` when completed) and cancelled with DELETE on the
// same path. Luma fetches keyframe images itself, so the image goes by its
// durable Troupe URL.
import { z } from "zod";
import { ProviderCallError } from "../errors.ts";
import { parseUpstream } from "../parse-upstream.ts";
import { createUpstreamClient, sendForJson, type UpstreamClient } from "../upstream-request.ts";
import { deleteTask, readTask } from "../video-http.ts";
import type { VideoAdapter, VideoSegmentRequest, VideoTask, VideoTaskStatus } from "../video.ts";
import type { ProviderAdapter } from "../types.ts";

const generationSchema = z
  .object({
    id: z.string().min(1),
    state: z.enum(["queued", "dreaming", "completed", "failed"]),
    failure_reason: z.string().nullable().optional(),
    assets: z.object({ video: z.string().nullable().optional() }).passthrough().nullable().optional(),
  })
  .passthrough();

export interface LumaOptions {
  baseUrl: string;
  apiKey: string;
  pollIntervalMs: number;
  client?: UpstreamClient;
}

export function createLumaVideo(opts: LumaOptions, client: UpstreamClient): VideoAdapter {
  const provider = "luma";
  const base = `${opts.baseUrl.replace(/\/$/, "")}/dream-machine/v1/generations`;
  const headers = { authorization: `Bearer ${opts.apiKey}`, accept: "application/json" };
  const generationUrl = (id: string) => `${base}/${encodeURIComponent(id)}`;

  return {
    async submit(req: VideoSegmentRequest, signal: AbortSignal): Promise<VideoTask> {
      const body = {
        prompt: req.prompt,
        model: req.model,
        duration: `${req.duration_seconds}s`,
        resolution: "720p",
        aspect_ratio: "16:9",
        ...(req.image ? { keyframes: { frame0: { type: "image", url: req.image.url } } } : {}),
      };
      const answer = parseUpstream(provider, generationSchema, await sendForJson(provider, client, base, { headers, body, signal }));
      return { provider, model: req.model, task_id: answer.id, poll_after_ms: opts.pollIntervalMs, duration_seconds: req.duration_seconds };
    },

    async poll(task: VideoTask, signal: AbortSignal): Promise<VideoTaskStatus> {
      const raw = await readTask(provider, client, generationUrl(task.task_id), headers, signal);
      if (raw === undefined) return { state: "lost" };
      const g = parseUpstream(provider, generationSchema, raw);
      switch (g.state) {
        case "queued":
          return { state: "pending", progress: null, poll_after_ms: opts.pollIntervalMs };
        case "dreaming":
          return { state: "running", progress: null, poll_after_ms: opts.pollIntervalMs };
        case "completed": {
          const url = g.assets?.video;
          if (!url) throw new ProviderCallError(provider, "protocol", `${provider} generation ${g.id} completed without assets.video`);
          return { state: "succeeded", clip: { kind: "url", url } };
        }
        case "failed":
          return { state: "failed", code: "provider_failed", message: g.failure_reason ?? `${provider} generation ${g.id} failed` };
      }
    },

    cancel: (task: VideoTask, signal: AbortSignal) => deleteTask(provider, client, generationUrl(task.task_id), headers, signal),
  };
}

export function createLumaAdapter(opts: LumaOptions): ProviderAdapter {
  const owned = opts.client === undefined;
  const client = opts.client ?? createUpstreamClient();
  return {
    provider: "luma",
    video: createLumaVideo(opts, client),
    close: async () => {
      if (owned) await client.close();
    },
  };
}
