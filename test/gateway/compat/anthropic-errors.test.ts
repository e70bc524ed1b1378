// Refusals through the official Anthropic SDK, each raised as the SDK's own
// error class with Anthropic's error body: 401 (bad key), 403 (key scoped to
// another category), 404 (unknown model), 400 (max_tokens missing), 402
// (hard budget, before any provider call), 429 (rate limit, Retry-After);
// the key in Authorization: Bearer works too; a compat call is in the
// project's usage; a client that stops reading stops the upstream call.
import Anthropic from "@anthropic-ai/sdk";
import t from "tap";
import { eventually, projectWithLiveKey } from "../../support/billing.ts";
import { field, str } from "../../support/troupe.ts";
import { models, startCompatHarness } from "./anthropic-harness.ts";

t.setTimeout(90_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());

const hello = { model: models.openai, max_tokens: 50, messages: [{ role: "user" as const, content: "hello there" }] };

/** The error the SDK raised (with retries off: the first answer is what is checked). */
async function refusal(call: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  try {
    await call;
  } catch (error) {
    if (error instanceof Anthropic.APIError) return error;
    throw error;
  }
  throw new Error("the call succeeded");
}

async function keyWith(body: Record<string, unknown>): Promise<string> {
  const res = await h.troupe.request("POST", `/v1/environments/${h.productionEnvId}/api-keys`, { token: h.session, body: { name: "limited", live: true, ...body } });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
  return str(res.body, "key");
}

t.test("401: a bad key is Anthropic.AuthenticationError, not retried", async (t) => {
  const error = await refusal(h.client("trp_live_notakeyatall", { maxRetries: 0 }).messages.create(hello));
  t.type(error, Anthropic.AuthenticationError);
  t.equal(error.status, 401);
  t.match(error.error, { type: "error", error: { type: "authentication_error", message: String } });
  t.equal(error.headers?.get("x-should-retry"), "false", "the SDK is told not to retry it");
  t.equal(error.requestID, error.headers?.get("x-request-id"));
});

t.test("the key in x-api-key (Anthropic's documented header, curl) or Authorization: Bearer (the current SDKs); x-api-key only on this mount", async (t) => {
  const viaHeader = await h.troupe.request("POST", "/anthropic/v1/messages", { headers: { "x-api-key": h.liveKey, "anthropic-version": "2023-06-01" }, body: hello });
  t.equal(viaHeader.status, 200, viaHeader.text);
  t.equal(field(viaHeader.body, "type"), "message");
  const viaBearer = await h.troupe.request("POST", "/anthropic/v1/messages", { token: h.liveKey, body: hello });
  t.equal(viaBearer.status, 200, viaBearer.text);
  const both = await h.troupe.request("POST", "/anthropic/v1/messages", { token: h.liveKey, headers: { "x-api-key": h.liveKey }, body: hello });
  t.equal(both.status, 200, "both headers with the same key");
  const disagreeing = await h.troupe.request("POST", "/anthropic/v1/messages", { token: h.liveKey, headers: { "x-api-key": "trp_live_someotherkey" }, body: hello });
  t.equal(disagreeing.status, 401, "two different credentials are refused, whichever is valid");
  t.match(disagreeing.body, { error: { type: "authentication_error", message: /different credentials/ } });
  const empty = await h.troupe.request("POST", "/anthropic/v1/messages", { token: h.liveKey, headers: { "x-api-key": "" }, body: hello });
  t.equal(empty.status, 401, "an empty x-api-key beside a good bearer is a wrong credential, not none");
  const none = await h.troupe.request("POST", "/anthropic/v1/messages", { body: hello });
  t.equal(none.status, 401);
  t.match(none.body, { type: "error", error: { type: "authentication_error", message: /x-api-key/ } });
  const v1 = await h.troupe.request("POST", "/v1/chat/completions", { headers: { "x-api-key": h.liveKey }, body: { model: models.openai, messages: [{ role: "user", content: "hi" }] } });
  t.equal(v1.status, 401, "/v1 still takes only Authorization");
  t.equal(field(v1.body, "error", "code"), "unauthorized");
});

t.test("403: a key scoped to another category is Anthropic.PermissionDeniedError", async (t) => {
  const key = await keyWith({ scopes: ["images"] });
  const error = await refusal(h.client(key, { maxRetries: 0 }).messages.create(hello));
  t.type(error, Anthropic.PermissionDeniedError);
  t.match(error.error, { error: { type: "permission_error", message: /chat/ } });
});

t.test("404: an unknown model is Anthropic.NotFoundError", async (t) => {
  const before = h.providerCalls();
  const error = await refusal(h.client(undefined, { maxRetries: 0 }).messages.create({ ...hello, model: "claude-nonexistent-9" }));
  t.type(error, Anthropic.NotFoundError);
  t.match(error.error, { error: { type: "not_found_error", message: /claude-nonexistent-9/ } });
  t.equal(h.providerCalls(), before);
});

t.test("400: max_tokens missing is Anthropic.BadRequestError naming the field", async (t) => {
  const { max_tokens: _omitted, ...body } = hello;
  const error = await refusal(h.client(undefined, { maxRetries: 0 }).messages.create(body as typeof hello));
  t.type(error, Anthropic.BadRequestError);
  t.match(error.error, { error: { type: "invalid_request_error", message: /max_tokens/ } });
});

t.test("402: a hard budget refuses before any provider call (Anthropic.APIError, billing_error)", async (t) => {
  const p = await projectWithLiveKey(h.troupe, h.session, h.orgId, "broke");
  const put = await h.troupe.request("PUT", `/v1/projects/${p.projectId}/budget`, { token: h.session, body: { monthly_limit_usd: 0.000001, hard_limit: true } });
  t.equal(put.status, 200, put.text);
  // A hard budget admits calls while spent is under the limit: the first call spends past it.
  t.equal((await h.client(p.liveKey).messages.create(hello)).type, "message");
  const before = h.providerCalls();
  for (const stream of [false, true]) {
    const client = h.client(p.liveKey, { maxRetries: 0 });
    const error = await refusal(stream ? client.messages.stream(hello).finalMessage() : client.messages.create(hello));
    t.equal(error.status, 402);
    t.type(error, Anthropic.APIError);
    t.match(error.error, { error: { type: "billing_error" } });
  }
  t.equal(h.providerCalls(), before, "no provider saw a request");
});

t.test("429: over the key's rate limit is Anthropic.RateLimitError with retry-after", async (t) => {
  const key = await keyWith({ rate_limit_per_minute: 1 });
  const client = h.client(key, { maxRetries: 0 });
  t.equal((await client.messages.create(hello)).type, "message");
  const error = await refusal(client.messages.create(hello));
  t.type(error, Anthropic.RateLimitError);
  t.match(error.error, { error: { type: "rate_limit_error" } });
  t.ok(Number(error.headers?.get("retry-after")) >= 1, "retry-after says when");
});

t.test("a compat call is billed and appears in the project's usage", async (t) => {
  const before = await h.troupe.request("GET", `/v1/projects/${h.projectId}/usage?group_by=model`, { token: h.session });
  const calls = (body: unknown): number => {
    const group = (field(body, "groups") as { key: string; live: { calls: number } }[]).find((g) => g.key === models.gemini);
    return group?.live.calls ?? 0;
  };
  const m = await h.client().messages.create({ ...hello, model: models.gemini });
  t.equal(m.type, "message");
  const after = await eventually(
    () => h.troupe.request("GET", `/v1/projects/${h.projectId}/usage?group_by=model`, { token: h.session }),
    (r) => calls(r.body) === calls(before.body) + 1,
  );
  t.equal(calls(after.body), calls(before.body) + 1, "one more live call of the model");
  t.ok(Number(field(after.body, "live", "cost_nanos")) > 0, "billed at the model's price");
});

t.test("a client that stops reading stops the upstream call", async (t) => {
  h.fakes.anthropic.faults.eventDelayMs = 200;
  t.teardown(() => void (h.fakes.anthropic.faults.eventDelayMs = 0));
  const stream = h.client().messages.stream({ model: models.anthropic, max_tokens: 500, messages: [{ role: "user", content: "a b c d e f g h i j k l m n o p" }] });
  const ended = stream.done().then(() => undefined, (error: unknown) => error);
  await new Promise<void>((resolve) => stream.on("text", () => resolve()));
  stream.abort();
  t.type(await ended, Anthropic.APIUserAbortError);
  const upstream = h.fakes.anthropic.requests.at(-1)!;
  t.equal(await h.fakes.anthropic.outcome(upstream), "closed early", "the provider's stream was cut off");
});

t.test("413 and 415 are written in Anthropic's shape too", async (t) => {
  const big = await h.troupe.request("POST", "/anthropic/v1/messages", { token: h.liveKey, rawBody: "x".repeat(11 * 1024 * 1024), headers: { "content-type": "application/json" } });
  t.equal(big.status, 413);
  t.match(big.body, { type: "error", error: { type: "request_too_large" } });
  t.equal(big.headers.get("request-id"), big.headers.get("x-request-id"));
  const text = await h.troupe.request("POST", "/anthropic/v1/messages", { token: h.liveKey, rawBody: "{}", headers: { "content-type": "text/plain" } });
  t.equal(text.status, 415);
  t.match(text.body, { type: "error", error: { type: "invalid_request_error" } });
});

t.test("the OpenAPI document describes the mount as it answers", async (t) => {
  const doc = (await h.troupe.request("GET", "/v1/openapi.json")).body;
  const op = field(doc, "paths", "/anthropic/v1/messages", "post") as Record<string, unknown>;
  t.same(op["tags"], ["Anthropic-compatible"]);
  t.same(op["security"], [{ anthropicApiKey: [] }, { apiKey: [] }]);
  const ref = (status: string) => field(op, "responses", status, "content", "application/json", "schema", "$ref");
  for (const status of ["400", "401", "402", "403", "404", "413", "429", "500", "529"]) t.equal(ref(status), "#/components/schemas/AnthropicError", status);
  t.notOk(field(op, "responses", "503"), "no provider is 529 here, not 503");
  t.equal(ref("405"), "#/components/schemas/Error", "the catch-all's 405 is Troupe's");
  t.match(field(op, "responses", "200", "content", "text/event-stream", "schema", "properties", "event", "enum"), ["message_start"]);
  t.match(field(doc, "components", "securitySchemes", "anthropicApiKey"), { type: "apiKey", in: "header", name: "x-api-key" });
  t.match(field(doc, "components", "schemas", "AnthropicError"), { type: "object", required: ["type", "error", "request_id"] });
  t.equal(field(doc, "paths", "/v1/chat/completions", "post", "responses", "503", "content", "application/json", "schema", "$ref"), "#/components/schemas/Error", "/v1 unchanged");
});
