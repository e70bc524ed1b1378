// HEAD and Connection: close as an HTTP client relies on them, over raw
// sockets: a HEAD answer is the GET's head (its status, headers and
// Content-Length) and never a body, on every GET route, the plain pages, the
// files path and whatever no route takes (404, 405); the connection then
// carries the next request; and a request saying `Connection: close` gets
// its answer and a closed connection, whatever its method and status.
import t from "tap";
import { signup, startTestTroupe } from "../support/troupe.ts";
import { keepAlive, raw, type RawAnswer } from "./raw-http.ts";

const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());
const user = await signup(troupe, "head");

// The same request id in the GET and the HEAD: error bodies carry it, so their lengths match only then.
const request = (method: string, path: string, id: string, extra = "") =>
  `${method} ${path} HTTP/1.1\r\nhost: x\r\nx-request-id: ${id}\r\nauthorization: Bearer ${user.testKey}\r\n${extra}\r\n`;

/** Sends one request on its own connection; returns its answer and what followed it within 150 ms. */
async function alone(method: string, path: string, id: string): Promise<{ answer: RawAnswer; after: string }> {
  const conn = await keepAlive(troupe.port);
  try {
    const answer = await conn.send(request(method, path, id));
    // Anything sent after a HEAD answer's head is a body it must not have.
    const after = await conn.rest(150);
    return { answer, after };
  } finally {
    conn.close();
  }
}

// Every declared GET route (path parameters filled with a value that exists nowhere), the pages, the files path, and paths no GET serves.
const getPaths = troupe.routes.filter((r) => r.method === "get").map((r) => r.path.replace(/:[^/]+/g, "x"));
const otherPaths = ["/healthz", "/readyz", "/v1/openapi.json", "/docs", "/v1/files/file_AAAAAAAAAAAAAAAAAAAAAA", "/anthropic", "/no/such/path", "/anthropic/v1/messages", "/v1/auth/login"];

t.test("HEAD answers as GET does, without a body, on every route and on the paths no route takes", async (t) => {
  t.ok(getPaths.length > 5, "the GET routes are found");
  let n = 0;
  for (const path of [...getPaths, ...otherPaths]) {
    n += 1;
    const id = `head-probe-${n}`;
    const get = await alone("GET", path, id);
    const head = await alone("HEAD", path, id);
    t.equal(head.answer.status, get.answer.status, `HEAD ${path}: the GET's status`);
    t.equal(head.answer.headers["content-length"], String(Buffer.byteLength(get.answer.body, "latin1")), `HEAD ${path}: the GET's Content-Length`);
    t.equal(head.answer.headers["content-type"], get.answer.headers["content-type"], `HEAD ${path}: the GET's Content-Type`);
    t.equal(head.answer.headers["allow"], get.answer.headers["allow"], `HEAD ${path}: the GET's Allow`);
    t.equal(head.after, "", `HEAD ${path}: no body`);
  }
});

t.test("one keep-alive connection carries HEADs and then a GET that parses", async (t) => {
  const conn = await keepAlive(troupe.port);
  t.teardown(() => conn.close());
  for (const path of ["/anthropic", "/healthz", "/v1/models", "/anthropic/v1/messages"]) {
    const head = await conn.send(request("HEAD", path, "keep-alive-head"));
    t.ok(head.status >= 200, `HEAD ${path}: ${head.status}`);
    t.notOk(conn.closed, `HEAD ${path}: the connection stays open`);
  }
  const get = await conn.send(request("GET", "/healthz", "keep-alive-get"));
  t.equal(get.status, 200, "the GET after the HEADs is read as an answer");
  t.same(JSON.parse(get.body), { status: "ok" });
  t.equal(await conn.rest(100), "", "nothing left over");
});

t.test("Connection: close is honoured on every method and status", async (t) => {
  const body = (length: number) => `content-type: application/json\r\ncontent-length: ${length}\r\n`;
  const cases: { method: string; path: string; extra?: string; payload?: string; status: number }[] = [
    { method: "GET", path: "/healthz", status: 200 },
    { method: "HEAD", path: "/healthz", status: 200 },
    { method: "HEAD", path: "/v1/models", status: 200 },
    { method: "GET", path: "/v1/models", status: 200 },
    { method: "HEAD", path: "/anthropic", status: 200 },
    { method: "GET", path: "/no/such/path", status: 404 },
    { method: "HEAD", path: "/anthropic/v1/messages", status: 405 },
    { method: "DELETE", path: "/healthz", status: 405 },
    { method: "HEAD", path: "/v1/files/file_AAAAAAAAAAAAAAAAAAAAAA", status: 404 },
    { method: "POST", path: "/v1/auth/login", extra: body(2), payload: "{}", status: 403 },
    { method: "PATCH", path: "/v1/orgs", extra: body(2), payload: "{}", status: 405 },
  ];
  for (const c of cases) {
    const started = Date.now();
    const { text, closed } = await raw(troupe.port, request(c.method, c.path, "close-probe", `connection: close\r\n${c.extra ?? ""}`) + (c.payload ?? ""), 2_000);
    t.match(text, new RegExp(`^HTTP/1\\.1 ${c.status} `), `${c.method} ${c.path}: answered ${c.status}`);
    t.ok(closed && Date.now() - started < 2_000, `${c.method} ${c.path}: closed by the server after the answer`);
  }
});
