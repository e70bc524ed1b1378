// A batch's state and what callers see of it (docs/api/batches.md). One
// BatchActor per batch holds only the head: status, counts, the cursor, the
// lines leased to runners and a bitmap of the answered ones. The lines and
// the answers live outside the state, in pages of the data store
// (batch-files.ts), so a 50,000-line batch is not one huge state value.
import { z } from "zod";
import { apiKeyRecordSchema } from "../../tenancy/types.ts";

/** OpenAI's batch statuses; an Anthropic batch shows them as its processing_status (anthropic view). */
export const batchStatusValues = ["validating", "in_progress", "finalizing", "completed", "failed", "expired", "cancelling", "cancelled"] as const;
export const batchStatusSchema = z.enum(batchStatusValues);
export type BatchStatus = z.infer<typeof batchStatusSchema>;

/** The endpoints a line may call; each runs the mount's own route in process. */
export const batchEndpointValues = ["/v1/chat/completions", "/v1/embeddings", "/v1/responses", "/v1/messages"] as const;
export const batchEndpointSchema = z.enum(batchEndpointValues);
export type BatchEndpoint = z.infer<typeof batchEndpointSchema>;

/** Why a batch stopped starting lines while still in progress: documented in docs/api/batches.md. */
export const pauseReasonSchema = z.enum(["budget_exceeded"]).nullable();

export const batchErrorSchema = z.object({ code: z.string(), message: z.string(), param: z.string().nullable(), line: z.number().int().nullable() });

/** A line handed to a runner; `epoch` names the runner (one per process), so a restarted process re-leases what the old one held. */
const leaseSchema = z.object({ index: z.number().int().min(0), epoch: z.string() });

/** When the batch entered each status: seconds since the epoch, as OpenAI stamps them; stored and shown alike. */
const batchTimestampsShape = {
  created_at: z.number().int(),
  in_progress_at: z.number().int().nullable(),
  expires_at: z.number().int(),
  finalizing_at: z.number().int().nullable(),
  completed_at: z.number().int().nullable(),
  failed_at: z.number().int().nullable(),
  expired_at: z.number().int().nullable(),
  cancelling_at: z.number().int().nullable(),
  cancelled_at: z.number().int().nullable(),
};
type BatchTimestamps = { [K in keyof typeof batchTimestampsShape]: z.infer<(typeof batchTimestampsShape)[K]> };
const batchTimestampNames = Object.keys(batchTimestampsShape) as (keyof BatchTimestamps)[];

export const batchDataSchema = z.object({
  id: z.string(),
  /** Which API created it: the answers are shaped for it. */
  api: z.enum(["openai", "anthropic"]),
  /** The key that created it: each line runs as that key (its scopes, its budget); a snapshot taken at creation. */
  key: apiKeyRecordSchema,
  endpoint: batchEndpointSchema,
  input_file_id: z.string(),
  completion_window: z.string(),
  metadata: z.record(z.string(), z.string()).nullable(),
  status: batchStatusSchema,
  paused: pauseReasonSchema,
  total: z.number().int().min(0),
  /** The first line never leased. */
  cursor: z.number().int().min(0),
  leased: z.array(leaseSchema),
  /** Answered lines, one bit each (base64): a line is counted once however often it is answered. */
  answered: z.string(),
  completed: z.number().int().min(0),
  failed: z.number().int().min(0),
  /** Lines never run because the batch was cancelled or expired (Anthropic counts them). */
  skipped: z.number().int().min(0),
  errors: z.array(batchErrorSchema).nullable(),
  output_file_id: z.string().nullable(),
  error_file_id: z.string().nullable(),
  ...batchTimestampsShape,
  /** The final event went to the webhooks (retried by the watchdog until it did). */
  event_published: z.boolean(),
});
export type BatchData = z.infer<typeof batchDataSchema>;

export const batchStateSchema = z.object({ batch: batchDataSchema.nullable() });
export type BatchState = z.infer<typeof batchStateSchema>;

export const finalStatuses: ReadonlySet<BatchStatus> = new Set(["completed", "failed", "expired", "cancelled"]);

/** The batch object exactly as OpenAI shapes it. */
export const openAiBatchSchema = z.object({
  id: z.string(),
  object: z.literal("batch"),
  endpoint: z.string(),
  errors: z.object({ object: z.literal("list"), data: z.array(batchErrorSchema) }).nullable(),
  input_file_id: z.string(),
  completion_window: z.string(),
  status: batchStatusSchema,
  output_file_id: z.string().nullable(),
  error_file_id: z.string().nullable(),
  ...batchTimestampsShape,
  request_counts: z.object({ total: z.number().int(), completed: z.number().int(), failed: z.number().int() }),
  metadata: z.record(z.string(), z.string()).nullable(),
  /** Troupe's: why an in-progress batch is not starting lines (null: it is). */
  troupe_paused: pauseReasonSchema,
});
export type OpenAiBatch = z.infer<typeof openAiBatchSchema>;

export function toOpenAiBatch(b: BatchData): OpenAiBatch {
  return {
    id: b.id,
    object: "batch",
    endpoint: b.endpoint,
    errors: b.errors ? { object: "list", data: b.errors } : null,
    input_file_id: b.input_file_id,
    completion_window: b.completion_window,
    status: b.status,
    output_file_id: b.output_file_id,
    error_file_id: b.error_file_id,
    ...batchTimestamps(b),
    request_counts: { total: b.total, completed: b.completed, failed: b.failed },
    metadata: b.metadata,
    troupe_paused: b.paused,
  };
}

/** The status timestamps of a stored batch, copied by name from the one list of them. */
function batchTimestamps(b: BatchData): BatchTimestamps {
  return Object.fromEntries(batchTimestampNames.map((name) => [name, b[name]])) as BatchTimestamps;
}

/** Bit `i` of a base64 bitmap. */
export function isAnswered(bitmap: string, index: number): boolean {
  const bytes = Buffer.from(bitmap, "base64");
  return ((bytes[index >> 3] ?? 0) & (1 << (index & 7))) !== 0;
}

/** The bitmap with bit `i` set. */
export function markAnswered(bitmap: string, total: number, index: number): string {
  const bytes = Buffer.alloc(Math.ceil(total / 8));
  Buffer.from(bitmap, "base64").copy(bytes);
  bytes[index >> 3]! |= 1 << (index & 7);
  return bytes.toString("base64");
}
