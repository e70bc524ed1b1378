// What a hostile or sloppy client can send at the HTTP layer:
// bad percent-escapes in path parameters, handlers failing in ways the
// pipeline did not expect, deeply nested JSON, ambiguous framing, HEAD on
// the health endpoints, plain GETs on a WebSocket path. Every answer is the
// JSON error body and the process keeps serving.
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import t, { type Test } from "tap";
import * as undici from "undici";
import { z } from "zod";
import { TroupeError } from "../../core/errors.ts";
import { defineRoute, json } from "../../gateway/route.ts";
import { probeRoutes } from "../support/probe-routes.ts";
import { field, signup, startTestTroupe } from "../support/troupe.ts";
import { parseResponse, raw } from "./raw-http.ts";

const failingRoutes = () => [
  defineRoute({
    method: "get",
    path: "/v1/test-probe/throws",
    summary: "throws synchronously",
    tag: "test",
    auth: "none",
    responses: { 200: z.object({}) },
    handler: () => {
      throw new Error("a synchronous bug");
    },
  }),
  defineRoute({
    method: "get",
    path: "/v1/test-probe/rejects",
    summary: "rejects with an error whose details cannot be serialized",
    tag: "test",
    auth: "none",
    responses: { 200: z.object({}) },
    // A BigInt in the details makes the error body itself fail to serialize.
    handler: async () => {
      throw new TroupeError("invalid_request", "bad", { details: { n: 1n } });
    },
  }),
  defineRoute({
    method: "get",
    path: "/v1/test-probe/echo/:first/:second",
    summary: "echoes its decoded path parameters",
    tag: "test",
    auth: "none",
    responses: { 200: z.object({}) },
    handler: async (ctx) => json(200, ctx.params),
  }),
];

const run = promisify(execFile);
const troupe = await startTestTroupe({ MAX_BODY_BYTES: String(1024 * 1024) }, { extraRoutes: () => [...probeRoutes(), ...failingRoutes()] });
t.teardown(() => troupe.stop());
const user = await signup(troupe);

t.test("a malformed percent-escape in a path parameter is a 400 naming it, never a crash", async (t) => {
  const session = { token: user.token };
  for (const [path, token] of [["/v1/orgs/%ff", user.token], ["/v1/agents/conversations/%E0%A4", user.testKey], ["/v1/orgs/%", user.token]] as const) {
    const res = await troupe.request("GET", path, { token });
    t.equal(res.status, 400, `${path}: ${res.text}`);
    t.equal(field(res.body, "error", "code"), "invalid_request");
    t.match(field(res.body, "error", "message"), /path parameter (org_id|id)/);
  }
  const key = await troupe.request("DELETE", "/v1/api-keys/%ff", session);
  t.equal(key.status, 400, key.text);
  t.same(field(key.body, "error", "details"), [{ path: "path.api_key_id", message: "malformed percent-escape" }]);
  const unauthenticated = await troupe.request("GET", "/v1/orgs/%ff");
  t.ok(unauthenticated.status === 400 || unauthenticated.status === 401, `no credential: ${unauthenticated.status}`);
  const echo = await troupe.request("GET", "/v1/test-probe/echo/a%20b/%C3%A9");
  t.same(echo.body, { first: "a b", second: "é" }, "well-formed escapes are still decoded");
  t.equal((await troupe.request("GET", "/healthz")).status, 200, "still serving");
});

t.test("a handler failing outside the expected paths gets a JSON 500 and the process lives", async (t) => {
  for (const path of ["/v1/test-probe/throws", "/v1/test-probe/rejects"]) {
    const res = await troupe.request("GET", path);
    t.equal(res.status, 500, `${path}: ${res.text}`);
    t.equal(res.headers.get("content-type"), "application/json");
    t.equal(field(res.body, "error", "code"), "internal_error");
    t.type(field(res.body, "error", "request_id"), "string");
  }
  t.equal((await troupe.request("GET", "/healthz")).status, 200, "still serving");
});

t.test("an oversized body gets a readable 413 from fetch, undici and curl", async (t) => {
  const url = `http://127.0.0.1:${troupe.port}/v1/test-probe/chat`;
  const headers = { "content-type": "application/json", authorization: `Bearer ${user.testKey}` };
  const big = Buffer.alloc(20 * 1024 * 1024, 0x20); // 20 MiB of JSON whitespace
  const expect413 = (t: Test, who: string, status: number, text: string): void => {
    t.equal(status, 413, `${who}: status`);
    t.equal(field(JSON.parse(text), "error", "code"), "payload_too_large", `${who}: JSON body`);
  };

  const viaFetch = await fetch(url, { method: "POST", headers, body: big });
  expect413(t, "fetch", viaFetch.status, await viaFetch.text());

  // Without a Content-Length: refused once the bytes read pass the limit.
  const chunks = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i < 20; i++) controller.enqueue(new Uint8Array(1024 * 1024).fill(0x20));
      controller.close();
    },
  });
  const streamed = await fetch(url, { method: "POST", headers, body: chunks, duplex: "half" } as RequestInit);
  expect413(t, "fetch, chunked", streamed.status, await streamed.text());

  const viaUndici = await undici.request(url, { method: "POST", headers, body: big });
  expect413(t, "undici", viaUndici.statusCode, await viaUndici.body.text());

  const file = join(mkdtempSync(join(tmpdir(), "troupe-413-")), "big.json");
  writeFileSync(file, big);
  const curl = await run("curl", ["-sS", "-w", "\n%{http_code}", "-H", "content-type: application/json", "-H", `authorization: Bearer ${user.testKey}`, "--data-binary", `@${file}`, url]);
  const [curlBody = "", curlStatus = ""] = curl.stdout.split("\n").filter((l) => l.trim() !== "");
  expect413(t, "curl", Number(curlStatus), curlBody);

  // A client that reads only once it has sent everything (as Python's http.client does).
  const sendThenRead = await new Promise<{ text: string; error: string }>((resolve) => {
    const socket = connect(troupe.port, "127.0.0.1");
    socket.pause();
    let text = "";
    let error = "";
    socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
    socket.on("error", (e) => (error = e.message));
    socket.on("close", () => resolve({ text, error }));
    socket.write(`POST /v1/test-probe/chat HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${user.testKey}\r\ncontent-type: application/json\r\ncontent-length: ${big.length}\r\n\r\n`);
    socket.write(big, () => {
      socket.resume();
      setTimeout(() => socket.end(), 500);
    });
  });
  const answer = parseResponse(sendThenRead.text);
  expect413(t, `send, then read (${sendThenRead.error || "no socket error"})`, answer.status, answer.body || "{}");

  t.equal((await troupe.request("POST", "/v1/test-probe/chat", { token: user.testKey, body: { n: 1 } })).status, 200, "still serving");
});

t.test("a client that never stops sending still gets the whole 413, and reading stops", async (t) => {
  const socket = connect(troupe.port, "127.0.0.1");
  let text = "";
  let sent = 0;
  socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
  socket.on("error", () => undefined);
  socket.write(`POST /v1/test-probe/chat HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${user.testKey}\r\ncontent-type: application/json\r\ncontent-length: 100000000000\r\n\r\n`);
  const chunk = Buffer.alloc(256 * 1024, 0x20);
  const started = Date.now();
  // Sends as fast as the server reads, for up to 6 s.
  while (Date.now() - started < 6_000 && !text.endsWith("\n")) {
    if (socket.writableLength < 4 * chunk.length) {
      socket.write(chunk);
      sent += chunk.length;
    }
    await new Promise((r) => setImmediate(r));
  }
  const elapsed = Date.now() - started;
  const res = parseResponse(text);
  t.equal(res.status, 413);
  t.equal(res.headers["connection"], "close");
  t.equal(field(JSON.parse(res.body), "error", "code"), "payload_too_large", "the complete JSON body arrived");
  t.ok(elapsed < 4_000, `the answer completed after ${elapsed} ms (limit 2 s of lingering)`);
  // Reading stopped: what the client manages to push now is only what the socket buffers hold.
  const before = sent;
  const until = Date.now() + 500;
  while (Date.now() < until) {
    if (socket.writableLength < 4 * chunk.length) {
      socket.write(chunk);
      sent += chunk.length;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  t.ok(sent - before < 32 * 1024 * 1024, `after the answer the server took at most buffer-sized input (${sent - before} bytes)`);
  socket.destroy();
});

t.test("conflicting framing is refused with 400 and the connection closes; a smuggled request is never served", async (t) => {
  const head = (framing: string) => `POST /v1/auth/login HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${framing}\r\n`;
  const smuggled = "GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n";
  const framings = ["content-length: 2\r\ncontent-length: 40\r\n", "content-length: 40\r\ncontent-length: 2\r\n"];
  for (const framing of framings) {
    const alone = await raw(troupe.port, head(framing) + "{}");
    const res = parseResponse(alone.text);
    t.equal(res.status, 400, `${JSON.stringify(framing)}: ${alone.text}`);
    t.equal(res.headers["content-type"], "application/json");
    t.equal(field(JSON.parse(res.body), "error", "code"), "invalid_request");
    t.ok(alone.closed, "connection closed");

    // With a second request pipelined behind it, uWS closes at once (it
    // refuses to parse past a pending response): the smuggled request is
    // not served, and nothing but the 400 may come back.
    const attack = await raw(troupe.port, head(framing) + "{}" + smuggled);
    t.notMatch(attack.text, /200 OK/, "the smuggled request is not served");
    t.ok(attack.text === "" || parseResponse(attack.text).status === 400, attack.text);
    t.ok(attack.closed, "connection closed");
  }
  const same = await raw(troupe.port, `GET /healthz HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\ncontent-length: 0\r\n\r\n`, 300);
  t.equal(parseResponse(same.text).status, 200, "two equal Content-Lengths are one length");
});

t.test("JSON nested deeper than 64 levels is a 400 naming where, at any depth", async (t) => {
  const nest = (levels: number, key: string): string => `{"${key}":`.repeat(levels) + "1" + "}".repeat(levels);
  const deepMetadata = `{"content":"hello","metadata":${nest(6_000, "a")}}`;
  const index = await troupe.request("POST", "/v1/embeddings/index", { token: user.testKey, rawBody: deepMetadata, headers: { "content-type": "application/json" } });
  t.equal(index.status, 400, index.text.slice(0, 300));
  t.equal(field(index.body, "error", "code"), "invalid_request");
  const detail = (field(index.body, "error", "details") as { path: string; message: string }[])[0];
  // The root object is level 1, metadata level 2: the 65th level sits 63 keys below metadata.
  t.equal(detail?.path, ["body", "metadata", ...Array<string>(63).fill("a")].join("."));
  t.match(detail?.message, /deeper than 64/);

  const deepTools = JSON.stringify({
    model: "simulated-chat",
    messages: [{ role: "user", content: "hi" }],
    tools: [{ type: "function", function: { name: "f", parameters: "PARAMS" } }],
  }).replace('"PARAMS"', "[".repeat(50_000) + "]".repeat(50_000));
  const chat = await troupe.request("POST", "/v1/chat/completions", { token: user.testKey, rawBody: deepTools, headers: { "content-type": "application/json" } });
  t.equal(chat.status, 400, chat.text.slice(0, 300));
  const chatPath = (field(chat.body, "error", "details") as { path: string }[])[0]?.path ?? "";
  t.ok(chatPath.startsWith("body.tools.0.function.parameters.0.0"), chatPath.slice(0, 80));

  // Escaped quotes and brackets inside strings do not count; array indexes are named.
  const tricky = `{"content":"[[[{{{","metadata":{"k\\"[":[0,${nest(70, "b")}]}}`;
  const trickyRes = await troupe.request("POST", "/v1/embeddings/index", { token: user.testKey, rawBody: tricky, headers: { "content-type": "application/json" } });
  const trickyPath = (field(trickyRes.body, "error", "details") as { path: string }[])[0]?.path ?? "";
  t.ok(trickyPath.startsWith('body.metadata.k"[.1.b.b'), trickyPath.slice(0, 60));

  // 64 levels in all pass the body's depth limit; vector metadata then has
  // its own, smaller cap (VECTOR_METADATA_MAX_DEPTH), a different 400.
  const atLimit = `{"content":"hello","metadata":${nest(63, "a")}}`;
  const ok = await troupe.request("POST", "/v1/embeddings/index", { token: user.testKey, rawBody: atLimit, headers: { "content-type": "application/json" } });
  t.notMatch(String(field(ok.body, "error", "message") ?? ""), /deeper than 64/, `64 levels in all pass the body depth limit (${ok.status})`);
  t.equal((await troupe.request("GET", "/healthz")).status, 200, "still serving");
});
