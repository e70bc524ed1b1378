// The Luma Dream Machine adapter (wire format: docs/api/video-jobs.md):
// `POST /dream-machine/v1/generations` (`duration` "5s"|"9s", an image as
// `keyframes.frame0` = {type: "image", url}), polled at
// `GET /dream-machine/v1/generations/{id}` (state queued|dreaming|completed|
// failed; `assets.video` when completed) and cancelled with DELETE on the
// same path. Luma fetches keyframe images itself, so the image goes by its
// durable Troupe URL. `find` reads the account's generations, newest first
// (`GET /dream-machine/v1/generations?limit&offset`), each with the
// `request` it was made from, to recover a submission whose answer a crash
// cut off.
import { z } from "zod";
import { ProviderCallError } from "../errors.ts";
import { parseUpstream } from "../parse-upstream.ts";
import { createUpstreamClient, sendForJson, type UpstreamClient } from "../upstream-request.ts";
import { deleteTask, readTask, videoPollIntervalEnv } from "../video-http.ts";
import type { VideoAdapter, VideoSegmentRequest, VideoTask, VideoTaskStatus } from "../video.ts";
import type { ProviderAdapter } from "../types.ts";
import { optionalString } from "../../core/env.ts";
import { defineProvider } from "../descriptor.ts";

const generationSchema = z
  .object({
    id: z.string().min(1),
    state: z.enum(["queued", "dreaming", "completed", "failed"]),
    failure_reason: z.string().nullable().optional(),
    assets: z.object({ video: z.string().nullable().optional() }).passthrough().nullable().optional(),
  })
  .passthrough();

const listedSchema = z
  .object({
    generations: z.array(
      z
        .object({
          id: z.string().min(1),
          created_at: z.string(),
          request: z.record(z.string(), z.unknown()).nullable().optional(),
        })
        .passthrough(),
    ),
    has_more: z.boolean().optional(),
  })
  .passthrough();

/** Generations read per page, and pages read at most, when looking for a lost answer (the newest 500). */
const listPageSize = 100;
const listPagesMax = 5;
/** Luma's clock against ours: a generation stamped this much before `sinceMs` still counts. */
const clockSlackMs = 30_000;

/** The body of a submission; `find` compares listed requests with it. */
function generationBody(req: VideoSegmentRequest) {
  return {
    prompt: req.prompt,
    model: req.model,
    duration: `${req.duration_seconds}s`,
    resolution: "720p",
    aspect_ratio: "16:9",
    ...(req.image ? { keyframes: { frame0: { type: "image", url: req.image.url } } } : {}),
  };
}

/** Whether a listed generation's request is this body (the fields Troupe sets; Luma may echo others). */
function sameRequest(listed: Record<string, unknown>, body: ReturnType<typeof generationBody>): boolean {
  const frame0 = (listed["keyframes"] as { frame0?: { url?: unknown } } | null | undefined)?.frame0;
  return (
    listed["prompt"] === body.prompt &&
    listed["model"] === body.model &&
    listed["duration"] === body.duration &&
    (frame0?.url ?? null) === (body.keyframes?.frame0.url ?? null)
  );
}

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
      const body = generationBody(req);
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

    async find(req: VideoSegmentRequest, sinceMs: number, signal: AbortSignal): Promise<VideoTask | undefined> {
      const body = generationBody(req);
      const from = sinceMs - clockSlackMs;
      // The earliest match from `from` on: the submission the crash cut off (a later one would be another's).
      let earliest: string | undefined;
      for (let page = 0; page < listPagesMax; page++) {
        const url = `${base}?limit=${listPageSize}&offset=${page * listPageSize}`;
        const listed = parseUpstream(provider, listedSchema, await sendForJson(provider, client, url, { method: "GET", headers, signal }));
        let older = false;
        for (const g of listed.generations) {
          const at = Date.parse(g.created_at);
          if (!(at >= from)) {
            older = true;
            continue;
          }
          if (g.request && sameRequest(g.request, body)) earliest = g.id;
        }
        if (older || listed.has_more === false || listed.generations.length < listPageSize) break;
      }
      return earliest === undefined ? undefined : { provider, model: req.model, task_id: earliest, poll_after_ms: opts.pollIntervalMs, duration_seconds: req.duration_seconds };
    },
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

export const descriptor = defineProvider({
  name: "luma",
  title: "Luma",
  key: "luma",
  env: { LUMA_API_KEY: optionalString, LUMA_BASE_URL: z.url().default("https://api.lumalabs.ai"), ...videoPollIntervalEnv },
  secretEnv: ["LUMA_API_KEY"],
  settings: (e) => ({ apiKey: e.LUMA_API_KEY, baseUrl: e.LUMA_BASE_URL, pollIntervalMs: e.VIDEO_POLL_INTERVAL_MS }),
  create: (s, deps) =>
    s.apiKey ? [createLumaAdapter({ baseUrl: s.baseUrl, apiKey: s.apiKey, pollIntervalMs: s.pollIntervalMs, ...(deps.client ? { client: deps.client } : {}) })] : [],
})
