// Malformed JSON, wrong types, unknown fields, oversized bodies, wrong
// content types: all 4xx with a useful message, never a 5xx, never a
// crash; plus a fuzz of the body parser with random bytes.
import { randomBytes } from "node:crypto";
import t from "tap";
import { probeRoutes } from "../support/probe-routes.ts";
import { field, signup, startTestTroupe } from "../support/troupe.ts";

const troupe = await startTestTroupe({ MAX_BODY_BYTES: "4096" }, { extraRoutes: () => probeRoutes() });
t.teardown(() => troupe.stop());
const user = await signup(troupe);
const probe = "/v1/test-probe/chat";

t.test("each malformed request gets a precise 4xx", async (t) => {
  const cases: { name: string; raw?: string | Uint8Array; body?: unknown; type?: string; status: number; code: string; path?: string }[] = [
    { name: "malformed JSON", raw: '{"n": 1', status: 400, code: "invalid_request", path: "body" },
    { name: "wrong type", body: { n: "one" }, status: 400, code: "invalid_request", path: "body.n" },
    { name: "out of range", body: { n: 11 }, status: 400, code: "invalid_request", path: "body.n" },
    { name: "unknown field", body: { n: 1, extra: true }, status: 400, code: "invalid_request", path: "body" },
    { name: "array instead of object", body: [1, 2], status: 400, code: "invalid_request", path: "body" },
    { name: "null body", raw: "null", status: 400, code: "invalid_request", path: "body" },
    { name: "nested wrong type", body: { n: 1, tags: [1] }, status: 400, code: "invalid_request", path: "body.tags.0" },
    { name: "too many items", body: { n: 1, tags: ["a", "b", "c", "d"] }, status: 400, code: "invalid_request", path: "body.tags" },
    { name: "text/plain", raw: '{"n":1}', type: "text/plain", status: 415, code: "unsupported_media_type" },
    { name: "form encoded", raw: "n=1", type: "application/x-www-form-urlencoded", status: 415, code: "unsupported_media_type" },
    { name: "oversized", raw: JSON.stringify({ n: 1, pad: "x".repeat(10_000) }), status: 413, code: "payload_too_large" },
    { name: "empty body", raw: "", status: 400, code: "invalid_request", path: "body.n" },
  ];
  for (const c of cases) {
    const headers: Record<string, string> = { "content-type": c.type ?? "application/json" };
    const res = await troupe.request("POST", probe, { token: user.testKey, headers, ...(c.body !== undefined ? { body: c.body } : { rawBody: c.raw ?? "" }) });
    t.equal(res.status, c.status, `${c.name}: status`);
    t.equal(field(res.body, "error", "code"), c.code, `${c.name}: code`);
    t.type(field(res.body, "error", "message"), "string");
    if (c.path) t.ok((field(res.body, "error", "details") as { path: string }[]).some((d) => d.path === c.path), `${c.name}: names ${c.path} (${res.text})`);
  }
  t.equal((await troupe.request("POST", probe, { token: user.testKey, body: { n: 1 } })).status, 200, "still serving");
});

t.test("application/json with a charset and +json types are accepted", async (t) => {
  for (const type of ["application/json; charset=utf-8", "application/vnd.troupe+json"]) {
    const res = await troupe.request("POST", probe, { token: user.testKey, rawBody: '{"n":3}', headers: { "content-type": type } });
    t.equal(res.status, 200, type);
  }
});

t.test("fuzz: 500 random bodies never produce a 5xx", async (t) => {
  const statuses = new Map<number, number>();
  for (let i = 0; i < 500; i++) {
    const size = i % 10 === 0 ? 5000 : Math.floor(Math.random() * 300);
    let raw: Buffer = randomBytes(size);
    if (i % 3 === 0) raw = Buffer.from(`{"n": ${raw.toString("hex").slice(0, 20)}`);
    if (i % 7 === 0) raw = Buffer.from(JSON.stringify({ n: Math.random() * 20 - 5, tags: [randomBytes(4).toString("latin1")] }));
    const res = await troupe.request("POST", probe, { token: user.testKey, rawBody: raw, headers: { "content-type": "application/json" } });
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    if (res.status >= 500) t.fail(`5xx for input #${i}: ${res.text}`);
  }
  t.ok([...statuses.keys()].every((s) => s >= 200 && s < 500), JSON.stringify(Object.fromEntries(statuses)));
  t.equal((await troupe.request("GET", "/healthz")).status, 200, "alive after the fuzz");
});

t.test("unknown paths 404, wrong methods 405 with Allow", async (t) => {
  const missing = await troupe.request("GET", "/v1/nothing-here");
  t.equal(missing.status, 404);
  t.equal(field(missing.body, "error", "code"), "not_found");
  const wrong = await troupe.request("PUT", "/v1/auth/login", { body: {} });
  t.equal(wrong.status, 405);
  t.equal(wrong.headers.get("allow"), "POST");
});
