// OpenAI's Videos API on /openai/v1/videos (docs/guides/openai-compatible.md),
// backed by Troupe's own video jobs, not by OpenAI's video provider: create
// starts a JobActor through the same path as POST /v1/video/generate
// (startVideoJob: routing; videoJobBilling: budget), and the other routes read and
// delete jobs as /v1/jobs does. A video's id is its job's id, so the same
// video is also GET /v1/jobs/{id}. The SDKs send create as multipart (the
// reference image is an upload); JSON is taken too.
import { z } from "zod";
import { invalidRequest, TroupeError } from "../../../core/errors.ts";
import { encodeCursor } from "../../../core/data-store.ts";
import type { ApiKeyRecord } from "../../../tenancy/types.ts";
import type { Job, OpenAiVideoFields } from "../../../actors/job/types.ts";
import type { JobEntry } from "../../../actors/job/directory.ts";
import { DEFAULT_SEGMENT_SECONDS, MAX_PROMPT_CHARS, MAX_SEGMENT_SECONDS, MIN_SEGMENT_SECONDS } from "../../../actors/job/video-request.ts";
import { routingStrategySchema } from "../../../providers/types.ts";
import { videoNeed } from "../../../providers/video-routing.ts";
import { binary, defineRoute, json } from "../../route.ts";
import { deleteJob, imageTypes, jobIdParam, startVideoJob, videoJobBilling, type JobRouteDeps } from "../../routes/jobs.ts";
import { isUpload, type UploadedFile } from "../../validation.ts";
import { sniffImage } from "../../../media/sniff.ts";
import { openAiMount } from "./mount.ts";
import { modelNameSchema, resolveModel } from "./model-name.ts";

/** OpenAI's default size; Troupe's providers make their own resolution, so it is recorded and answered, not applied. */
const defaultSize = "720x1280";
const defaultSeconds = 4;
const maxImageBytes = 10 * 1024 * 1024;

const imageUpload = z
  .custom<UploadedFile>((v) => isUpload(v) && v.bytes.length > 0 && v.bytes.length <= maxImageBytes, { message: "an image file (PNG, JPEG or WebP) of 1 byte to 10 MB" })
  .meta({ type: "string", format: "binary", description: "the image the video starts from (PNG, JPEG or WebP, up to 10 MB)" });

const createBodySchema = z
  .object({
    prompt: z.string().min(1).max(MAX_PROMPT_CHARS),
    model: z.string().min(1).default("troupe/auto"),
    // The string form states its range too, so the document says what the server takes.
    seconds: z
      .union([z.string().regex(/^([1-9]|1[0-9]|20)$/, "a whole number of seconds from 1 to 20, e.g. \"4\""), z.number().int().min(MIN_SEGMENT_SECONDS).max(MAX_SEGMENT_SECONDS)])
      .transform(Number)
      .pipe(z.number().int().min(MIN_SEGMENT_SECONDS).max(MAX_SEGMENT_SECONDS))
      .default(defaultSeconds)
      .describe(`seconds of video, ${MIN_SEGMENT_SECONDS} to ${MAX_SEGMENT_SECONDS} (default 4); the model makes its nearest clip length`),
    size: z.string().regex(/^[1-9]\d{1,4}x[1-9]\d{1,4}$/, "<width>x<height>, e.g. 1280x720").default(defaultSize).describe("recorded and answered; the provider makes its own resolution"),
    // An uploaded file only (what the SDKs send): a URL starts an image job on POST /v1/video/generate.
    input_reference: imageUpload.optional(),
    routing_strategy: routingStrategySchema.optional(),
  })
  .strict();

const videoSchema = z.object({
  id: z.string().describe("the job id: GET /v1/jobs/{id} reads the same job"),
  object: z.literal("video"),
  status: z.enum(["queued", "in_progress", "completed", "failed"]),
  progress: z.number().int().min(0).max(100),
  created_at: z.number().int(),
  completed_at: z.number().int().nullable(),
  expires_at: z.null().describe("results do not expire"),
  model: z.string(),
  prompt: z.string().nullable(),
  seconds: z.string(),
  size: z.string(),
  remixed_from_video_id: z.null(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
});
type Video = z.infer<typeof videoSchema>;

const listQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    after: z.string().optional().describe("a video id: the page starts after it"),
    order: z.enum(["desc"]).default("desc").describe("newest first (the only order kept)"),
  })
  .strict();

const contentQuery = z.object({ variant: z.enum(["video"]).default("video").describe("the MP4 (no thumbnails or spritesheets are made)") }).strict();

const seconds = (iso: string) => Math.floor(Date.parse(iso) / 1000);

/** A job as OpenAI's video object (a job stored before its seconds were kept shows 5 s a scene, /v1's default). */
export function toVideo(job: Job, fields: OpenAiVideoFields | null): Video {
  return {
    id: job.id,
    object: "video",
    status: job.status === "processing" ? "in_progress" : job.status,
    progress: Math.round(job.progress * 100),
    created_at: seconds(job.created_at),
    completed_at: job.status === "completed" ? seconds(job.updated_at) : null,
    expires_at: null,
    model: job.model,
    prompt: job.segments.length === 1 ? (job.segments[0]?.prompt ?? null) : job.segments.map((s) => s.prompt).join("\n"),
    seconds: fields?.seconds ?? String(DEFAULT_SEGMENT_SECONDS * job.segments.length),
    size: fields?.size ?? defaultSize,
    remixed_from_video_id: null,
    error: job.error,
  };
}

const notFound = (id: string) => new TroupeError("not_found", `No video found with id '${id}'`, { details: { openai_code: "video_not_found", param: "video_id" } });

/** The entry of a video the key may see, else 404 (another organization's or environment's is unknown). */
async function entryFor(deps: JobRouteDeps, key: ApiKeyRecord, rawId: string): Promise<JobEntry> {
  let id: string;
  try {
    id = jobIdParam(rawId);
  } catch {
    throw notFound(rawId);
  }
  const entry = await deps.directory.get(key.organization_id, id);
  if (!entry || entry.environment_id !== key.environment_id) throw notFound(rawId);
  return entry;
}

export function openAiVideoRoutes(deps: JobRouteDeps) {
  const { catalogue } = deps.router;
  const common = { ...openAiMount, scope: "video" } as const;
  return [
    defineRoute({
      ...common,
      method: "post",
      path: "/openai/v1/videos",
      summary: "OpenAI-compatible video create (multipart as the SDKs send it, or JSON): a Troupe video job on any catalogue video model",
      bodyType: "json-or-multipart",
      body: createBodySchema.extend({ model: modelNameSchema(catalogue, { category: "video" }).default("troupe/auto") }),
      responses: { 200: videoSchema },
      errors: ["not_found", "budget_exceeded", "no_provider_available", "capability_unavailable"],
      billing: videoJobBilling(deps),
      handler: async (ctx) => {
        const body = ctx.body;
        const reference = body.input_reference;
        const withImage = reference !== undefined;
        const routed = resolveModel(catalogue, body.model, videoNeed(withImage), body.routing_strategy);
        let image: { bytes: Buffer; contentType: string } | null = null;
        if (reference) {
          const type = (imageTypes as readonly string[]).includes(reference.contentType) ? reference.contentType : undefined;
          if (!type) throw invalidRequest([{ path: "input_reference", message: `a PNG, JPEG or WebP image, got ${reference.contentType || "no type"}` }]);
          // The bytes must be an image too, before anything stores them or ffmpeg reads them: a playlist sent as image/png is refused.
          const sniffed = sniffImage(reference.bytes);
          if (!sniffed || sniffed === "gif") throw invalidRequest([{ path: "body.input_reference", message: `not a PNG, JPEG or WebP image by its first bytes (declared ${type})` }]);
          image = { bytes: reference.bytes, contentType: `image/${sniffed}` };
        }
        const fields = { seconds: String(body.seconds), size: body.size };
        const id = await startVideoJob(
          deps,
          ctx.auth.key,
          { prompt: body.prompt, duration_seconds: body.seconds, narration_text: null, scenes: null, ...routed, image, openai_video: fields },
          ctx.signal,
        );
        const entry = await entryFor(deps, ctx.auth.key, id);
        return json(200, toVideo(entry.job, entry.openai_video));
      },
    }),
    defineRoute({
      ...common,
      method: "get",
      path: "/openai/v1/videos",
      summary: "OpenAI-compatible video list: the key's environment's video jobs, newest first",
      query: listQuery,
      responses: { 200: z.object({ object: z.literal("list"), data: z.array(videoSchema), first_id: z.string().nullable(), last_id: z.string().nullable(), has_more: z.boolean() }) },
      errors: ["not_found"],
      handler: async (ctx) => {
        const { key } = ctx.auth;
        let cursor: string | null = null;
        if (ctx.query.after) {
          const after = await entryFor(deps, key, ctx.query.after);
          cursor = encodeCursor(Date.parse(after.job.created_at), after.job.id);
        }
        const page = await deps.directory.listEnvironmentEntries(key.environment_id, ctx.query.limit, cursor);
        const data = page.data.map((e) => toVideo(e.job, e.openai_video));
        return json(200, { object: "list", data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: page.next_cursor !== null });
      },
    }),
    defineRoute({
      ...common,
      method: "get",
      path: "/openai/v1/videos/:video_id",
      summary: "OpenAI-compatible video retrieve",
      responses: { 200: videoSchema },
      errors: ["not_found"],
      handler: async (ctx) => {
        const entry = await entryFor(deps, ctx.auth.key, ctx.params.video_id);
        return json(200, toVideo(entry.job, entry.openai_video));
      },
    }),
    defineRoute({
      ...common,
      method: "delete",
      path: "/openai/v1/videos/:video_id",
      summary: "OpenAI-compatible video delete: cancelled if unfinished, then the job and its files are removed (as DELETE /v1/jobs/{id})",
      responses: { 200: z.object({ id: z.string(), object: z.literal("video.deleted"), deleted: z.literal(true) }) },
      errors: ["not_found"],
      handler: async (ctx) => {
        await entryFor(deps, ctx.auth.key, ctx.params.video_id);
        const gone = await deleteJob(deps, ctx.auth.key, ctx.params.video_id);
        return json(200, { id: gone.id, object: "video.deleted", deleted: true });
      },
    }),
    defineRoute({
      ...common,
      method: "get",
      path: "/openai/v1/videos/:video_id/content",
      summary: "OpenAI-compatible video download: the MP4 of a completed video (409 before)",
      query: contentQuery,
      responses: { 200: null },
      produces: ["video/mp4"],
      errors: ["not_found", "conflict"],
      handler: async (ctx) => {
        const { job } = await entryFor(deps, ctx.auth.key, ctx.params.video_id);
        const fileId = job.result_url?.split("/").pop();
        if (job.status !== "completed" || !fileId) {
          throw new TroupeError("conflict", `Video ${job.id} is not completed (status ${toVideo(job, null).status}); poll GET /openai/v1/videos/${job.id}`);
        }
        const got = await deps.media.files.get(fileId);
        if (!got) throw notFound(job.id);
        const chunks: Buffer[] = [];
        for await (const chunk of got.body) chunks.push(chunk);
        return binary(200, Buffer.concat(chunks), got.file.content_type);
      },
    }),
  ];
}
