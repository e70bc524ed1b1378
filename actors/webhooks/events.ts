// The one list of organization event types (docs/api/webhooks.md): each
// with the zod schema of its `data`, whether a webhook may subscribe to it,
// and what it announces. Everything else is generated from it: the
// subscribable list (the webhook's `events` field, validated at creation),
// the delivery record's `event_type`, the OpenAPI 3.1 `webhooks` section
// (gateway/openapi.ts; /docs shows every payload) and the type every
// emitter's event is checked against: core/organization-events.ts declares
// `OrganizationEventData` empty (core sits below the job's schema) and the
// augmentation at the end of this file fills it, so a publisher handing a
// wrong `data` — in the JobActor, in billing, anywhere — fails `tsc`.
import { z } from "zod";
import { openAiBatchSchema } from "../batch/types.ts";
import { jobSchema } from "../job/types.ts";
import { webhookResponseSchema } from "../responses/background-run.ts";

interface EventKind {
  /** A webhook may list it in `events`; the others are sent on request only (webhook.test). */
  subscribable: boolean;
  summary: string;
  data: z.ZodObject;
}

export const organizationEvents = {
  "job.completed": {
    subscribable: true,
    summary: "A video job finished: `data.job` is the job as GET /v1/jobs/{id} answers it, status completed.",
    data: z.object({ job: jobSchema }),
  },
  "job.failed": {
    subscribable: true,
    summary: "A video job failed or was cancelled: `data.job` is the job as GET /v1/jobs/{id} answers it, with its error.",
    data: z.object({ job: jobSchema }),
  },
  "response.completed": {
    subscribable: true,
    summary: "A background response (OpenAI's Responses API, `background: true`) completed: `data.response` is the response as GET /openai/v1/responses/{id} answers it.",
    data: z.object({ response: webhookResponseSchema }),
  },
  "response.incomplete": {
    subscribable: true,
    summary: "A background response ended incomplete (its max_output_tokens reached, or a content filter): `data.response`, with its incomplete_details.",
    data: z.object({ response: webhookResponseSchema }),
  },
  "response.failed": {
    subscribable: true,
    summary: "A background response failed (the provider's error, or the process running it stopped): `data.response`, with its error.",
    data: z.object({ response: webhookResponseSchema }),
  },
  "response.cancelled": {
    subscribable: true,
    summary: "A background response was cancelled (POST /openai/v1/responses/{id}/cancel): `data.response`, status cancelled.",
    data: z.object({ response: webhookResponseSchema }),
  },
  "budget.alert": {
    subscribable: true,
    summary: "A project's spend in the budget period crossed one of its alert thresholds (sent once per threshold and period).",
    data: z.object({
      project_id: z.string(),
      /** The budget period (a month: YYYY-MM). */
      period: z.string(),
      /** The crossed threshold, a fraction of the limit (0.8 = 80 %). */
      threshold: z.number(),
      limit_usd: z.number(),
      spent_usd: z.number(),
    }),
  },
  "key.budget.alert": {
    subscribable: true,
    summary: "An API key's spend in the budget period crossed one of the alert thresholds of its own monthly budget (sent once per threshold and period).",
    data: z.object({
      api_key_id: z.string(),
      project_id: z.string(),
      /** The budget period (a month: YYYY-MM). */
      period: z.string(),
      /** The crossed threshold, a fraction of the key's budget (0.8 = 80 %). */
      threshold: z.number(),
      /** The key's monthly_budget_usd when the threshold was crossed. */
      budget_usd: z.number(),
      spent_usd: z.number(),
    }),
  },
  "batch.completed": {
    subscribable: true,
    summary: "A batch (OpenAI Batch API or Anthropic Message Batches) answered every line: `data.batch` is the batch as GET /openai/v1/batches/{id} answers it.",
    data: z.object({ batch: openAiBatchSchema }),
  },
  "batch.failed": {
    subscribable: true,
    summary: "A batch failed validation when it was created (its `errors` say which line): `data.batch`.",
    data: z.object({ batch: openAiBatchSchema }),
  },
  "batch.cancelled": {
    subscribable: true,
    summary: "A cancelled batch stopped: the lines answered before the cancel are in its output file. `data.batch`.",
    data: z.object({ batch: openAiBatchSchema }),
  },
  "batch.expired": {
    subscribable: true,
    summary: "A batch passed its completion window (24 h) before every line was answered: the answered ones are in its output file. `data.batch`.",
    data: z.object({ batch: openAiBatchSchema }),
  },
  "webhook.test": {
    subscribable: false,
    summary: "Sent by POST /v1/webhooks/{id}/test only.",
    data: z.object({ webhook_id: z.string() }),
  },
} as const satisfies Record<string, EventKind>;

type Catalogue = typeof organizationEvents;
export type EventType = keyof Catalogue;
export type SubscribableEventType = { [T in EventType]: Catalogue[T]["subscribable"] extends true ? T : never }[EventType];
/** Each type's `data`, as emitters build it. */
export type EventData = { [T in EventType]: z.output<Catalogue[T]["data"]> };

const allTypes = Object.keys(organizationEvents) as EventType[];
/** Every event type, the catalogue's order. */
export const webhookEventTypes = allTypes as [EventType, ...EventType[]];
/** Kinds a webhook may subscribe to. */
export const subscribableEvents = allTypes.filter((type): type is SubscribableEventType => organizationEvents[type].subscribable) as [SubscribableEventType, ...SubscribableEventType[]];

/** The `data` schema of one type: payload checks in tests, the OpenAPI section. */
export function eventDataSchema(type: EventType): z.ZodObject {
  return organizationEvents[type].data;
}

/** The delivered body of one type: `{id, type, created_at, data}`. */
export function eventBodySchema(type: EventType): z.ZodObject {
  return z.object({ id: z.string(), type: z.literal(type), created_at: z.string(), data: organizationEvents[type].data });
}

declare module "../../core/organization-events.ts" {
  // The emitters' contract: type → data (see the header).
  interface OrganizationEventData extends EventData {}
}
