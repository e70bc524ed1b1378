// Refusals through the official `openai` SDK: each status arrives as the
// SDK's own error class with OpenAI's body {message, type, param, code}, and
// the refusals that must come before any provider call do. Also: a compat
// call is billed like a /v1 call and shows in the project's usage.
import t, { type Test } from "tap";
import OpenAI from "openai";
import { eventually, projectWithLiveKey } from "../../support/billing.ts";
import { field } from "../../support/troupe.ts";
import { startCompatHarness } from "./openai-harness.ts";

t.setTimeout(60_000);
const h = await startCompatHarness({ durableUsage: true });
t.teardown(() => h.stop());
const hello = { model: "gpt-4.1-mini", messages: [{ role: "user" as const, content: "hello there" }] };

/** The error the promise rejects with (fails the test when it resolves). */
async function refusal(t: Test, promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error;
    throw error;
  }
  t.fail("expected a refusal");
  throw new Error("expected a refusal");
}

async function keyFor(body: Record<string, unknown>): Promise<string> {
  const res = await h.troupe.request("POST", `/v1/environments/${h.user.developmentEnvId}/api-keys`, { token: h.user.token, body: { name: "compat", ...body } });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
  return String(field(res.body, "key"));
}

t.test("a bad key: 401 AuthenticationError, invalid_api_key", async (t) => {
  const e = await refusal(t, h.client("trp_test_not-a-real-key").chat.completions.create(hello));
  t.type(e, OpenAI.AuthenticationError);
  t.equal(e.status, 401);
  t.match(e.error, { message: String, type: "authentication_error", param: null, code: "invalid_api_key" });
  t.equal(e.code, "invalid_api_key");
  t.ok(e.requestID, "x-request-id on refusals too");
});

t.test("a key scoped to another category: 403 PermissionDeniedError", async (t) => {
  const key = await keyFor({ scopes: ["embeddings"] });
  const e = await refusal(t, h.client(key).chat.completions.create(hello));
  t.type(e, OpenAI.PermissionDeniedError);
  t.match(e.error, { type: "permission_error", code: "insufficient_scope" });
  // The same key may embed.
  const ok = await h.client(key).embeddings.create({ model: "text-embedding-3-small", input: "hi" });
  t.equal(ok.data.length, 1);
});

t.test("an unknown model: 404 NotFoundError, model_not_found, no provider call", async (t) => {
  const before = h.fakes.openai.requests.length;
  const e = await refusal(t, h.client().chat.completions.create({ ...hello, model: "gpt-9-imaginary" }));
  t.type(e, OpenAI.NotFoundError);
  t.match(e.error, { type: "invalid_request_error", param: "model", code: "model_not_found" });
  const m = await refusal(t, h.client().models.retrieve("gpt-9-imaginary"));
  t.type(m, OpenAI.NotFoundError);
  t.equal(m.code, "model_not_found");
  t.equal(h.fakes.openai.requests.length, before);
});

t.test("invalid requests: 400 BadRequestError naming the field", async (t) => {
  const n = await refusal(t, h.client().chat.completions.create({ ...hello, n: 2 }));
  t.type(n, OpenAI.BadRequestError);
  t.match(n.error, { type: "invalid_request_error", param: "n", code: "invalid_request" });
  const image = await refusal(
    t,
    h.client().chat.completions.create({
      model: "local/llama-3.1-8b",
      messages: [{ role: "user", content: [{ type: "text", text: "what is this?" }, { type: "image_url", image_url: { url: "https://example.com/cat.png" } }] }],
    }),
  );
  t.type(image, OpenAI.BadRequestError);
  t.equal(image.param, "messages[0].content[1].image_url", "an image for a text-only model names the image part");
  const json = await refusal(t, h.client().chat.completions.create({ ...hello, model: "claude-haiku-4-5", response_format: { type: "json_object" } }));
  t.equal(json.param, "response_format");
  const args = await refusal(
    t,
    h.client().chat.completions.create({
      ...hello,
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{not json" } }] },
        { role: "tool", tool_call_id: "c1", content: "x" },
      ],
    }),
  );
  t.equal(args.param, "messages[1].tool_calls[0].function.arguments");
  // frequency_penalty, once refused here, is OpenAI's and now accepted (docs/guides/compat-fields.md); a field OpenAI lacks is still refused.
  const unknown = await refusal(t, h.client().chat.completions.create({ ...hello, not_a_field: 0.5 } as OpenAI.ChatCompletionCreateParamsNonStreaming));
  t.type(unknown, OpenAI.BadRequestError, "an unknown field is refused, as OpenAI does");
});

t.test("a key over its rate limit: 429 RateLimitError with Retry-After and x-ratelimit-*", async (t) => {
  const key = await keyFor({ rate_limit_per_minute: 2 });
  const client = h.client(key);
  const { response } = await client.chat.completions.create(hello).withResponse();
  t.equal(response.headers.get("x-ratelimit-limit-requests"), "2", "OpenAI's header names on a success");
  t.equal(response.headers.get("x-ratelimit-remaining-requests"), "1");
  t.match(response.headers.get("x-ratelimit-reset-requests"), /^\d+s$/);
  await client.chat.completions.create(hello);
  const before = h.fakes.openai.requests.length;
  const e = await refusal(t, client.chat.completions.create(hello));
  t.type(e, OpenAI.RateLimitError);
  t.match(e.error, { type: "requests", code: "rate_limit_exceeded" });
  t.match(e.headers?.get("retry-after"), /^\d+$/);
  t.equal(e.headers?.get("x-ratelimit-remaining-requests"), "0");
  t.equal(h.fakes.openai.requests.length, before, "refused before any provider call");
});

t.test("a hard budget: 429 RateLimitError insufficient_quota before any provider call, not retried", async (t) => {
  const p = await projectWithLiveKey(h.troupe, h.user.token, h.user.orgId, "compat-budget");
  const put = await h.troupe.request("PUT", `/v1/projects/${p.projectId}/budget`, { token: h.user.token, body: { monthly_limit_usd: 0.000001, hard_limit: true } });
  t.equal(put.status, 200, put.text);
  // With retries on (the SDK's default is 2): x-should-retry: false must stop them.
  const client = new OpenAI({ baseURL: h.baseURL, apiKey: p.liveKey, maxRetries: 2 });
  // Admitted while nothing is spent (docs/api/usage-budgets-rate-limits.md); it spends past the limit.
  await client.chat.completions.create(hello);
  const before = h.fakes.openai.requests.length;
  const started = Date.now();
  const e = await refusal(t, client.chat.completions.create({ ...hello, max_tokens: 1000 }));
  t.type(e, OpenAI.RateLimitError);
  t.match(e.error, { type: "insufficient_quota", code: "insufficient_quota" });
  t.equal(e.headers?.get("x-should-retry"), "false");
  t.ok(Date.now() - started < 400, "not retried");
  const stream = await refusal(t, client.chat.completions.create({ ...hello, max_tokens: 1000, stream: true }));
  t.type(stream, OpenAI.RateLimitError, "a stream is refused before it starts");
  t.equal(h.fakes.openai.requests.length, before, "the fake saw no request");
});

t.test("a provider failure: 5xx InternalServerError in OpenAI's shape", async (t) => {
  h.fakes.openai.faults.failureRate = 1;
  h.fakes.openai.faults.failureStatus = 500;
  t.teardown(() => void (h.fakes.openai.faults.failureRate = 0));
  // Troupe's routing_strategy extension, as an extra body field: no fallback to another provider.
  const pinned = { ...hello, routing_strategy: "manual" } as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;
  const e = await refusal(t, h.client().chat.completions.create(pinned));
  t.type(e, OpenAI.InternalServerError);
  t.equal(e.status, 502);
  t.match(e.error, { type: "server_error", code: "provider_error", param: null });
});

t.test("a compat call appears in the project's usage", async (t) => {
  const before = await h.troupe.request("GET", `/v1/projects/${h.user.projectId}/usage?group_by=model`, { token: h.user.token });
  const calls = (body: unknown) => Number(field(body, "test", "calls") ?? 0);
  const r = await h.client().chat.completions.create({ ...hello, model: "claude-haiku-4-5" });
  t.equal(r.model, "claude-haiku-4-5");
  const after = await eventually(
    () => h.troupe.request("GET", `/v1/projects/${h.user.projectId}/usage?group_by=model`, { token: h.user.token }),
    (res) => calls(res.body) > calls(before.body),
  );
  t.equal(calls(after.body), calls(before.body) + 1);
  const groups = field(after.body, "groups") as { key: string; test: { calls: number; input_tokens: number } }[];
  t.match(JSON.stringify(groups), /claude-haiku-4-5/, "grouped under the model that served");
});
