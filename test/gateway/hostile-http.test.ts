// What a hostile or sloppy client can send at the HTTP layer (issue 11):
// bad percent-escapes in path parameters, handlers failing in ways the
// pipeline did not expect, deeply nested JSON, ambiguous framing, HEAD on
// the health endpoints, plain GETs on a WebSocket path. Every answer is the
// JSON error body and the process keeps serving.
import { connect } from "node:net";
import t from "tap";
import { z } from "zod";
import { TroupeError } from "../../core/errors.ts";
import { defineRoute, json } from "../../gateway/route.ts";
import { probeRoutes } from "../support/probe-routes.ts";
import { field, signup, startTestTroupe } from "../support/troupe.ts";

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

const troupe = await startTestTroupe({ MAX_BODY_BYTES: "65536" }, { extraRoutes: () => [...probeRoutes(), ...failingRoutes()] });
t.teardown(() => troupe.stop());
const user = await signup(troupe);

/** Sends raw bytes; resolves with everything received until the server closes or `waitMs` passes. */
export function raw(port: number, data: string | Buffer, waitMs = 1_000): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let text = "";
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false });
    }, waitMs);
    socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
    socket.write(data);
  });
}

/** Splits a raw HTTP/1.1 response: status, lower-cased headers, body. */
export function parseResponse(text: string): { status: number; headers: Record<string, string>; body: string } {
  const split = text.indexOf("\r\n\r\n");
  const head = text.slice(0, split).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(head[0]?.split(" ")[1]), headers, body: text.slice(split + 4) };
}

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
