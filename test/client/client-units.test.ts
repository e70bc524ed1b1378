// @troupe/client pieces against tiny local HTTP servers: retries honouring
// Retry-After (seconds and dates) with an injected sleep, backoff without
// one, bounded attempts, the body sent again unchanged; a chat stream split
// at awkward byte boundaries and one failing mid-way; no server at all; and
// webhook signatures made by the server's own signer (actors/webhooks/
// signing.ts) and by the independent `standardwebhooks` package.
import t from "tap";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import {
  ConnectionError,
  InvalidRequestError,
  ProviderError,
  RateLimitError,
  ServerError,
  createTroupeClient,
  parseRetryAfter,
  unwrap,
} from "../../client/src/index.ts";
import { verifyWebhook, WebhookVerificationError } from "../../client/src/webhooks.ts";
import { newWebhookSecret, signedHeaders } from "../../actors/webhooks/signing.ts";

interface Seen {
  method: string;
  url: string;
  body: string;
  authorization: string | undefined;
}
type Reply = (res: ServerResponse) => void;

/** A server answering each request with the next reply (the last one repeats), recording what came. */
async function scripted(replies: Reply[]) {
  const seen: Seen[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", body: Buffer.concat(chunks).toString("utf8"), authorization: req.headers.authorization });
      (replies[seen.length - 1] ?? replies.at(-1)!)(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { seen, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Reply => (res) => {
  res.writeHead(status, { "content-type": "application/json", "x-request-id": `req_test_${status}`, ...headers });
  res.end(JSON.stringify(body));
};
const error = (status: number, code: string, headers: Record<string, string> = {}) => json(status, { error: { code, message: `${code}!`, request_id: `req_${code}` } }, headers);
const job = { id: "6f1c3f0e-5a43-4c8e-9a55-1b0c2f3d4e5f", status: "queued" };
const getJob = (client: ReturnType<typeof createTroupeClient>) => unwrap(client.api.GET("/v1/jobs/{id}", { params: { path: { id: job.id } } }));

t.test("a 429 is retried after its Retry-After, then the 200 is the answer", async (t) => {
  const server = await scripted([error(429, "rate_limited", { "retry-after": "2" }), json(200, job)]);
  const sleeps: number[] = [];
  const client = createTroupeClient({ baseUrl: server.baseUrl, apiKey: "trp_test_k", sleep: async (ms) => void sleeps.push(ms) });
  t.same(await getJob(client), job);
  t.same(sleeps, [2000], "waited exactly Retry-After");
  t.equal(server.seen.length, 2);
  t.same(server.seen.map((s) => s.authorization), ["Bearer trp_test_k", "Bearer trp_test_k"]);
});

t.test("a POST is sent again with the same body; Retry-After as an HTTP date", async (t) => {
  const at = new Date(Date.now() + 3_000).toUTCString();
  const server = await scripted([error(503, "service_unavailable", { "retry-after": at }), json(200, { content: "ok" })]);
  const sleeps: number[] = [];
  const client = createTroupeClient({ baseUrl: server.baseUrl, apiKey: "k", sleep: async (ms) => void sleeps.push(ms) });
  await client.chat({ messages: [{ role: "user", content: "hello" }] });
  t.equal(server.seen.length, 2);
  t.equal(server.seen[1]!.body, server.seen[0]!.body, "the same body both times");
  t.match(JSON.parse(server.seen[0]!.body), { messages: [{ content: "hello" }], stream: false });
  t.ok(sleeps.length === 1 && sleeps[0]! > 1_000 && sleeps[0]! <= 3_000, `a date is read as the time until it: ${sleeps[0]}`);
});

t.test("without Retry-After: exponential backoff; attempts are bounded and the last error is thrown", async (t) => {
  const server = await scripted([error(502, "provider_error")]);
  const sleeps: number[] = [];
  const client = createTroupeClient({ baseUrl: server.baseUrl, apiKey: "k", retries: 3, retryBaseDelayMs: 100, sleep: async (ms) => void sleeps.push(ms) });
  const failed = await getJob(client).catch((e: unknown) => e);
  t.ok(failed instanceof ProviderError, "502 provider_error → ProviderError");
  t.match(failed, { status: 502, code: "provider_error", requestId: "req_provider_error", message: "provider_error!" });
  t.same(sleeps, [100, 200, 400]);
  t.equal(server.seen.length, 4, "1 + retries attempts");
});

t.test("no retry: a 4xx, retries 0, or a wait over maxRetryAfterMs", async (t) => {
  const bad = await scripted([error(400, "invalid_request"), json(200, job)]);
  const sleeps: number[] = [];
  const sleep = async (ms: number) => void sleeps.push(ms);
  t.ok((await getJob(createTroupeClient({ baseUrl: bad.baseUrl, sleep })).catch((e: unknown) => e)) instanceof InvalidRequestError);
  t.equal(bad.seen.length, 1, "a 400 is not retried");

  const busy = await scripted([error(500, "internal_error"), json(200, job)]);
  const failed = await getJob(createTroupeClient({ baseUrl: busy.baseUrl, retries: 0, sleep })).catch((e: unknown) => e);
  t.ok(failed instanceof ServerError, "500 → ServerError");
  t.equal(busy.seen.length, 1, "retries: 0 sends once");

  const limited = await scripted([error(429, "rate_limited", { "retry-after": "120" }), json(200, job)]);
  const refused = await getJob(createTroupeClient({ baseUrl: limited.baseUrl, sleep })).catch((e: unknown) => e);
  t.ok(refused instanceof RateLimitError);
  t.equal((refused as RateLimitError).retryAfterMs, 120_000);
  t.equal(limited.seen.length, 1, "two minutes is past the default 60 s bound");
  t.same(sleeps, []);
});

t.test("parseRetryAfter", async (t) => {
  t.equal(parseRetryAfter("7"), 7000);
  t.equal(parseRetryAfter("0.5"), 500);
  t.equal(parseRetryAfter(new Date(10_000).toUTCString(), 4_000), 6000);
  t.equal(parseRetryAfter(new Date(1_000).toUTCString(), 4_000), 0, "a date in the past: now");
  t.equal(parseRetryAfter("soon"), undefined);
  t.equal(parseRetryAfter(null), undefined);
});

t.test("a chat stream split at awkward bytes, with CRLF line ends", async (t) => {
  const wire = 'data: {"delta":"Hel"}\r\n\r\ndata: {"delta":"lo ✓"}\r\n\r\n: a comment\r\n\r\ndata: {"finish_reason":"stop","input_tokens":1,"output_tokens":2,"model":"m","provider":"p"}\r\n\r\ndata: [DONE]\r\n\r\n';
  const bytes = Buffer.from(wire);
  const server = await scripted([
    (res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      // One byte at a time through the multi-byte ✓ and the CRLFs.
      let i = 0;
      const next = () => (i < bytes.length ? res.write(bytes.subarray(i, (i += 1 + (i % 3)))) && setImmediate(next) : res.end());
      next();
    },
  ]);
  const events = [];
  for await (const event of createTroupeClient({ baseUrl: server.baseUrl }).chatStream({ messages: [{ role: "user", content: "x" }] })) events.push(event);
  t.same(events, [{ delta: "Hel" }, { delta: "lo ✓" }, { finish_reason: "stop", input_tokens: 1, output_tokens: 2, model: "m", provider: "p" }]);
  t.match(JSON.parse(server.seen[0]!.body), { stream: true });
});

t.test("an error inside a stream is thrown as its class; a stream cut before [DONE] is a ConnectionError", async (t) => {
  const failing = await scripted([
    (res) => {
      res.writeHead(200, { "content-type": "text/event-stream", "x-request-id": "req_stream" });
      res.end('data: {"delta":"a"}\n\ndata: {"error":{"code":"provider_timeout","message":"too slow"}}\n\ndata: [DONE]\n\n');
    },
  ]);
  const seen: unknown[] = [];
  const thrown = await (async () => {
    for await (const event of createTroupeClient({ baseUrl: failing.baseUrl }).chatStream({ messages: [{ role: "user", content: "x" }] })) seen.push(event);
  })().catch((e: unknown) => e);
  t.same(seen, [{ delta: "a" }]);
  t.ok(thrown instanceof ProviderError);
  t.match(thrown, { status: 200, code: "provider_timeout", message: "too slow", requestId: "req_stream" });

  const cut = await scripted([(res) => (res.writeHead(200, { "content-type": "text/event-stream" }), res.end('data: {"delta":"a"}\n\n'))]);
  const ended = await (async () => {
    for await (const _ of createTroupeClient({ baseUrl: cut.baseUrl }).chatStream({ messages: [{ role: "user", content: "x" }] }));
  })().catch((e: unknown) => e);
  t.ok(ended instanceof ConnectionError);
  t.match(ended, { message: /before \[DONE\]/ });
});

t.test("nothing listening: ConnectionError", async (t) => {
  const failed = await getJob(createTroupeClient({ baseUrl: "http://127.0.0.1:9", retries: 0 })).catch((e: unknown) => e);
  t.ok(failed instanceof ConnectionError);
  t.match(failed, { status: 0, code: "connection_error" });
});

t.test("webhook signatures from the server's signer and from the standardwebhooks package verify", async (t) => {
  const secret = newWebhookSecret();
  const body = JSON.stringify({ id: "evt_1", type: "job.completed", created_at: new Date().toISOString(), data: { job_id: "j" } });
  const now = Date.now();
  const headers = signedHeaders(secret, "evt_1", body, now);
  t.match(verifyWebhook(secret, body, headers, { now }), { id: "evt_1", type: "job.completed" });

  // Independent: the standardwebhooks package signs, the client verifies (Standard Webhooks headers only).
  const stamp = new Date(now);
  const standard = { "webhook-id": "evt_2", "webhook-timestamp": String(Math.floor(now / 1000)), "webhook-signature": new Webhook(secret).sign("evt_2", stamp, body) };
  t.equal(verifyWebhook(secret, body, standard, { now }).id, "evt_1");
  t.equal(verifyWebhook(secret, body, { ...standard, "webhook-signature": `v1,AAAA ${standard["webhook-signature"]}` }, { now }).id, "evt_1", "one matching entry of several is enough");

  t.throws(() => verifyWebhook(secret, body, {}), WebhookVerificationError, "no signature at all is refused");
  const sig = headers["x-troupe-signature"]!;
  t.throws(() => verifyWebhook(secret, body, { ...headers, "x-troupe-signature": (sig[0] === "0" ? "1" : "0") + sig.slice(1) }, { now }), /X-Troupe-Signature/, "one changed hex digit is refused");
  t.throws(() => verifyWebhook(secret, body, { ...standard, "webhook-id": "evt_3" }, { now }), /no webhook-signature matches/, "the id is signed");
  t.throws(() => verifyWebhook(secret, body, standard, { now: now - 400_000 }), /webhook-timestamp/, "a timestamp from the future is refused too");
  t.throws(() => verifyWebhook(secret, body, { ...standard, "webhook-timestamp": "soon" }, { now }), /not a number/);
  t.throws(() => verifyWebhook(secret, "[1]", signedHeaders(secret, "e", "[1]", now), { now }), /not a webhook event/);
});
