// Anthropic's Message Batches on /anthropic/v1/messages/batches
// (docs/api/batches.md): `requests: [{custom_id, params}]`, each `params` a
// Messages API body, run by the same BatchActor as OpenAI's batches; the
// batch object is Anthropic's (processing_status, request_counts by result
// type, results_url) and the results are JSONL `{custom_id, result}`.
import { z } from "zod";
import { toOpenAiBatch, type BatchData } from "../../../actors/batch/types.ts";
import { callActor } from "../../../actors/host.ts";
import { invalidRequest, TroupeError } from "../../../core/errors.ts";
import type { ApiKeyRecord } from "../../../tenancy/types.ts";
import { binary, defineRoute, json } from "../../route.ts";
import { batchFor, completionWindowMs, type BatchRouteDeps } from "../openai/batches-route.ts";
import { anthropicDialect } from "./errors.ts";
import { randomBytes } from "node:crypto";

const mount = { tag: "Anthropic-compatible", auth: "api_key", scope: "chat", apiKeyHeader: "x-api-key", dialect: anthropicDialect } as const;

export interface AnthropicBatchRouteDeps extends BatchRouteDeps {
  /** The public base URL results_url is made from. */
  baseUrl(): string;
  maxLines: number;
}

const customId = z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, "1 to 64 letters, digits, _ or -");
const createBody = z.object({ requests: z.array(z.object({ custom_id: customId, params: z.record(z.string(), z.unknown()) }).strict()).min(1) }).strict();

export const anthropicBatchSchema = z.object({
  id: z.string(),
  type: z.literal("message_batch"),
  processing_status: z.enum(["in_progress", "canceling", "ended"]),
  request_counts: z.object({ processing: z.number().int(), succeeded: z.number().int(), errored: z.number().int(), canceled: z.number().int(), expired: z.number().int() }),
  ended_at: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string(),
  archived_at: z.null(),
  cancel_initiated_at: z.string().nullable(),
  results_url: z.string().nullable(),
});

const iso = (s: number | null) => (s === null ? null : new Date(s * 1000).toISOString());

export function toAnthropicBatch(b: BatchData, baseUrl: string) {
  const ended = b.status === "completed" || b.status === "cancelled" || b.status === "expired" || b.status === "failed";
  const unanswered = b.total - b.completed - b.failed;
  return {
    id: b.id,
    type: "message_batch" as const,
    processing_status: ended ? ("ended" as const) : b.status === "cancelling" ? ("canceling" as const) : ("in_progress" as const),
    request_counts: {
      processing: ended ? 0 : unanswered,
      succeeded: b.completed,
      errored: b.failed,
      canceled: b.status === "cancelled" ? unanswered : 0,
      expired: b.status === "expired" ? unanswered : 0,
    },
    ended_at: iso(b.completed_at ?? b.cancelled_at ?? b.expired_at ?? b.failed_at),
    created_at: iso(b.created_at)!,
    expires_at: iso(b.expires_at)!,
    archived_at: null,
    cancel_initiated_at: iso(b.cancelling_at),
    results_url: ended ? `${baseUrl}/anthropic/v1/messages/batches/${b.id}/results` : null,
  };
}

const callerOf = (key: ApiKeyRecord) => ({ organization_id: key.organization_id, environment_id: key.environment_id });

export function anthropicBatchRoutes(deps: AnthropicBatchRouteDeps) {
  return [
    defineRoute({
      ...mount,
      method: "post",
      path: "/anthropic/v1/messages/batches",
      summary: "Anthropic Message Batches create: each request's params a Messages API body, on any catalogue text model",
      body: createBody,
      responses: { 200: anthropicBatchSchema },
      handler: async (ctx) => {
        const { key } = ctx.auth;
        const { requests } = ctx.body;
        if (requests.length > deps.maxLines) throw invalidRequest([{ path: "body.requests", message: `at most ${deps.maxLines} requests in a batch` }]);
        const seen = new Set<string>();
        requests.forEach((r, i) => {
          if (seen.has(r.custom_id)) throw invalidRequest([{ path: `body.requests.${i}.custom_id`, message: `"${r.custom_id}" is used by an earlier request; custom_id must be unique` }]);
          seen.add(r.custom_id);
        });
        const id = `msgbatch_${randomBytes(12).toString("hex")}`;
        const lines = requests.map((r) => JSON.stringify(r));
        const file = await deps.files.put(callerOf(key), { filename: `${id}_requests.jsonl`, purpose: "batch", lines, bytes: lines.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0) });
        await callActor(deps.host, deps.batch, id, "create", { api: "anthropic", key, endpoint: "/v1/messages", input_file_id: file.id, completion_window: "24h", metadata: null, total: lines.length, errors: null, window_ms: completionWindowMs });
        await deps.directory.add(callerOf(key), id, deps.now());
        return json(200, toAnthropicBatch(await batchFor(deps, key, id), deps.baseUrl()));
      },
    }),
    defineRoute({
      ...mount,
      method: "get",
      path: "/anthropic/v1/messages/batches",
      summary: "Anthropic Message Batches list: newest first (after_id, limit)",
      query: z.object({ limit: z.coerce.number().int().min(1).max(1000).default(20), after_id: z.string().optional(), before_id: z.string().optional() }).strict(),
      responses: { 200: z.object({ data: z.array(anthropicBatchSchema), has_more: z.boolean(), first_id: z.string().nullable(), last_id: z.string().nullable() }) },
      handler: async (ctx) => {
        const { key } = ctx.auth;
        const ids = (await deps.directory.list(key.environment_id, ctx.query.limit * 4 + 1, ctx.query.after_id)).filter((id) => id.startsWith("msgbatch_"));
        const shown = await Promise.all(ids.slice(0, ctx.query.limit).map((id) => batchFor(deps, key, id)));
        const data = shown.map((b) => toAnthropicBatch(b, deps.baseUrl()));
        return json(200, { data, has_more: ids.length > ctx.query.limit, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
      },
    }),
    defineRoute({
      ...mount,
      method: "get",
      path: "/anthropic/v1/messages/batches/:message_batch_id",
      summary: "Anthropic Message Batches retrieve",
      responses: { 200: anthropicBatchSchema },
      errors: ["not_found"],
      handler: async (ctx) => json(200, toAnthropicBatch(await anthropicBatchFor(deps, ctx.auth.key, ctx.params.message_batch_id), deps.baseUrl())),
    }),
    defineRoute({
      ...mount,
      method: "post",
      path: "/anthropic/v1/messages/batches/:message_batch_id/cancel",
      summary: "Anthropic Message Batches cancel: no new request starts; the finished ones are kept",
      responses: { 200: anthropicBatchSchema },
      errors: ["not_found"],
      handler: async (ctx) => {
        await anthropicBatchFor(deps, ctx.auth.key, ctx.params.message_batch_id);
        await callActor(deps.host, deps.batch, ctx.params.message_batch_id, "cancel", callerOf(ctx.auth.key));
        return json(200, toAnthropicBatch(await anthropicBatchFor(deps, ctx.auth.key, ctx.params.message_batch_id), deps.baseUrl()));
      },
    }),
    defineRoute({
      ...mount,
      method: "get",
      path: "/anthropic/v1/messages/batches/:message_batch_id/results",
      summary: "Anthropic Message Batches results: JSONL, one {custom_id, result} per request (404 until the batch ended)",
      responses: { 200: null },
      produces: ["application/binary"],
      errors: ["not_found"],
      handler: async (ctx) => {
        const b = await anthropicBatchFor(deps, ctx.auth.key, ctx.params.message_batch_id);
        if (!b.output_file_id) throw new TroupeError("not_found", `batch ${b.id} has not ended; its results are not ready (status ${toOpenAiBatch(b).status})`);
        return binary(200, await deps.files.content(b.output_file_id), "application/binary");
      },
    }),
  ];
}

async function anthropicBatchFor(deps: BatchRouteDeps, key: ApiKeyRecord, id: string): Promise<BatchData> {
  if (!id.startsWith("msgbatch_")) throw new TroupeError("not_found", `No such message batch: ${id}`);
  return batchFor(deps, key, id);
}

/** Anthropic's result line of a request: succeeded with its message, errored with its error body, or canceled/expired when it never ran. */
export function anthropicResultLine(customId: string, answer: { status: number; body: unknown } | "canceled" | "expired"): { ok: boolean; text: string } {
  if (answer === "canceled" || answer === "expired") return { ok: false, text: JSON.stringify({ custom_id: customId, result: { type: answer } }) };
  const ok = answer.status >= 200 && answer.status < 300;
  return { ok, text: JSON.stringify({ custom_id: customId, result: ok ? { type: "succeeded", message: answer.body } : { type: "errored", error: answer.body } }) };
}
