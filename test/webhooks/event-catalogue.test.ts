// The one list of organization event types (actors/webhooks/events.ts) and
// what is generated from it: the subscribable list and the OpenAPI 3.1
// `webhooks` section, one signed POST per type with its `data` schema.
// (Creation refusing an unlisted or unsubscribable kind: webhooks.test.ts;
// an emitter's wrong `data` failing tsc: test/types/fixtures/event-payloads.ts.)
import t from "tap";
import { eventDataSchema, organizationEvents, subscribableEvents, webhookEventTypes } from "../../actors/webhooks/events.ts";
import { buildOpenApi } from "../../gateway/openapi.ts";

/** The value at `path` in the generated document; undefined where it is missing. */
function at(value: unknown, ...path: string[]): unknown {
  for (const key of path) value = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  return value;
}
const keys = (value: unknown): string[] => (typeof value === "object" && value !== null ? Object.keys(value) : []);
const bodyPath = ["post", "requestBody", "content", "application/json", "schema"];

t.test("the subscribable list is the catalogue's subscribable types; webhook.test is sent on request only", async (t) => {
  t.same(webhookEventTypes, Object.keys(organizationEvents));
  t.same(subscribableEvents, ["job.completed", "job.failed", "response.completed", "response.incomplete", "response.failed", "response.cancelled", "budget.alert", "key.budget.alert", "batch.completed", "batch.failed", "batch.cancelled", "batch.expired"]);
});

t.test("the OpenAPI document has a webhooks entry per event type, its body carrying that type's data schema", async (t) => {
  const webhooks = at(buildOpenApi([], { title: "t", version: "0" }), "webhooks");
  t.same(keys(webhooks), [...webhookEventTypes], "one per type");
  for (const type of webhookEventTypes) {
    const body = at(webhooks, type, ...bodyPath);
    t.same(at(body, "required"), ["id", "type", "created_at", "data"], `${type}: {id, type, created_at, data}`);
    t.equal(at(body, "properties", "type", "const"), type, `${type}: its type`);
    t.same(keys(at(body, "properties", "data", "properties")).sort(), Object.keys(eventDataSchema(type).shape).sort(), `${type}: its data`);
  }
  t.same(at(webhooks, "budget.alert", ...bodyPath, "properties", "data", "required"), ["project_id", "period", "threshold", "limit_usd", "spent_usd"]);
  const job = at(webhooks, "job.completed", ...bodyPath, "properties", "data", "properties", "job", "properties");
  t.ok(at(job, "status") && at(job, "error"), "job events carry the job as the jobs API answers it");
  const headers = at(webhooks, "job.failed", "post", "parameters");
  t.ok(Array.isArray(headers) && headers.some((p) => at(p, "name") === "webhook-signature"), "the signature headers are documented");
});

t.test("a budget.alert as billing builds it parses with its schema; a wrong one does not", async (t) => {
  const schema = eventDataSchema("budget.alert");
  t.ok(schema.safeParse({ project_id: "prj_1", period: "2026-11", threshold: 0.8, limit_usd: 10, spent_usd: 8.5 }).success);
  t.notOk(schema.safeParse({ project_id: "prj_1", period: "2026-11", threshold: "80%", limit_usd: 10, spent_usd: 8.5 }).success);
});
