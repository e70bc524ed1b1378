// Video jobs (docs/api/video-jobs.md): POST /v1/video/generate
// checks the request (a server without ffmpeg refuses it at once: 503
// capability_unavailable), re-hosts the caller's image (one of this Troupe's
// file URLs is read from the store, any other fetched through the outbound
// guard, so a refused or failing URL is a 400 naming image_url; see
// media/input-url.ts) and creates the JobActor, which runs the job on
// durable reminders; 202 at once.
// Reads come from the job directory (any replica, never queued behind a
// running step); cancellation and deletion go to the actor. A job belongs to the
// environment of the key that made it: another environment's or another
// organization's job is a 404, and the list holds the key's environment's.
import { z } from "zod";
import { invalidRequest, isTroupeError, TroupeError } from "../../core/errors.ts";
import { uuid } from "../../core/ids.ts";
import { callActor, type ActorHost } from "../../actors/host.ts";
import type { JobActorDefinition } from "../../actors/job/job-actor.ts";
import type { JobDirectory } from "../../actors/job/directory.ts";
import { jobSchema, type Job } from "../../actors/job/types.ts";
import { videoGenerateBody } from "../../actors/job/video-request.ts";
import { fetchInputUrl } from "../../media/input-url.ts";
import { sniffImage } from "../../media/sniff.ts";
import type { MediaDeps } from "../../media/rehost.ts";
import { withModel } from "../../providers/catalogue.ts";
import { videoImageRules } from "../../providers/model-rules.ts";
import { assertVideoModelFits, videoModelIdSchema, videoNeed } from "../../providers/video-routing.ts";
import type { Router } from "../../providers/router.ts";
import type { CallBilling } from "../billed-call.ts";
import { defineRoute, json, routeGroup } from "../route.ts";
import { environmentList } from "../schemas.ts";
import { payerOf } from "../usage-context.ts";
import type { ApiKeyRecord } from "../../tenancy/types.ts";
import type { RoutingStrategy } from "../../providers/types.ts";
import type { OpenAiVideoFields } from "../../actors/job/types.ts";

export interface JobRouteDeps {
  actors: ActorHost;
  job: JobActorDefinition;
  directory: JobDirectory;
  router: Router;
  media: MediaDeps;
  /** Budgets: a hard-limited project's job starts only while it is under its limit. */
  billing?: CallBilling | undefined;
}

const acceptedSchema = z.object({ job_id: z.string(), status: z.literal("queued") });
export const imageTypes = ["image/png", "image/jpeg", "image/webp"] as const;
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A job id that is not a UUID cannot exist: 404 without touching the store. */
export function jobIdParam(id: string): string {
  if (!uuidPattern.test(id)) throw new TroupeError("not_found", "job not found");
  return id.toLowerCase();
}

/**
 * The job `id` as `key` may see it: of the key's organization and
 * environment, else undefined (the caller answers 404). A snapshot written
 * before snapshots named their environment is checked by the JobActor, which
 * knows its owner.
 */
export async function jobForKey(deps: { actors: ActorHost; job: JobActorDefinition; directory: JobDirectory }, key: ApiKeyRecord, id: string): Promise<Job | undefined> {
  const found = await deps.directory.get(key.organization_id, id);
  if (!found) return undefined;
  if (found.environment_id === key.environment_id) return found.job;
  if (found.environment_id !== null) return undefined;
  return callActor(deps.actors, deps.job, id, "get", { organization_id: key.organization_id, environment_id: key.environment_id }).catch((error: unknown) => {
    if (isTroupeError(error) && error.code === "not_found") return undefined;
    throw error;
  });
}

/**
 * The job the key may see, else 404: the one check every /v1/jobs/{id} route
 * makes before reading or changing a job. The directory answers unknown ids
 * without activating an actor.
 */
async function ownJob(deps: Pick<JobRouteDeps, "actors" | "job" | "directory">, key: ApiKeyRecord, rawId: string): Promise<Job> {
  const found = await jobForKey(deps, key, jobIdParam(rawId));
  if (!found) throw new TroupeError("not_found", "job not found");
  return found;
}

/** What every /v1 job route declares besides its own fields: its document tag and the API key with the video scope. */
const videoRoute = routeGroup({ tag: "video", auth: "api_key", scope: "video" });

export const jobDeletedSchema = z.object({ id: z.string(), deleted: z.literal(true) });

/** DELETE /v1/jobs/{id} and DELETE /openai/v1/videos/{id}: cancel if needed, then remove the job and its files. */
export async function deleteJob(deps: Pick<JobRouteDeps, "actors" | "job" | "directory">, key: ApiKeyRecord, rawId: string): Promise<z.infer<typeof jobDeletedSchema>> {
  const { id } = await ownJob(deps, key, rawId);
  const gone = await callActor(deps.actors, deps.job, id, "delete", { organization_id: key.organization_id, environment_id: key.environment_id });
  return { id: gone.id, deleted: gone.deleted };
}

/** A job request as both doors give it: POST /v1/video/generate and POST /openai/v1/videos (whose image may be an upload). */
export interface VideoJobRequest {
  prompt: string;
  duration_seconds: number;
  narration_text: string | null;
  scenes: string[] | null;
  model: string | null;
  routing_strategy: RoutingStrategy;
  /** The image to animate: a URL (one of ours read from the store, else fetched through the outbound guard), or bytes uploaded with the request. */
  image: { url: string } | { bytes: Buffer; contentType: string } | null;
  /** How the OpenAI-compatible mount presents the job (kept with it). */
  openai_video?: OpenAiVideoFields | null;
}

/**
 * How both mounts' video create is billed: a project at its hard limit is
 * refused 402 before the handler fetches or stores anything (the server
 * admits it, route-billing.ts). The JobActor's create then holds the job's
 * whole estimated cost, or refuses it 402 when it does not fit
 * (actors/job/job-budget.ts); scenes settle their part.
 */
export const videoJobBilling = (deps: JobRouteDeps) => ({ admit: "under-limit", via: deps }) as const;

/**
 * Checks and starts a video job (its route admitted it: videoJobBilling);
 * returns its id. The one path both mounts take, so routing, scopes and
 * budgets are the same on both.
 */
export async function startVideoJob(deps: JobRouteDeps, key: ApiKeyRecord, body: VideoJobRequest, signal: AbortSignal): Promise<string> {
  // Every job is composed with ffmpeg: without it, refused before anything is fetched, stored or held.
  deps.media.capabilities.require("video", "video generation");
  // Refuse a model no provider can serve before fetching or storing anything.
  const withImage = body.image !== null;
  if (body.model) assertVideoModelFits(deps.router.catalogue, body.model, withImage);
  deps.router.plan(body.model, body.routing_strategy, videoNeed(withImage));
  let image: { file_id: string; content_type: string } | null = null;
  if (body.image && "url" in body.image) {
    const fetched = await fetchInputUrl(deps.media, body.image.url, { organizationId: key.organization_id, accept: imageTypes, field: "image_url", signal });
    // The fetched bytes must be an image as declared, before they are stored or any decoder (ffmpeg) reads them.
    const sniffed = sniffImage(fetched.body);
    if (!sniffed || sniffed === "gif") throw invalidRequest([{ path: "body.image_url", message: "the URL's content is not a PNG, JPEG or WebP image by its first bytes" }]);
    const stored = await deps.media.files.put({ body: fetched.body, contentType: fetched.contentType, organizationId: key.organization_id, environmentId: key.environment_id, scope: "video" });
    image = { file_id: stored.id, content_type: fetched.contentType };
  } else if (body.image) {
    const stored = await deps.media.files.put({ body: body.image.bytes, contentType: body.image.contentType, organizationId: key.organization_id, environmentId: key.environment_id, scope: "video" });
    image = { file_id: stored.id, content_type: body.image.contentType };
  }
  const id = uuid();
  await callActor(deps.actors, deps.job, id, "create", {
    owner: { organization_id: key.organization_id, project_id: key.project_id, environment_id: key.environment_id },
    payer: payerOf(key),
    prompt: body.prompt,
    duration_seconds: body.duration_seconds,
    narration_text: body.narration_text,
    scenes: body.scenes,
    model: body.model,
    routing_strategy: body.routing_strategy,
    image,
    callback: null,
    openai_video: body.openai_video ?? null,
  });
  return id;
}

export function jobRoutes(deps: JobRouteDeps) {
  const body = withModel(videoGenerateBody, videoModelIdSchema(deps.router.catalogue).nullable().default(null), videoImageRules(deps.router.catalogue));
  return [
    defineRoute({
      ...videoRoute("post", "/v1/video/generate"),
      summary: "Start a video job (one provider clip per scene, narration as a voiceover); poll GET /v1/jobs/{id} or listen to its events",
      body,
      responses: { 202: acceptedSchema },
      // not_found: an image_url of this Troupe naming no file of the caller's organization.
      errors: ["budget_exceeded", "no_provider_available", "capability_unavailable", "not_found"],
      billing: videoJobBilling(deps),
      handler: async (ctx) => {
        const id = await startVideoJob(deps, ctx.auth.key, { ...ctx.body, image: ctx.body.image_url ? { url: ctx.body.image_url } : null }, ctx.signal);
        return json(202, { job_id: id, status: "queued" });
      },
    }),
    defineRoute({
      ...videoRoute("get", "/v1/jobs"),
      summary: "Jobs of the key's environment, newest first",
      ...environmentList(jobSchema, (environmentId, limit, cursor) => deps.directory.listEnvironment(environmentId, limit, cursor)),
    }),
    defineRoute({
      ...videoRoute("get", "/v1/jobs/:id"),
      summary: "A job: status, progress, per-scene segments, result_url once completed, error once failed",
      responses: { 200: jobSchema },
      errors: ["not_found"],
      handler: async (ctx) => json(200, await ownJob(deps, ctx.auth.key, ctx.params.id)),
    }),
    defineRoute({
      ...videoRoute("post", "/v1/jobs/:id/cancel"),
      summary: "Cancel an unfinished job: it ends failed with error.code cancelled and stays readable; unfinished scenes are not billed",
      responses: { 200: jobSchema },
      errors: ["not_found", "conflict"],
      handler: async (ctx) => {
        const { id } = await ownJob(deps, ctx.auth.key, ctx.params.id);
        const { organization_id, environment_id } = ctx.auth.key;
        return json(200, await callActor(deps.actors, deps.job, id, "cancel", { organization_id, environment_id }));
      },
    }),
    defineRoute({
      ...videoRoute("delete", "/v1/jobs/:id"),
      summary: "Delete a job: cancelled first if unfinished, then the job, its result and every file it stored are removed (404 afterwards)",
      responses: { 200: jobDeletedSchema },
      errors: ["not_found"],
      handler: async (ctx) => json(200, await deleteJob(deps, ctx.auth.key, ctx.params.id)),
    }),
  ];
}
