// The newcomer walk-through (docs/getting-started.md, "Scoped keys and revocation"), over HTTP: signup, login, environment,
// a key scoped to images, then 403 insufficient_scope / 401 wrong key / 401
// after revoking.
import t from "tap";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";
import { probeRoutes } from "../support/probe-routes.ts";
import { MAX_PASSWORD_CHARS } from "../../tenancy/passwords.ts";

const troupe = await startTestTroupe({}, { extraRoutes: () => probeRoutes() });
t.teardown(() => troupe.stop());

t.test("signup, login, environment, scoped key, scope/401/revocation", async (t) => {
  const user = await signup(troupe, "newcomer");
  t.match(user.testKey, /^trp_test_[A-Za-z0-9_-]{32}$/, "development environment comes with a test key");

  const login = await troupe.request("POST", "/v1/auth/login", { body: { email: user.email, password: "correct horse battery" } });
  t.equal(login.status, 200);
  const session = str(login.body, "session_token");
  t.match(login.headers.get("set-cookie") ?? "", /troupe_session=.*HttpOnly/);

  const env = await troupe.request("POST", `/v1/projects/${user.projectId}/environments`, { token: session, body: { name: "staging" } });
  t.equal(env.status, 201);
  const envId = str(env.body, "environment", "id");
  t.match(str(env.body, "test_key", "key"), /^trp_test_/, "non-production environment gets its test key, once");

  const created = await troupe.request("POST", `/v1/environments/${envId}/api-keys`, { token: session, body: { name: "images only", scopes: ["images"], live: false } });
  t.equal(created.status, 201);
  const key = str(created.body, "key");
  t.match(key, /^trp_test_/);
  t.match(created.body, { scopes: ["images"], live: false, environment_id: envId, project_id: user.projectId, organization_id: user.orgId, revoked_at: null });

  const listed = await troupe.request("GET", `/v1/environments/${envId}/api-keys`, { token: session });
  t.equal(listed.status, 200);
  t.notOk(listed.text.includes(key), "listing never shows the key");
  t.equal((field(listed.body, "data") as unknown[]).length, 2);

  const allowed = await troupe.request("POST", "/v1/test-probe/images", { token: key, body: { n: 1 } });
  t.equal(allowed.status, 200);

  const wrongScope = await troupe.request("POST", "/v1/test-probe/chat", { token: key, body: { n: 1 } });
  t.equal(wrongScope.status, 403);
  t.equal(field(wrongScope.body, "error", "code"), "insufficient_scope");

  const wrongKey = await troupe.request("POST", "/v1/test-probe/images", { token: key.slice(0, -2) + "zz", body: { n: 1 } });
  t.equal(wrongKey.status, 401);
  t.equal(field(wrongKey.body, "error", "code"), "unauthorized");

  const revoke = await troupe.request("DELETE", `/v1/api-keys/${str(created.body, "id")}`, { token: session });
  t.equal(revoke.status, 200);
  t.type(field(revoke.body, "revoked_at"), "string");
  const afterRevoke = await troupe.request("POST", "/v1/test-probe/images", { token: key, body: { n: 1 } });
  t.equal(afterRevoke.status, 401, "revoked key refused at once on the revoking process");
  t.match(field(afterRevoke.body, "error", "message"), /revoked/);
});

t.test("an empty scope list grants every category", async (t) => {
  const user = await signup(troupe);
  for (const scope of ["chat", "images"]) {
    const res = await troupe.request("POST", `/v1/test-probe/${scope}`, { token: user.testKey, body: { n: 2 } });
    t.equal(res.status, 200, scope);
  }
});

t.test("credentials of the wrong kind are 403, missing or unknown ones 401", async (t) => {
  const user = await signup(troupe);
  const sessionOnAi = await troupe.request("POST", "/v1/test-probe/chat", { token: user.token, body: { n: 1 } });
  t.equal(sessionOnAi.status, 403);
  t.equal(field(sessionOnAi.body, "error", "code"), "forbidden");
  const keyOnAccount = await troupe.request("GET", "/v1/account", { token: user.testKey });
  t.equal(keyOnAccount.status, 403);
  const keyOnLogin = await troupe.request("POST", "/v1/auth/login", { token: user.testKey, body: { email: user.email, password: "x" } });
  t.equal(keyOnLogin.status, 403, "login refuses API keys");
  const keyOnKeys = await troupe.request("POST", `/v1/environments/${user.developmentEnvId}/api-keys`, { token: user.testKey, body: { name: "x" } });
  t.equal(keyOnKeys.status, 403, "key management refuses API keys");
  const none = await troupe.request("POST", "/v1/test-probe/chat", { body: { n: 1 } });
  t.equal(none.status, 401);
  const garbage = await troupe.request("GET", "/v1/account", { token: "nonsense" });
  t.equal(garbage.status, 401);
  const malformed = await troupe.request("GET", "/v1/account", { headers: { authorization: "Basic abc" } });
  t.equal(malformed.status, 401);
  const unknownSession = await troupe.request("GET", "/v1/account", { token: "sess_doesnotexist" });
  t.equal(unknownSession.status, 401);
});

t.test("login: wrong password 401 up to the length limit, 400 past it for every account; logout ends the session", async (t) => {
  const user = await signup(troupe);
  for (const password of ["", "short", "x".repeat(MAX_PASSWORD_CHARS)]) {
    const res = await troupe.request("POST", "/v1/auth/login", { body: { email: user.email, password } });
    t.equal(res.status, 401, `password of length ${password.length}`);
  }
  // Past the limit the length is refused before any hash is computed, for a known and an unknown email alike.
  for (const email of [user.email, "nobody@example.test"]) {
    const res = await troupe.request("POST", "/v1/auth/login", { body: { email, password: "x".repeat(MAX_PASSWORD_CHARS + 1) } });
    t.equal(res.status, 400, `${email}: a password over ${MAX_PASSWORD_CHARS} characters`);
    t.equal(field(res.body, "error", "details", 0, "path"), "body.password");
  }
  const unknownUser = await troupe.request("POST", "/v1/auth/login", { body: { email: "nobody@example.test", password: "whatever-123" } });
  t.equal(unknownUser.status, 401);
  const account = await troupe.request("GET", "/v1/account", { token: user.token });
  t.equal(account.status, 200);
  t.match(account.body, { user: { email: user.email }, memberships: [{ role: "owner", organization: { id: user.orgId } }] });
  t.equal((await troupe.request("POST", "/v1/auth/logout", { token: user.token })).status, 204);
  t.equal((await troupe.request("GET", "/v1/account", { token: user.token })).status, 401);
});

t.test("signup: duplicate email 409, short password 400", async (t) => {
  const user = await signup(troupe);
  const dup = await troupe.request("POST", "/v1/auth/signup", { body: { email: user.email.toUpperCase(), password: "another long one" } });
  t.equal(dup.status, 409);
  const short = await troupe.request("POST", "/v1/auth/signup", { body: { email: "s@example.test", password: "short" } });
  t.equal(short.status, 400);
  t.match(field(short.body, "error", "details"), [{ path: "body.password" }]);
});

t.test("cookie sessions need the CSRF token for changes", async (t) => {
  const user = await signup(troupe);
  const cookie = `troupe_session=${user.token}`;
  const read = await troupe.request("GET", "/v1/account", { headers: { cookie } });
  t.equal(read.status, 200, "reads need no CSRF token");
  const noToken = await troupe.request("POST", "/v1/orgs", { headers: { cookie }, body: { name: "x" } });
  t.equal(noToken.status, 403);
  t.match(field(noToken.body, "error", "message"), /CSRF/);
  const wrongToken = await troupe.request("POST", "/v1/orgs", { headers: { cookie, "x-csrf-token": "nope" }, body: { name: "x" } });
  t.equal(wrongToken.status, 403);
  const ok = await troupe.request("POST", "/v1/orgs", { headers: { cookie, "x-csrf-token": user.csrf }, body: { name: "x" } });
  t.equal(ok.status, 201);
  const bearer = await troupe.request("POST", "/v1/orgs", { token: user.token, body: { name: "y" } });
  t.equal(bearer.status, 201, "bearer sessions are not subject to CSRF");
});

t.test("request ids: echoed when given, generated otherwise", async (t) => {
  const given = await troupe.request("GET", "/healthz", { headers: { "x-request-id": "abc-123" } });
  t.equal(given.headers.get("x-request-id"), "abc-123");
  const generated = await troupe.request("GET", "/v1/account");
  const id = generated.headers.get("x-request-id");
  t.ok(id && id.length > 10);
  t.equal(field(generated.body, "error", "request_id"), id, "error body carries the request id");
});
