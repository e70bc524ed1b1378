// The OpenAPI document lists every served route with its errors; health
// endpoints; graceful shutdown drains in-flight requests.
import t from "tap";
import { probeRoutes } from "../support/probe-routes.ts";
import { field, startTestTroupe } from "../support/troupe.ts";

t.test("openapi.json: every route, its parameters, body schema and errors", async (t) => {
  const troupe = await startTestTroupe({}, { extraRoutes: () => probeRoutes() });
  const res = await troupe.request("GET", "/v1/openapi.json");
  t.equal(res.status, 200);
  t.equal(field(res.body, "openapi"), "3.1.0");
  const paths = field(res.body, "paths") as Record<string, Record<string, unknown>>;
  const expected: [string, string][] = [
    ["/v1/auth/signup", "post"],
    ["/v1/auth/login", "post"],
    ["/v1/auth/logout", "post"],
    ["/v1/account", "get"],
    ["/v1/orgs", "get"],
    ["/v1/orgs", "post"],
    ["/v1/orgs/{org_id}", "get"],
    ["/v1/orgs/{org_id}/projects", "post"],
    ["/v1/projects/{project_id}/environments", "post"],
    ["/v1/orgs/{org_id}/invitations", "post"],
    ["/v1/invitations/accept", "post"],
    ["/v1/environments/{environment_id}/api-keys", "post"],
    ["/v1/environments/{environment_id}/api-keys", "get"],
    ["/v1/api-keys/{api_key_id}", "delete"],
    ["/v1/test-probe/chat", "post"],
    ["/healthz", "get"],
    ["/readyz", "get"],
  ];
  for (const [path, method] of expected) t.ok(paths[path]?.[method], `${method.toUpperCase()} ${path} documented`);
  t.ok(troupe.routes.length > 30, `${troupe.routes.length} routes served`);
  for (const route of troupe.routes) {
    const documented = route.path.replace(/:([A-Za-z_]+)/g, "{$1}");
    t.ok(paths[documented]?.[route.method], `served ${route.method.toUpperCase()} ${route.path} is documented`);
  }
  t.ok(paths["/v1/agents/conversations/{id}/events"]?.["get"], "the WebSocket upgrade is documented");
  const createKey = paths["/v1/environments/{environment_id}/api-keys"]?.["post"];
  t.match(createKey, {
    parameters: [{ name: "environment_id", in: "path", required: true }],
    requestBody: { content: { "application/json": { schema: { properties: { scopes: { type: "array" } } } } } },
    responses: { "201": {}, "400": {}, "401": {}, "403": {}, "404": {} },
  });
  const probe = paths["/v1/test-probe/chat"]?.["post"];
  t.match(probe, { "x-troupe-scope": "chat", responses: { "403": { description: /insufficient_scope/ }, "429": {} } });
  await troupe.stop();
});

t.test("signup can be turned off", async (t) => {
  const troupe = await startTestTroupe({ SIGNUP_ENABLED: "false" });
  const res = await troupe.request("POST", "/v1/auth/signup", { body: { email: "x@example.test", password: "long enough pass" } });
  t.equal(res.status, 403);
  t.match(field(res.body, "error", "message"), /turned off/);
  await troupe.stop();
});

t.test("healthz and readyz answer 200 while serving", async (t) => {
  const troupe = await startTestTroupe();
  t.equal((await troupe.request("GET", "/healthz")).status, 200);
  t.match((await troupe.request("GET", "/readyz")).body, { status: "ready" });
  await troupe.stop();
});

t.test("graceful shutdown: in-flight requests finish, new connections are refused", async (t) => {
  const troupe = await startTestTroupe({}, { extraRoutes: () => probeRoutes() });
  const inflight = troupe.request("GET", "/v1/test-probe/slow?ms=400");
  await new Promise((r) => setTimeout(r, 100));
  const stopping = troupe.stop();
  const res = await inflight;
  t.equal(res.status, 200, "the in-flight request completed");
  t.same(res.body, { waited: 400 });
  await stopping;
  await t.rejects(fetch(`http://127.0.0.1:${troupe.port}/healthz`), "no longer accepting");
});
