// One admission step for HTTP routes and WebSocket upgrades (gateway/admission.ts):
// over real sockets, the conversation-events upgrade and the conversation
// HTTP route refuse the same credentials with the same errors (the upgrade's
// as an HTTP answer when decided without I/O, else as a 4000 + status close
// once the socket is open) and share one rate-limit counter; in process, the order of the checks and the
// synchronous fast path of gateway/admission.ts.
import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import type { Socket } from "node:net";
import t from "tap";
import { TroupeError } from "../../core/errors.ts";
import { createAdmission } from "../../gateway/admission.ts";
import type { AuthContext } from "../../gateway/auth-context.ts";
import type { Authenticator } from "../../gateway/authenticate.ts";
import type { ApiKeyRecord } from "../../tenancy/types.ts";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";

const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());

interface Answer {
  status: number;
  body: unknown;
  retryAfter: string | undefined;
  /** Upgraded, then closed before any frame: the close frame's code and reason. */
  close?: { code: number; reason: string };
}

/**
 * The first server frame after an upgrade: a close (code and reason), or
 * undefined for a data frame (the socket is serving) or nothing in 1 s.
 * Server frames are unmasked; these are short (a length under 126).
 */
function firstClose(socket: Socket, head: Buffer): Promise<{ code: number; reason: string } | undefined> {
  return new Promise((resolve) => {
    let bytes = head;
    const timer = setTimeout(() => done(undefined), 1000);
    const done = (close: { code: number; reason: string } | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(close);
    };
    const look = (): void => {
      if (bytes.length < 2) return;
      const length = (bytes[1] ?? 0) & 0x7f;
      if (((bytes[0] ?? 0) & 0x0f) !== 8) return done(undefined);
      if (bytes.length < 2 + length) return;
      done({ code: bytes.readUInt16BE(2), reason: bytes.subarray(4, 2 + length).toString("utf8") });
    };
    socket.on("data", (chunk: Buffer) => {
      bytes = Buffer.concat([bytes, chunk]);
      look();
    });
    look();
  });
}

/** A raw WebSocket upgrade request, so a refusal's status and body, or its close frame, can be read (a WebSocket client only sees "failed"). */
function upgrade(path: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: "127.0.0.1",
      port: troupe.port,
      path,
      headers: { connection: "Upgrade", upgrade: "websocket", "sec-websocket-version": "13", "sec-websocket-key": randomBytes(16).toString("base64"), ...headers },
    });
    req.on("upgrade", (res, socket, head) => {
      void firstClose(socket, head).then((close) => resolve({ status: res.statusCode ?? 0, body: undefined, retryAfter: undefined, ...(close ? { close } : {}) }));
    });
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const retry = res.headers["retry-after"];
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown, retryAfter: typeof retry === "string" ? retry : undefined });
      });
    });
    req.on("error", reject);
    req.end();
  });
}

async function viaHttp(id: string, token: string | undefined): Promise<Answer> {
  const res = await troupe.request("GET", `/v1/agents/conversations/${id}`, token === undefined ? {} : { token });
  return { status: res.status, body: res.body, retryAfter: res.headers.get("retry-after") ?? undefined };
}

function viaWs(id: string, token: string | undefined): Promise<Answer> {
  return upgrade(`/v1/agents/conversations/${id}/events`, token === undefined ? {} : { authorization: `Bearer ${token}` });
}

/**
 * The error without its request id, which differs per request: from the
 * error body, or from a close after the upgrade (4000 + status, the error
 * as JSON in the reason, without details).
 */
const refusal = (answer: Answer) => {
  if (!answer.close) return { status: answer.status, code: field(answer.body, "error", "code"), details: field(answer.body, "error", "details") };
  const reason = JSON.parse(answer.close.reason) as unknown;
  return { status: answer.close.code - 4000, code: field(reason, "code"), details: undefined };
};

const user = await signup(troupe, "admission");
const created = await troupe.request("POST", "/v1/agents/conversations", { token: user.testKey, body: {} });
const conversationId = str(created.body, "id");

async function newKey(body: Record<string, unknown>): Promise<string> {
  const res = await troupe.request("POST", `/v1/environments/${user.developmentEnvId}/api-keys`, { token: user.token, body: { name: "admission", ...body } });
  if (res.status !== 201) throw new Error(`key creation: ${res.status} ${res.text}`);
  return str(res.body, "key");
}

t.test("HTTP routes and WebSocket upgrades refuse the same credentials with the same error", async (t) => {
  const imagesOnly = await newKey({ scopes: ["images"] });
  const cases: { what: string; token: string | undefined; status: number; code: string }[] = [
    { what: "no credential", token: undefined, status: 401, code: "unauthorized" },
    { what: "an unknown API key", token: `${user.testKey.slice(0, -2)}zz`, status: 401, code: "unauthorized" },
    { what: "a session token on an API-key endpoint", token: user.token, status: 403, code: "forbidden" },
    { what: "a key without the agents scope", token: imagesOnly, status: 403, code: "insufficient_scope" },
  ];
  for (const c of cases) {
    const http = await viaHttp(conversationId, c.token);
    const ws = await viaWs(conversationId, c.token);
    t.match(refusal(http), { status: c.status, code: c.code }, `${c.what}: HTTP ${c.status} ${c.code}`);
    t.same(refusal(ws), refusal(http), `${c.what}: the upgrade refuses the same`);
  }
  // Decided from memory (the key was just read by the HTTP call): the HTTP answer, details included.
  t.match(refusal(await viaWs(conversationId, imagesOnly)).details, { required_scope: "agents", key_scopes: ["images"] }, "scope details on the upgrade too");
  // An unknown key needs the store: upgraded at once, closed with 4401 once open (gateway/ws-route.ts).
  t.match((await viaWs(conversationId, `${user.testKey.slice(0, -2)}zz`)).close, { code: 4401 }, "a refusal that needed I/O is a close after the upgrade");
  const right = await viaWs(conversationId, user.testKey);
  t.equal(right.status, 101, "the right key upgrades");
  t.equal(right.close, undefined, "and its socket serves");
  const notUuid = await viaWs("not-a-uuid", user.testKey);
  t.equal(notUuid.status, 101, "the route's own check runs once the socket is open…");
  t.match(refusal(notUuid), { status: 404, code: "not_found" }, "…and closes it with 4404");
});

t.test("upgrades take the request id and decode path parameters as HTTP routes do", async (t) => {
  const headers = { authorization: `Bearer ${user.testKey}`, "x-request-id": "ws.caller-1" };
  const ws = await upgrade("/v1/agents/conversations/%ff/events", headers);
  const http = await troupe.request("GET", "/v1/agents/conversations/%ff", { token: user.testKey });
  t.same(refusal(ws), refusal({ status: http.status, body: http.body, retryAfter: undefined }), "a malformed escape: the same 400 naming path.id");
  t.equal(ws.status, 400);
  t.equal(field(ws.body, "error", "request_id"), "ws.caller-1", "the caller's well-formed request id");
  const generated = await upgrade("/v1/agents/conversations/%ff/events", { ...headers, "x-request-id": "not a valid id" });
  t.match(field(generated.body, "error", "request_id"), /^req_[0-9a-f]{8}_[0-9a-z]+$/, "otherwise a generated one");
});

t.test("one rate-limit counter per key across HTTP requests and upgrades", async (t) => {
  const limited = await newKey({ rate_limit_per_minute: 2 });
  t.equal((await viaHttp(conversationId, limited)).status, 200, "1st request (HTTP)");
  t.equal((await viaWs(conversationId, limited)).status, 101, "2nd request (upgrade)");
  const third = await viaWs(conversationId, limited);
  t.match(refusal(third), { status: 429, code: "rate_limited" }, "3rd request refused: the upgrade counted against the same limit");
  t.ok(Number(third.retryAfter) >= 1, `Retry-After on the refused upgrade (${third.retryAfter})`);
  t.match(refusal(await viaHttp(conversationId, limited)), { status: 429, code: "rate_limited" }, "and HTTP is refused as well");
});

t.test("admission in process: check order, the synchronous fast path, the credential kind", async (t) => {
  const key = { id: "key_1", scopes: ["chat"], rate_limit_per_minute: 1 } as unknown as ApiKeyRecord;
  let credential: AuthContext | Promise<AuthContext> = { kind: "api_key", key };
  const authenticator: Authenticator = { authenticate: () => credential };
  let limiterCalls = 0;
  let limit: () => void | Promise<void> = () => undefined;
  const admission = createAdmission(authenticator, {
    checkRateLimit: () => {
      limiterCalls += 1;
      return limit();
    },
  });

  const warm = admission.admit({ auth: "api_key", scope: "chat" }, "GET", {});
  t.notOk(warm instanceof Promise, "a warm key under its limit is admitted synchronously");
  t.equal(warm instanceof Promise ? undefined : warm.key, key, "the key comes back typed");

  t.throws(() => admission.admit({ auth: "api_key", scope: "images" }, "GET", {}), { code: "insufficient_scope" });
  t.equal(limiterCalls, 1, "a refused scope does not spend the rate limit");

  limit = () => Promise.reject(new TroupeError("rate_limited"));
  await t.rejects(Promise.resolve(admission.admit({ auth: "api_key" }, "GET", {})), { code: "rate_limited" }, "a limiter that needs I/O is awaited");

  limit = () => undefined;
  credential = Promise.resolve({ kind: "api_key", key });
  const cold = admission.admit({ auth: "api_key" }, "GET", {});
  t.ok(cold instanceof Promise, "a cold credential makes admission asynchronous");
  t.equal((await cold).key, key);

  credential = { kind: "none" };
  t.throws(() => admission.admit({ auth: "session" }, "GET", {}), { code: "forbidden" }, "a credential of a kind the mode does not take is refused here, not in handlers");
  credential = { kind: "session", userId: "u", sessionId: "s", tokenHash: "h", csrfToken: "c", viaCookie: false };
  t.equal((admission.admit({ auth: "any" }, "GET", {}) as AuthContext).kind, "session", "`any` takes a session");
  t.throws(() => admission.admit({ auth: "none" }, "GET", {}), { code: "forbidden" }, "`none` takes no credential");
});

t.test("the WebSocket route's OpenAPI entry is generated from its declaration", async (t) => {
  const doc = await troupe.request("GET", "/v1/openapi.json");
  const op = field(doc.body, "paths", "/v1/agents/conversations/{id}/events", "get");
  t.match(op, {
    operationId: "getV1AgentsConversationsIdEvents",
    tags: ["agents"],
    security: [{ apiKey: [] }],
    "x-troupe-scope": "agents",
    "x-troupe-websocket": {
      subprotocol: "troupe.v1",
      // Refused once the socket is open: what admission decides after I/O, and the resource check.
      close_codes: { "4400": "invalid_request", "4401": "unauthorized", "4403": /insufficient_scope/, "4404": "not_found", "4429": "rate_limited", "4500": "internal_error" },
    },
    parameters: [{ name: "id", in: "path", required: true }],
    responses: {
      "101": { description: /WebSocket/ },
      "401": { description: "unauthorized" },
      "403": { description: /insufficient_scope/ },
      "429": { description: "rate_limited" },
    },
  });
  const responses = field(op, "responses") as Record<string, unknown>;
  t.notOk("404" in responses, "a resource not found is a close code (4404), never an answer to the upgrade");
});
