// OpenAI's Files API on /openai/v1/files, for batches (docs/api/batches.md):
// upload a JSONL input file (purpose "batch", checked line by line before it
// is stored, size bounded before the body is parsed), read, list, delete and
// download it; a batch's output and error files are read the same way. Files
// belong to the environment of the key that made them: another
// environment's file is 404.
import { z } from "zod";
import type { BatchFiles } from "../../../actors/batch/batch-files.ts";
import { batchFileSchema } from "../../../actors/batch/batch-files.ts";
import { TroupeError } from "../../../core/errors.ts";
import { binary, defineRoute, json } from "../../route.ts";
import { isUpload, type UploadedFile } from "../../validation.ts";
import { validateBatchJsonl } from "./files-jsonl.ts";
import { openAiMount } from "./mount.ts";

export interface FileRouteDeps {
  files: BatchFiles;
  /** Largest input file (bytes) and most lines. */
  maxFileBytes: number;
  maxLines: number;
}

const listQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(10_000).default(10_000),
    after: z.string().optional().describe("a file id: the page starts after it"),
    order: z.enum(["desc"]).default("desc").describe("newest first (the only order kept)"),
    purpose: z.enum(["batch", "batch_output"]).optional(),
  })
  .strict();

const ownerOf = (key: { organization_id: string; environment_id: string }) => ({ organization_id: key.organization_id, environment_id: key.environment_id });
const notFound = (id: string) => new TroupeError("not_found", `No such File object: ${id}`);

export function openAiFileRoutes(deps: FileRouteDeps) {
  const uploadSchema = z
    .custom<UploadedFile>((v) => isUpload(v) && v.bytes.length > 0 && v.bytes.length <= deps.maxFileBytes, { message: `a JSONL file of 1 byte to ${deps.maxFileBytes} bytes` })
    .meta({ type: "string", format: "binary", description: "the JSONL batch input file" });
  const common = { ...openAiMount } as const;
  return [
    defineRoute({
      ...common,
      method: "post",
      path: "/openai/v1/files",
      summary: "OpenAI-compatible file upload (multipart): a batch input file, JSONL, each line checked",
      bodyType: "multipart",
      // The limit applies while the body streams in, before anything is parsed (plus room for the multipart framing).
      maxBodyBytes: deps.maxFileBytes + 64 * 1024,
      body: z.object({ file: uploadSchema, purpose: z.literal("batch").describe("only batch input files are kept") }).strict(),
      responses: { 200: batchFileSchema },
      handler: async (ctx) => {
        const lines = validateBatchJsonl(ctx.body.file.bytes, deps.maxLines);
        const file = await deps.files.put(ownerOf(ctx.auth.key), { filename: ctx.body.file.filename || "batch.jsonl", purpose: "batch", lines, bytes: ctx.body.file.bytes.length });
        return json(200, file);
      },
    }),
    defineRoute({
      ...common,
      method: "get",
      path: "/openai/v1/files",
      summary: "OpenAI-compatible file list: the key's environment's batch files, newest first",
      query: listQuery,
      responses: { 200: z.object({ object: z.literal("list"), data: z.array(batchFileSchema), first_id: z.string().nullable(), last_id: z.string().nullable(), has_more: z.boolean() }) },
      handler: async (ctx) => {
        const page = await deps.files.list(ownerOf(ctx.auth.key), ctx.query.limit, ctx.query.after);
        const data = ctx.query.purpose ? page.data.filter((f) => f.purpose === ctx.query.purpose) : page.data;
        return json(200, { object: "list", data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: page.has_more });
      },
    }),
    defineRoute({
      ...common,
      method: "get",
      path: "/openai/v1/files/:file_id",
      summary: "OpenAI-compatible file retrieve",
      responses: { 200: batchFileSchema },
      errors: ["not_found"],
      handler: async (ctx) => {
        const file = await deps.files.get(ownerOf(ctx.auth.key), ctx.params.file_id);
        if (!file) throw notFound(ctx.params.file_id);
        const { lines: _lines, ...shown } = file;
        return json(200, shown);
      },
    }),
    defineRoute({
      ...common,
      method: "delete",
      path: "/openai/v1/files/:file_id",
      summary: "OpenAI-compatible file delete",
      responses: { 200: z.object({ id: z.string(), object: z.literal("file"), deleted: z.literal(true) }) },
      errors: ["not_found"],
      handler: async (ctx) => {
        if (!(await deps.files.delete(ownerOf(ctx.auth.key), ctx.params.file_id))) throw notFound(ctx.params.file_id);
        return json(200, { id: ctx.params.file_id, object: "file", deleted: true });
      },
    }),
    defineRoute({
      ...common,
      method: "get",
      path: "/openai/v1/files/:file_id/content",
      summary: "OpenAI-compatible file download: the JSONL bytes",
      responses: { 200: null },
      produces: ["application/jsonl"],
      errors: ["not_found"],
      handler: async (ctx) => {
        const file = await deps.files.get(ownerOf(ctx.auth.key), ctx.params.file_id);
        if (!file) throw notFound(ctx.params.file_id);
        return binary(200, await deps.files.content(file.id), "application/jsonl");
      },
    }),
  ];
}
