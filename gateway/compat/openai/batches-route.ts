// OpenAI's Batch API on /openai/v1/batches (docs/api/batches.md): a batch of
// an uploaded input file's lines, run by a BatchActor at a bounded
// concurrency beside interactive traffic; retrieve, list (cursor `after`),
// cancel. The batch object is OpenAI's. A batch needs the scope of its
// endpoint's category (chat, embeddings); another environment's is 404.
import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { BatchActorDefinition } from "../../../actors/batch/batch-actor.ts";
import type { BatchDirectory } from "../../../actors/batch/batch-directory.ts";
import type { BatchFiles } from "../../../actors/batch/batch-files.ts";
import { openAiBatchSchema, toOpenAiBatch } from "../../../actors/batch/types.ts";
import { callActor, type ActorHost } from "../../../actors/host.ts";
import { invalidRequest, isTroupeError, TroupeError } from "../../../core/errors.ts";
import type { ApiKeyRecord } from "../../../tenancy/types.ts";
import { defineRoute, json } from "../../route.ts";
import { openAiMount } from "./mount.ts";

export interface BatchRouteDeps {
  host: ActorHost;
  batch: BatchActorDefinition;
  files: BatchFiles;
  directory: BatchDirectory;
  now(): number;
}

/** 24 h: the one completion window OpenAI offers. */
export const completionWindowMs = 24 * 3600_000;

const createBody = z
  .object({
    input_file_id: z.string().min(1),
    endpoint: z.enum(["/v1/chat/completions", "/v1/embeddings", "/v1/responses"]),
    completion_window: z.literal("24h"),
    // OpenAI's limits: 16 pairs, keys up to 64 characters, values up to 512.
    metadata: z
      .record(z.string().max(64), z.string().max(512))
      .refine((m) => Object.keys(m).length <= 16, "at most 16 keys")
      .nullable()
      .optional(),
    output_expires_after: z.object({ anchor: z.literal("created_at"), seconds: z.number().int() }).optional(),
  })
  .strict();

const listQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    after: z.string().optional().describe("a batch id: the page starts after it"),
  })
  .strict();

export const newBatchId = (): string => `batch_${randomBytes(12).toString("hex")}`;
const callerOf = (key: ApiKeyRecord) => ({ organization_id: key.organization_id, environment_id: key.environment_id });
const notFound = (id: string) => new TroupeError("not_found", `No such Batch object: ${id}`);

/** A batch's actor id must look like one: any other is 404 without activating an actor. */
const batchIdPattern = /^(batch|msgbatch)_[0-9a-f]{24}$/;

/** The batch as the caller may see it (404 for an unknown id or another environment's). */
export async function batchFor(deps: BatchRouteDeps, key: ApiKeyRecord, id: string) {
  if (!batchIdPattern.test(id)) throw notFound(id);
  try {
    return await callActor(deps.host, deps.batch, id, "get", callerOf(key));
  } catch (error) {
    if (isTroupeError(error) && error.code === "not_found") throw notFound(id);
    throw error;
  }
}

export function openAiBatchRoutes(deps: BatchRouteDeps) {
  const common = { ...openAiMount } as const;
  return [
    defineRoute({
      ...common,
      method: "post",
      path: "/openai/v1/batches",
      summary: "OpenAI-compatible batch create: the input file's lines run on any catalogue model, at a bounded concurrency beside interactive traffic",
      body: createBody,
      inputScope: (body) => (body.endpoint === "/v1/embeddings" ? "embeddings" : "chat"),
      responses: { 200: openAiBatchSchema },
      errors: ["not_found", "insufficient_scope"],
      handler: async (ctx) => {
        const { key } = ctx.auth;
        const body = ctx.body;
        const file = await deps.files.get(callerOf(key), body.input_file_id);
        if (!file) throw new TroupeError("not_found", `No such File object: ${body.input_file_id}`);
        if (file.purpose !== "batch") throw invalidRequest([{ path: "body.input_file_id", message: `file ${file.id} has purpose ${file.purpose}; a batch reads a purpose "batch" file` }]);
        // Every line of a file calls one endpoint (checked at upload): the first says which.
        const first = z.object({ url: z.string() }).safeParse(JSON.parse((await deps.files.line(file.id, 0)) ?? "{}"));
        const url = first.success ? first.data.url : null;
        const errors = url === body.endpoint ? null : [{ code: "invalid_url", message: `the file's lines call ${url}, the batch's endpoint is ${body.endpoint}`, param: "url", line: 1 }];
        const id = newBatchId();
        const created = await callActor(deps.host, deps.batch, id, "create", {
          api: "openai",
          key,
          endpoint: body.endpoint,
          input_file_id: file.id,
          completion_window: body.completion_window,
          metadata: body.metadata ?? null,
          total: file.lines,
          errors,
          window_ms: completionWindowMs,
        });
        await deps.directory.add(callerOf(key), id, deps.now());
        return json(200, created);
      },
    }),
    defineRoute({
      ...common,
      method: "get",
      path: "/openai/v1/batches",
      summary: "OpenAI-compatible batch list: the key's environment's batches, newest first (cursor `after`)",
      query: listQuery,
      responses: { 200: z.object({ object: z.literal("list"), data: z.array(openAiBatchSchema), first_id: z.string().nullable(), last_id: z.string().nullable(), has_more: z.boolean() }) },
      handler: async (ctx) => {
        const { key } = ctx.auth;
        const ids = await deps.directory.list(key.environment_id, ctx.query.limit + 1, ctx.query.after);
        const batches = await Promise.all(ids.slice(0, ctx.query.limit).map((id) => batchFor(deps, key, id).catch(() => undefined)));
        const data = batches.flatMap((b) => (b ? [toOpenAiBatch(b)] : []));
        return json(200, { object: "list", data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: ids.length > ctx.query.limit });
      },
    }),
    defineRoute({
      ...common,
      method: "get",
      path: "/openai/v1/batches/:batch_id",
      summary: "OpenAI-compatible batch retrieve",
      responses: { 200: openAiBatchSchema },
      errors: ["not_found"],
      handler: async (ctx) => json(200, toOpenAiBatch(await batchFor(deps, ctx.auth.key, ctx.params.batch_id))),
    }),
    defineRoute({
      ...common,
      method: "post",
      path: "/openai/v1/batches/:batch_id/cancel",
      summary: "OpenAI-compatible batch cancel: no new line starts; the finished ones are kept in the output file",
      responses: { 200: openAiBatchSchema },
      errors: ["not_found"],
      handler: async (ctx) => {
        await batchFor(deps, ctx.auth.key, ctx.params.batch_id);
        return json(200, await callActor(deps.host, deps.batch, ctx.params.batch_id, "cancel", callerOf(ctx.auth.key)));
      },
    }),
  ];
}
