// @troupe/client against a real embedded Troupe over real sockets (the
// OpenAI fake behind gpt-4.1-mini, the simulated provider for the rest):
// signup → session → key, chat as JSON and as a stream, a webhook delivery
// verified with the client's verifier, and every error family as its class
// with the server's code and request id.
import t from "tap";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import {
  AuthenticationError,
  BudgetExceededError,
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  TroupeError,
  createTroupeClient,
  unwrap,
  unwrapWithResponse,
  type ChatStreamEvent,
} from "../../client/src/index.ts";
import { verifyWebhook, WebhookVerificationError } from "../../client/src/webhooks.ts";
import { startOpenAIFake } from "../fakes/openai-fake.ts";
import { startTestTroupe } from "../support/troupe.ts";

t.setTimeout(60_000);
const openai = await startOpenAIFake({ apiKey: "sk-fake" });
// Paced tokens: the simulated stream sends one delta per token.
const troupe = await startTestTroupe({ OPENAI_API_KEY: "sk-fake", OPENAI_BASE_URL: `${openai.url}/v1`, OUTBOUND_ALLOW_HOSTS: "127.0.0.1", SIMULATED_TOKENS_PER_SECOND: "2000" });
t.teardown(async () => {
  await troupe.stop();
  await openai.close();
});
const baseUrl = troupe.url;

// signup (no credential) → session client → a key made through the API.
const anonymous = createTroupeClient({ baseUrl });
const signedUp = await unwrap(
  anonymous.api.POST("/v1/auth/signup", { body: { email: `client-${Date.now()}@example.test`, password: "correct horse battery", name: "client" } }),
);
const session = createTroupeClient({ baseUrl, sessionToken: signedUp.session_token });
const production = signedUp.environments[0]!.environment.id;
const development = signedUp.environments[1]!.environment.id;
const created = await unwrap(
  session.api.POST("/v1/environments/{environment_id}/api-keys", { params: { path: { environment_id: development } }, body: { name: "client tests" } }),
);
const client = createTroupeClient({ baseUrl, apiKey: created.key });

t.test("signup, key and account through the typed paths", async (t) => {
  t.match(created.key, /^trp_test_/);
  const account = await unwrap(session.api.GET("/v1/account"));
  t.equal(account.user.email, signedUp.user.email, "the session client reads its account");
  const keys = await unwrap(session.api.GET("/v1/environments/{environment_id}/api-keys", { params: { path: { environment_id: development } } }));
  t.ok(keys.data.some((k) => k.id === created.id), "the new key is listed");
});

t.test("chat as one JSON answer, through the OpenAI fake and the simulated provider", async (t) => {
  const viaFake = await client.chat({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: [{ role: "user", content: "Hello" }] });
  t.match(viaFake, { model: "gpt-4.1-mini", provider: "openai", finish_reason: "stop", tool_calls: null });
  t.ok(viaFake.content.length > 0 && viaFake.input_tokens > 0);
  t.ok(openai.requests.some((r) => r.path.endsWith("/chat/completions")), "the fake was called");
  const simulated = await client.chat({ model: "simulated-chat", routing_strategy: "manual", messages: [{ role: "user", content: "exactly this" }] });
  t.equal(simulated.content, "Simulated reply to: exactly this");
});

t.test("chat as a stream: typed events in order, ending with the finish", async (t) => {
  const events: ChatStreamEvent[] = [];
  for await (const event of client.chatStream({ model: "simulated-chat", routing_strategy: "manual", messages: [{ role: "user", content: "one two three four five" }] })) {
    events.push(event);
  }
  const text = events.map((e) => ("delta" in e ? e.delta : "")).join("");
  t.equal(text, "Simulated reply to: one two three four five", "the deltas concatenate to the whole answer");
  t.ok(events.filter((e) => "delta" in e).length > 1, "more than one delta");
  t.match(events.at(-1), { finish_reason: "stop", model: "simulated-chat", provider: "simulated", output_tokens: Number });

  const calls: ChatStreamEvent[] = [];
  const tools = [{ name: "lookup", parameters: { type: "object", properties: { q: { type: "number" } } } }];
  for await (const event of client.chatStream({ model: "simulated-chat", routing_strategy: "manual", tools, messages: [{ role: "user", content: 'call lookup {"q":1}' }] })) {
    calls.push(event);
  }
  t.match(calls, [{ tool_call: { name: "lookup", arguments: { q: 1 } } }, { finish_reason: "tool_calls" }]);

  // Leaving the loop early stops reading; the next call still works.
  for await (const event of client.chatStream({ model: "simulated-chat", routing_strategy: "manual", messages: [{ role: "user", content: "a long question ".repeat(50) }] })) {
    t.ok("delta" in event);
    break;
  }
  t.equal((await client.chat({ model: "simulated-chat", routing_strategy: "manual", messages: [{ role: "user", content: "again" }] })).content, "Simulated reply to: again");
});

t.test("errors are classes carrying the server's code, request id and details", async (t) => {
  const wrongKey = createTroupeClient({ baseUrl, apiKey: `${created.key.slice(0, -2)}zz` });
  const unauthorized = await wrongKey.chat({ messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
  t.ok(unauthorized instanceof AuthenticationError, "401 → AuthenticationError");
  t.ok(unauthorized instanceof TroupeError);
  t.match(unauthorized, { status: 401, code: "unauthorized", requestId: /^req_/, isRetryable: false });

  const invalid = await client.chat({ messages: [] }).catch((e: unknown) => e);
  t.ok(invalid instanceof InvalidRequestError, "400 → InvalidRequestError");
  t.match(invalid, { status: 400, code: "invalid_request", details: [{ path: /body\.messages/ }] });

  const missing = await client.getConversation("00000000-0000-4000-8000-000000000000").catch((e: unknown) => e);
  t.ok(missing instanceof NotFoundError, "404 → NotFoundError");
  t.match(missing, { code: "not_found", requestId: /^req_/ });

  const imagesOnly = await unwrap(
    session.api.POST("/v1/environments/{environment_id}/api-keys", { params: { path: { environment_id: development } }, body: { name: "images", scopes: ["images"] } }),
  );
  const scoped = await createTroupeClient({ baseUrl, apiKey: imagesOnly.key }).chat({ messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
  t.ok(scoped instanceof PermissionDeniedError, "403 insufficient_scope → PermissionDeniedError");
  t.match(scoped, { status: 403, code: "insufficient_scope" });

  const conversation = await client.createConversation({ model: "simulated-chat", routing_strategy: "manual", system_prompt: "x", tools: [{ name: "lookup", description: "", parameters: { type: "object" } }] });
  const parked = await client.sendMessage(conversation.id, 'call lookup {"q":1}');
  t.equal(parked.status, "requires_action");
  const conflict = await client.sendMessage(conversation.id, "say hi").catch((e: unknown) => e);
  t.ok(conflict instanceof ConflictError, "409 → ConflictError");
  t.match(conflict, { code: "conflict" });

  // The same request id the server logged and sent back.
  const { response } = await unwrapWithResponse(client.api.GET("/v1/agents/conversations/{id}", { params: { path: { id: conversation.id } } }));
  t.match(response.headers.get("x-request-id"), /^req_/);
});

t.test("429 rate_limited → RateLimitError with retryAfterMs; a wait past maxRetryAfterMs is not taken", async (t) => {
  const limited = await unwrap(
    session.api.POST("/v1/environments/{environment_id}/api-keys", { params: { path: { environment_id: development } }, body: { name: "slow", rate_limit_per_minute: 1 } }),
  );
  const sleeps: number[] = [];
  const slow = createTroupeClient({ baseUrl, apiKey: limited.key, maxRetryAfterMs: 50, sleep: async (ms) => void sleeps.push(ms) });
  const body = { model: "simulated-chat", routing_strategy: "manual" as const, messages: [{ role: "user" as const, content: "one" }] };
  t.equal((await slow.chat(body)).content, "Simulated reply to: one");
  const refused = await slow.chat(body).catch((e: unknown) => e);
  t.ok(refused instanceof RateLimitError, "429 → RateLimitError");
  t.match(refused, { status: 429, code: "rate_limited", requestId: /^req_/, isRetryable: true });
  const wait = (refused as RateLimitError).retryAfterMs ?? 0;
  t.ok(wait > 0 && wait <= 60_000, `retryAfterMs from Retry-After: ${wait}`);
  t.same(sleeps, [], "a Retry-After longer than maxRetryAfterMs is not slept through");
});

t.test("402 budget_exceeded → BudgetExceededError (live key, hard limit)", async (t) => {
  const live = await unwrap(
    session.api.POST("/v1/environments/{environment_id}/api-keys", { params: { path: { environment_id: production } }, body: { name: "live", live: true } }),
  );
  await unwrap(session.api.PUT("/v1/projects/{project_id}/budget", { params: { path: { project_id: signedUp.project.id } }, body: { monthly_limit_usd: 0.000001, hard_limit: true } }));
  const paying = createTroupeClient({ baseUrl, apiKey: live.key });
  const body = { model: "gpt-4.1-mini", routing_strategy: "manual" as const, messages: [{ role: "user" as const, content: "Hello" }] };
  await paying.chat(body);
  const refused = await paying.chat(body).catch((e: unknown) => e);
  t.ok(refused instanceof BudgetExceededError, "402 → BudgetExceededError");
  t.match(refused, { status: 402, code: "budget_exceeded", details: { limit_usd: 0.000001 } });
});

t.test("a real webhook delivery verifies with verifyWebhook; a changed byte or an old timestamp does not", async (t) => {
  const deliveries: { body: Buffer; headers: IncomingHttpHeaders }[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      deliveries.push({ body: Buffer.concat(chunks), headers: req.headers });
      res.end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const { webhook, secret } = await unwrap(client.api.POST("/v1/webhooks", { body: { url, events: ["job.completed"] } }));
  const attempt = await unwrap(client.api.POST("/v1/webhooks/{webhook_id}/test", { params: { path: { webhook_id: webhook.id } } }));
  t.equal(attempt.status, "succeeded");
  t.equal(deliveries.length, 1);
  const [delivery] = deliveries;
  const event = verifyWebhook(secret, delivery!.body, delivery!.headers);
  t.match(event, { type: "webhook.test", id: attempt.event_id });
  t.equal(verifyWebhook(secret, delivery!.body.toString("utf8"), new Headers(delivery!.headers as Record<string, string>)).id, event.id, "a string body and a Headers object work too");

  const tampered = Buffer.from(delivery!.body);
  tampered.writeUInt8(tampered.readUInt8(tampered.length - 2) ^ 1, tampered.length - 2);
  t.throws(() => verifyWebhook(secret, tampered, delivery!.headers), WebhookVerificationError, "one changed byte is refused");
  t.throws(() => verifyWebhook(`${secret.slice(0, -4)}AAAA`, delivery!.body, delivery!.headers), /X-Troupe-Signature/, "another secret is refused");
  const { "x-troupe-signature": _dropped, ...standardOnly } = delivery!.headers;
  const stamped = Number(delivery!.headers["webhook-timestamp"]) * 1000;
  t.throws(() => verifyWebhook(secret, delivery!.body, standardOnly, { now: stamped + 301_000 }), /webhook-timestamp/, "a replay past the tolerance is refused");
  t.equal(verifyWebhook(secret, delivery!.body, standardOnly, { now: stamped + 299_000 }).id, event.id, "within the tolerance it verifies");
});
