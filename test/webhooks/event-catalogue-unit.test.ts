// The organization event catalogue (actors/webhooks/events.ts) entry by
// entry, without building the OpenAPI document (event-catalogue.test.ts
// does that). What it proves:
// - the types in the catalogue's order, and which a webhook may subscribe
//   to (every one but webhook.test);
// - each type's `data` fields exactly, and that a payload as its emitter
//   builds it parses while one missing its field does not;
// - each summary, the OpenAPI entry's text, says what the event carries:
//   the `data.<field>` of the job, response and batch events, the threshold
//   of the budget alerts, the test route of webhook.test;
// - eventDataSchema is the catalogue's schema; eventBodySchema is
//   `{id, type, created_at, data}` with `type` that one type only.
import t from "tap";
import { eventBodySchema, eventDataSchema, organizationEvents, subscribableEvents, webhookEventTypes, type EventType } from "../../actors/webhooks/events.ts";
import type { OpenAiBatch } from "../../actors/batch/types.ts";
import type { Job } from "../../actors/job/types.ts";

const createdAt = "2026-12-04T18:00:00.000Z";

const job: Job = {
  id: "job_1",
  category: "video",
  type: "text_to_video",
  status: "completed",
  provider: "fake",
  model: "fake-video",
  progress: 1,
  segments: [{ index: 0, prompt: "a lighthouse at dusk", status: "completed", progress: 1, provider: "fake", model: "fake-video" }],
  result_url: "https://files.example.test/job_1.mp4",
  error: null,
  created_at: createdAt,
  updated_at: createdAt,
};

const response = { id: "resp_1", object: "response", status: "completed", background: true, error: null, output: [] };

const batch: OpenAiBatch = {
  id: "batch_1",
  object: "batch",
  endpoint: "/v1/chat/completions",
  errors: null,
  input_file_id: "file_in",
  completion_window: "24h",
  status: "completed",
  output_file_id: "file_out",
  error_file_id: null,
  created_at: 1_796_400_000,
  in_progress_at: 1_796_400_010,
  expires_at: 1_796_486_400,
  finalizing_at: 1_796_407_000,
  completed_at: 1_796_407_200,
  failed_at: null,
  expired_at: null,
  cancelling_at: null,
  cancelled_at: null,
  request_counts: { total: 2, completed: 2, failed: 0 },
  metadata: null,
  troupe_paused: null,
};

const jobTypes = ["job.completed", "job.failed"] as const;
const responseTypes = ["response.completed", "response.incomplete", "response.failed", "response.cancelled"] as const;
const batchTypes = ["batch.completed", "batch.failed", "batch.cancelled", "batch.expired"] as const;

const fieldsOf = (type: EventType) => Object.keys(eventDataSchema(type).shape);

t.test("the types in the catalogue's order; every one but webhook.test subscribable", async (t) => {
  const all = ["job.completed", "job.failed", ...responseTypes, "budget.alert", "key.budget.alert", ...batchTypes, "webhook.test"];
  t.strictSame(webhookEventTypes, all);
  t.strictSame(
    webhookEventTypes.map((type) => [type, organizationEvents[type].subscribable]),
    all.map((type) => [type, type !== "webhook.test"]),
  );
  t.strictSame(subscribableEvents, all.slice(0, -1));
});

t.test("each type's data fields", async (t) => {
  for (const type of jobTypes) t.strictSame(fieldsOf(type), ["job"], type);
  for (const type of responseTypes) t.strictSame(fieldsOf(type), ["response"], type);
  for (const type of batchTypes) t.strictSame(fieldsOf(type), ["batch"], type);
  t.strictSame(fieldsOf("budget.alert"), ["project_id", "period", "threshold", "limit_usd", "spent_usd"]);
  t.strictSame(fieldsOf("key.budget.alert"), ["api_key_id", "project_id", "period", "threshold", "budget_usd", "spent_usd"]);
  t.strictSame(fieldsOf("webhook.test"), ["webhook_id"]);
});

t.test("a payload as its emitter builds it parses; one without its field does not", async (t) => {
  const samples: [EventType, Record<string, unknown>][] = [
    ...jobTypes.map((type): [EventType, Record<string, unknown>] => [type, { job }]),
    ...responseTypes.map((type): [EventType, Record<string, unknown>] => [type, { response }]),
    ["budget.alert", { project_id: "prj_1", period: "2026-12", threshold: 0.8, limit_usd: 10, spent_usd: 8.5 }],
    ["key.budget.alert", { api_key_id: "key_1", project_id: "prj_1", period: "2026-12", threshold: 1, budget_usd: 5, spent_usd: 5.01 }],
    ...batchTypes.map((type): [EventType, Record<string, unknown>] => [type, { batch }]),
    ["webhook.test", { webhook_id: "whk_1" }],
  ];
  t.strictSame(samples.map(([type]) => type), [...webhookEventTypes], "a sample of every type");
  for (const [type, data] of samples) {
    const parsed = eventDataSchema(type).safeParse(data);
    t.ok(parsed.success, `${type}: parses`);
    t.same(parsed.data, data, `${type}: as given`);
    t.notOk(eventDataSchema(type).safeParse({}).success, `${type}: {} does not`);
  }
  t.notOk(eventDataSchema("job.failed").safeParse({ job: { ...job, category: "image" } }).success, "a job that is not the jobs API's");
  t.notOk(eventDataSchema("response.failed").safeParse({ response: { ...response, background: false } }).success, "a foreground response");
  t.notOk(eventDataSchema("batch.expired").safeParse({ batch: { ...batch, object: "list" } }).success, "not a batch");
});

t.test("each summary says what the event carries", async (t) => {
  for (const type of webhookEventTypes) t.match(organizationEvents[type].summary, /^[A-Z].{20,}[.)]$/, `${type}: a sentence`);
  for (const type of jobTypes) t.match(organizationEvents[type].summary, /^A video job .*`data\.job`/, type);
  for (const type of responseTypes) t.match(organizationEvents[type].summary, /^A background response .*`data\.response`/, type);
  for (const type of batchTypes) t.match(organizationEvents[type].summary, /^A (cancelled )?batch .*`data\.batch`/, type);
  t.match(organizationEvents["budget.alert"].summary, /^A project's spend .* alert thresholds/);
  t.match(organizationEvents["key.budget.alert"].summary, /^An API key's spend .* alert thresholds of its own monthly budget/);
  t.equal(organizationEvents["webhook.test"].summary, "Sent by POST /v1/webhooks/{id}/test only.");
  t.equal(new Set(webhookEventTypes.map((type) => organizationEvents[type].summary)).size, webhookEventTypes.length, "no two alike");
});

t.test("eventDataSchema is the catalogue's schema of that type", async (t) => {
  for (const type of webhookEventTypes) t.equal(eventDataSchema(type), organizationEvents[type].data, type);
});

t.test("eventBodySchema: {id, type, created_at, data}, the type being that one only", async (t) => {
  const body = { id: "evt_1", type: "webhook.test", created_at: createdAt, data: { webhook_id: "whk_1" } };
  const schema = eventBodySchema("webhook.test");
  t.strictSame(Object.keys(schema.shape), ["id", "type", "created_at", "data"]);
  t.strictSame(schema.parse(body), body, "a test event's body");
  t.notOk(schema.safeParse({ ...body, type: "job.completed" }).success, "another type");
  t.notOk(schema.safeParse({ type: body.type, created_at: body.created_at, data: body.data }).success, "no id");
  t.notOk(schema.safeParse({ ...body, created_at: 1_796_407_200_000 }).success, "created_at not a string");
  t.notOk(schema.safeParse({ ...body, data: { webhook: "whk_1" } }).success, "data not the type's");
  const completed = { id: "evt_2", type: "job.completed", created_at: createdAt, data: { job } };
  t.strictSame(eventBodySchema("job.completed").parse(completed), completed, "a job.completed body");
  t.notOk(eventBodySchema("job.completed").safeParse({ ...completed, type: "job.failed" }).success, "job.failed is not job.completed");
});
