// Answers the HTTP layer gives outside the routes: HEAD on the
// health endpoints, 426 on a WebSocket path (once admitted), 405 with Allow, 414 for long
// URLs, and the JSON bodies of the 400/431/505 that uWS's own parser
// writes (patched by scripts/patch-uws-errors.ts). Each over a raw socket,
// as a hostile client would send it, and each documented in OpenAPI.
import t from "tap";
import { field, signup, startTestTroupe } from "../support/troupe.ts";
import { parseResponse, raw } from "./raw-http.ts";

const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());
const get = (path: string, extra = "") => `GET ${path} HTTP/1.1\r\nhost: x\r\n${extra}\r\n`;

/** The JSON error body every answer must carry. */
function errorOf(text: string): { status: number; code: unknown; headers: Record<string, string> } {
  const res = parseResponse(text);
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    body = undefined;
  }
  return { status: res.status, code: field(body, "error", "code"), headers: res.headers };
}

t.test("HEAD on /healthz and /readyz answers as GET does, without a body", async (t) => {
  for (const path of ["/healthz", "/readyz"]) {
    const getRes = parseResponse((await raw(troupe.port, get(path), 300)).text);
    const { text } = await raw(troupe.port, `HEAD ${path} HTTP/1.1\r\nhost: x\r\n\r\n`, 300);
    const head = parseResponse(text);
    t.equal(head.status, 200, `HEAD ${path}: ${text}`);
    t.equal(head.headers["content-type"], "application/json");
    t.equal(head.headers["content-length"], String(getRes.body.length), "the Content-Length a GET gets");
    t.equal(head.body, "", "no body");
  }
});

t.test("a plain GET on the WebSocket path is 401 without a credential, 426 with Upgrade: websocket with one; other methods 405", async (t) => {
  const path = "/v1/agents/conversations/00000000-0000-4000-8000-000000000000/events";
  const anonymous = errorOf((await raw(troupe.port, get(path), 300)).text);
  t.equal(anonymous.status, 401, "credentials are checked first");
  t.equal(anonymous.code, "unauthorized");
  const user = await signup(troupe, "upgrade");
  const plain = errorOf((await raw(troupe.port, get(path, `authorization: Bearer ${user.testKey}\r\n`), 300)).text);
  t.equal(plain.status, 426);
  t.equal(plain.code, "upgrade_required");
  t.equal(plain.headers["upgrade"], "websocket");
  const post = errorOf((await raw(troupe.port, "POST /v1/agents/conversations/x/events HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n", 300)).text);
  t.equal(post.status, 405);
  t.equal(post.headers["allow"], "GET");
});

t.test("an undeclared method on a known path is 405 with Allow", async (t) => {
  for (const [method, path, allow] of [["PATCH", "/v1/orgs", "GET, HEAD, POST"], ["POST", "/healthz", "GET, HEAD"], ["DELETE", "/v1/openapi.json", "GET, HEAD"]] as const) {
    const res = errorOf((await raw(troupe.port, `${method} ${path} HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n`, 300)).text);
    t.equal(res.status, 405, `${method} ${path}`);
    t.equal(res.code, "method_not_allowed");
    t.equal(res.headers["allow"], allow);
  }
});

t.test("OpenAPI documents 405, 414, 431, 505 on every operation, 426 on the WebSocket path, HEAD on health", async (t) => {
  const doc = (await troupe.request("GET", "/v1/openapi.json")).body;
  const paths = field(doc, "paths") as Record<string, Record<string, { responses: Record<string, unknown> }>>;
  let operations = 0;
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(item)) {
      operations++;
      for (const status of ["405", "414", "431", "505"]) t.ok(operation.responses[status], `${method.toUpperCase()} ${path} documents ${status}`);
    }
  }
  t.ok(operations > 30);
  t.match(paths["/v1/agents/conversations/{id}/events"]?.["get"]?.responses, { "101": {}, "426": { description: /upgrade_required/ } });
  t.ok(paths["/healthz"]?.["head"] && paths["/readyz"]?.["head"], "HEAD documented");
  t.match(field(doc, "components", "schemas", "ParserError"), { properties: { error: { required: ["code"] } } });
});

t.test("over-long URLs are 414 from the gateway, over-long heads 431 from uWS, both JSON", async (t) => {
  const query = "q=" + "a".repeat(10 * 1024);
  for (const path of [`/v1/models?${query}`, `/healthz?${query}`, `/no/such/path?${query}`, `/v1/orgs/${"x".repeat(10 * 1024)}`]) {
    const res = errorOf((await raw(troupe.port, get(path), 500)).text);
    t.equal(res.status, 414, path.slice(0, 30));
    t.equal(res.code, "uri_too_long");
  }
  const shortEnough = errorOf((await raw(troupe.port, get(`/healthz?${"a".repeat(7 * 1024)}`), 300)).text);
  t.equal(shortEnough.status, 200, "a 7 KiB URL is served");
  const bigHead = await raw(troupe.port, get("/healthz", `x-big: ${"a".repeat(17 * 1024)}\r\n`));
  const res = errorOf(bigHead.text);
  t.equal(res.status, 431, bigHead.text.slice(0, 200));
  t.equal(res.code, "headers_too_large");
  t.equal(res.headers["content-type"], "application/json");
  t.ok(bigHead.closed, "uWS closes after its own errors");
});

t.test("uWS's own 505 and 400 are JSON error bodies", async (t) => {
  const cases = [
    { name: "HTTP/1.0", data: "GET /healthz HTTP/1.0\r\nhost: x\r\n\r\n", status: 505, code: "http_version_not_supported" },
    { name: "unknown version", data: "GET /healthz HTTP/7.1\r\nhost: x\r\n\r\n", status: 505, code: "http_version_not_supported" },
    // uWS reads a malformed request line as a bad version.
    { name: "malformed request line", data: "GET /health z HTTP/1.1\r\nhost: x\r\n\r\n", status: 505, code: "http_version_not_supported" },
    { name: "empty header name", data: "GET /healthz HTTP/1.1\r\n: x\r\n\r\n", status: 400, code: "invalid_request" },
    { name: "Content-Length with Transfer-Encoding", data: "POST /v1/auth/login HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n", status: 400, code: "invalid_request" },
    { name: "signed Content-Length", data: "POST /v1/auth/login HTTP/1.1\r\nhost: x\r\ncontent-length: +2\r\n\r\n{}", status: 400, code: "invalid_request" },
  ];
  for (const c of cases) {
    const { text, closed } = await raw(troupe.port, c.data);
    const res = errorOf(text);
    t.equal(res.status, c.status, `${c.name}: ${text.slice(0, 120)}`);
    t.equal(res.code, c.code, `${c.name}: JSON body`);
    t.equal(res.headers["content-type"], "application/json", c.name);
    t.ok(closed, `${c.name}: closed`);
  }
  t.equal((await troupe.request("GET", "/healthz")).status, 200, "still serving");
});
