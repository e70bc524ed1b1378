// A background response's run (`background: true`, docs/guides/responses.md),
// as its ResponseActor records it: the request to run, who pays and what its
// budget holds, its status (queued → in_progress → completed | incomplete |
// failed | cancelled), the event log a resumed stream reads, and which
// process runs it (its lease and heartbeat). The provider call itself runs
// in the gateway (gateway/compat/openai/responses/background.ts), never
// inside a turn: a turn is short, so retrieve and cancel answer while it runs.
import { z } from "zod";
import { payerSchema } from "../../providers/usage.ts";
import { jobBudgetSchema } from "../job/job-budget.ts";

export const runStatusSchema = z.enum(["queued", "in_progress", "completed", "incomplete", "failed", "cancelled"]);
export type RunStatus = z.infer<typeof runStatusSchema>;

export const finalStatuses: ReadonlySet<RunStatus> = new Set(["completed", "incomplete", "failed", "cancelled"]);
export const isFinalStatus = (status: RunStatus): boolean => finalStatuses.has(status);

/** A stream event as the Responses API sends it (`type`, `sequence_number`, its fields). */
const eventSchema = z.looseObject({ type: z.string(), sequence_number: z.number().int() });
export type RunEvent = z.infer<typeof eventSchema>;

/** Events a run keeps (each a state write's worth): past it the provider call is stopped and the response ends incomplete. */
export const MAX_RUN_EVENTS = 20_000;

export const runStateSchema = z.object({
  status: runStatusSchema,
  /** The create body, as the route parsed it: the runner parses and translates it again when it starts. */
  body: z.record(z.string(), z.unknown()),
  payer: payerSchema,
  /** The usage category it is billed as (chat, or vision when it carries images). */
  category: z.enum(["chat", "vision"]),
  /**
   * Its hard-budget hold (one part), or null when nothing is held (a test key, no hard limit):
   * against the project's budget, the key's own (`api_key_id`), or both, as a video job's.
   */
  budget: jobBudgetSchema.nullable(),
  events: z.array(eventSchema),
  /** The process running the provider call, and when it last said so (ms since the epoch). */
  runner: z.string().nullable(),
  heartbeat_at: z.number().int(),
  /** Its terminal webhook went out (response.completed, .failed, .cancelled or .incomplete). */
  announced: z.boolean(),
});
export type RunState = z.infer<typeof runStateSchema>;

/** What the runner reports, a batch at a time: the events since the last report, and the response object now. */
export const progressInputSchema = z.object({
  runner: z.string(),
  events: z.array(eventSchema),
  response: z.record(z.string(), z.unknown()).optional(),
});

/** The end of a run, from its runner: the final response object and its last events (the terminal one included). */
export const finishInputSchema = z.object({
  runner: z.string(),
  events: z.array(eventSchema),
  response: z.record(z.string(), z.unknown()),
  /** The bill was settled (its budget part is closed). */
  billed: z.boolean(),
});

export type TerminalEventType = "response.completed" | "response.failed" | "response.cancelled" | "response.incomplete";

export function terminalEventType(status: RunStatus): TerminalEventType {
  if (status === "completed") return "response.completed";
  if (status === "incomplete") return "response.incomplete";
  if (status === "cancelled") return "response.cancelled";
  return "response.failed";
}

/**
 * Ends a run its runner did not finish (cancelled, or its process gone):
 * `response` (the public object) gets its final status, the log its
 * terminal event. Returns the final object.
 */
export function endRun(run: RunState, response: Record<string, unknown>, status: "cancelled" | "failed", error: { code: string; message: string } | null): Record<string, unknown> {
  run.status = status;
  run.runner = null;
  const ended = { ...response, status, error };
  run.events.push({ type: terminalEventType(status), sequence_number: run.events.length, response: ended });
  return ended;
}

/** The response object a response.* webhook carries (`data.response`): as GET /openai/v1/responses/{id} answers it. */
export const webhookResponseSchema = z.looseObject({
  id: z.string().describe("resp_…"),
  object: z.literal("response"),
  status: z.enum(["completed", "incomplete", "failed", "cancelled"]),
  background: z.literal(true),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
});
