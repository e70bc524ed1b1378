// What a stranger's body may cost (docs/security-and-limits.md, "Request
// bodies by route"), over real sockets: login and signup, and the other form
// routes, take a 16 KiB body at most (413 on the declared Content-Length and
// while a chunked body streams in, before anything is parsed); a 400 names
// a few unknown fields and counts the rest instead of echoing them all; a
// password longer than signup allows is refused before it is hashed.
import t from "tap";
import { formBodyMaxBytes } from "../../gateway/body-limits.ts";
import { field, signup, startTestTroupe } from "../support/troupe.ts";
import { parseResponse, raw } from "./raw-http.ts";

const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());
const user = await signup(troupe, "limits");

/** A JSON object of `count` unknown keys (`k0`, `k1`, …) besides `base`. */
const unknownKeys = (count: number, base: Record<string, unknown> = {}, prefix = "k"): string => {
  const keys: Record<string, unknown> = { ...base };
  for (let i = 0; i < count; i++) keys[`${prefix}${i}`] = 0;
  return JSON.stringify(keys);
};

t.test("login and signup refuse a body past 16 KiB with 413 before parsing it", async (t) => {
  // The probe's body: 400,000 unknown keys, 5.5 MB.
  const huge = unknownKeys(400_000, { email: "a@example.test", password: "x" }, "key");
  t.ok(huge.length > 5_000_000);
  for (const path of ["/v1/auth/login", "/v1/auth/signup"]) {
    const res = await troupe.request("POST", path, { rawBody: huge, headers: { "content-type": "application/json" } });
    t.equal(res.status, 413, `${path}: ${res.text.slice(0, 200)}`);
    t.equal(field(res.body, "error", "code"), "payload_too_large");
    t.same(field(res.body, "error", "details"), { max_bytes: formBodyMaxBytes });
    t.ok(res.text.length < 1024, `${path}: a short answer (${res.text.length} bytes)`);
  }
  // Just past the limit, declared: still 413; a 9 MB password never reaches the hash.
  const password = "p".repeat(9 * 1024 * 1024);
  const long = await troupe.request("POST", "/v1/auth/login", { body: { email: user.email, password } });
  t.equal(long.status, 413);
  t.equal((await troupe.request("GET", "/healthz")).status, 200, "still serving");
});

t.test("a chunked body is refused once what arrived passes the limit", async (t) => {
  const chunk = "x".repeat(formBodyMaxBytes);
  const body = `{"email":"a@example.test","password":"${chunk}"}`;
  const request =
    "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
    `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
  const answer = parseResponse((await raw(troupe.port, request)).text);
  t.equal(answer.status, 413);
  t.match(answer.body, /"code":"payload_too_large"/);
});

t.test("a body within the limit is parsed; a 400 names five unknown fields and counts the rest", async (t) => {
  const body = unknownKeys(1_000, { email: user.email, password: "correct horse battery" });
  t.ok(body.length < formBodyMaxBytes, `${body.length} bytes`);
  const res = await troupe.request("POST", "/v1/auth/login", { rawBody: body, headers: { "content-type": "application/json" } });
  t.equal(res.status, 400, res.text.slice(0, 300));
  t.same(field(res.body, "error", "details"), [{ path: "body", message: "unknown field(s): k0, k1, k2, k3, k4 and 995 more" }]);
  t.ok(res.text.length < 1024, `a short answer (${res.text.length} bytes)`);
  const ok = await troupe.request("POST", "/v1/auth/login", { body: { email: user.email, password: "correct horse battery" } });
  t.equal(ok.status, 200, "a well-formed login within the limit is served");
});

t.test("a route with the general limit also names only five unknown fields", async (t) => {
  const body = unknownKeys(50_000, { content: "a passage" });
  t.ok(body.length > formBodyMaxBytes, "bigger than a form, within MAX_BODY_BYTES");
  const res = await troupe.request("POST", "/v1/embeddings/index", { token: user.testKey, rawBody: body, headers: { "content-type": "application/json" } });
  t.equal(res.status, 400);
  t.match(field(res.body, "error", "message"), /unknown field\(s\): k0, k1, k2, k3, k4 and 49,995 more/);
  t.ok(res.text.length < 1024, `a short answer (${res.text.length} bytes)`);
});

t.test("a password longer than 1,024 characters is a 400 naming it, on login and signup", async (t) => {
  const password = "p".repeat(1025);
  const login = await troupe.request("POST", "/v1/auth/login", { body: { email: user.email, password } });
  t.equal(login.status, 400, login.text);
  t.match(field(login.body, "error", "details"), [{ path: "body.password", message: /at most 1024/ }]);
  const created = await troupe.request("POST", "/v1/auth/signup", { body: { email: `long-${Date.now()}@example.test`, password } });
  t.equal(created.status, 400, created.text);
  t.match(field(created.body, "error", "details"), [{ path: "body.password" }]);
});

t.test("the other form routes take 16 KiB too; the API routes keep MAX_BODY_BYTES", async (t) => {
  const padded = JSON.stringify({ token: "t".repeat(formBodyMaxBytes) });
  for (const [method, path] of [
    ["POST", "/v1/invitations/accept"],
    ["POST", "/v1/orgs"],
    ["POST", `/v1/environments/${user.developmentEnvId}/api-keys`],
    ["PUT", `/v1/projects/${user.projectId}/budget`],
    ["POST", "/v1/webhooks"],
    ["DELETE", `/v1/orgs/${user.orgId}`],
  ] as const) {
    const res = await troupe.request(method, path, { token: user.token, rawBody: padded, headers: { "content-type": "application/json" } });
    t.equal(res.status, 413, `${method} ${path}: ${res.text.slice(0, 200)}`);
  }
  const passage = await troupe.request("POST", "/v1/embeddings/index", { token: user.testKey, body: { content: "a long passage ".repeat(2_000) } });
  t.equal(passage.status, 200, `a 30 KB passage is still indexed: ${passage.text.slice(0, 200)}`);
});

t.test("every route a stranger or a dashboard session can send a body to declares the form limit", async (t) => {
  const readsBody = (r: (typeof troupe.routes)[number]) => r.method === "post" || r.method === "put" || r.method === "patch" || r.body !== undefined;
  const unbounded = troupe.routes.filter((r) => (r.auth === "none" || r.auth === "session") && readsBody(r) && (r.maxBodyBytes ?? Infinity) > formBodyMaxBytes);
  t.same(unbounded.map((r) => `${r.method} ${r.path}`), []);
  t.ok(troupe.routes.filter((r) => r.maxBodyBytes === formBodyMaxBytes).length >= 12, "the form routes are many");
});
