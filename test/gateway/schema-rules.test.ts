// One rule, stated once, read twice: for each rule the request schemas carry,
// the OpenAPI document states it AND the server enforces exactly it (the
// value just inside is accepted, the one just outside refused with a 400
// naming the field). `npm run fuzz` checks the same at scale.
import t from "tap";
import { codePoints, nonBlankPattern } from "../../core/text-schema.ts";
import { startOpenApiFixture } from "../support/openapi-fixture.ts";
import { field, str } from "../support/troupe.ts";

type Json = Record<string, unknown>;
const { troupe, doc, user } = await startOpenApiFixture(t, "rules");

function bodySchema(path: string): Json {
  return field(doc, "paths", path, "post", "requestBody", "content", "application/json", "schema") as Json;
}
function prop(schema: Json, name: string): Json {
  return field(schema, "properties", name) as Json;
}
/** The enum of a nullable `model` (anyOf [{enum}, {type: null}]). */
function modelEnum(path: string): string[] {
  const model = prop(bodySchema(path), "model");
  const variants = (field(model, "anyOf") as Json[] | undefined) ?? [model];
  return variants.flatMap((v) => (field(v, "enum") as string[] | undefined) ?? []);
}
const post = (path: string, body: unknown, token = user.testKey) => troupe.request("POST", path, { token, body });
const hi = [{ role: "user", content: "hi" }];

t.test("model: the catalogue's ids per category, as an enum the server applies", async (t) => {
  for (const [path, category] of [
    ["/v1/chat/completions", "text"],
    ["/v1/embeddings", "embedding"],
    ["/v1/vision/analyze", "vision"],
    ["/v1/translations", "translation"],
  ] as const) {
    const listed = ((await troupe.request("GET", `/v1/models?category=${category}`, { token: user.testKey })).body as { data: { id: string }[] }).data;
    t.same(modelEnum(path).sort(), listed.map((m) => m.id).sort(), `${path}: enum = the ${category} models`);
  }
  t.notOk(modelEnum("/v1/chat/completions").includes("simulated-embed"), "no embedding model on a text route");
  for (const model of ["0", "simulated-embed"]) {
    const r = await post("/v1/chat/completions", { model, messages: hi });
    t.equal(r.status, 400, `model ${model} refused`);
    t.equal(field(r.body, "error", "details", 0, "path"), "body.model");
  }
  t.equal((await post("/v1/chat/completions", { model: "simulated-chat", messages: hi })).status, 200, "an enum value is served");
  t.ok(modelEnum("/v1/agents/conversations").includes("simulated-chat"), "agents: text models with tools");
});

t.test("media routes: model is an enum of the models that can serve them, applied by the server", async (t) => {
  const models = ((await troupe.request("GET", "/v1/models", { token: user.testKey })).body as { data: { id: string; category: string; capabilities: { voices?: string[]; transcription?: boolean } }[] }).data;
  const ids = (keep: (m: (typeof models)[number]) => boolean) => models.filter(keep).map((m) => m.id).sort();
  t.same(modelEnum("/v1/audio/speech").sort(), ids((m) => m.capabilities.voices !== undefined), "speech: models with voices");
  t.same(modelEnum("/v1/audio/transcriptions").sort(), ids((m) => m.capabilities.transcription === true), "transcriptions: models that transcribe");
  t.same(modelEnum("/v1/images/generations").sort(), ids((m) => m.category === "image"), "images: image models");
  t.ok(modelEnum("/v1/images/generations").length > 0 && modelEnum("/v1/audio/speech").length > 0, "enums are not empty");
  for (const [path, body] of [
    ["/v1/audio/speech", { model: "0", text: "hi", voice: "alloy" }],
    ["/v1/audio/transcriptions", { model: "0", audio_url: "https://example.com/a.wav" }],
    ["/v1/images/generations", { model: "0", prompt: "a cat" }],
  ] as const) {
    const r = await post(path, body);
    t.equal(r.status, 400, `${path}: unknown model refused`);
    t.equal(field(r.body, "error", "details", 0, "path"), "body.model");
  }
});

t.test("routing_strategy manual needs a model: if/then in the document, 400 from the server", async (t) => {
  for (const path of ["/v1/chat/completions", "/v1/embeddings", "/v1/translations", "/v1/vision/analyze", "/v1/agents/conversations"]) {
    t.match(bodySchema(path), { if: { properties: { routing_strategy: { const: "manual" } } }, then: { required: ["model"] } }, path);
  }
  const r = await post("/v1/embeddings", { input: "x", routing_strategy: "manual" });
  t.equal(r.status, 400);
  t.equal(field(r.body, "error", "details", 0, "path"), "body.model");
  t.equal((await post("/v1/embeddings", { input: "x", routing_strategy: "manual", model: "simulated-embed" })).status, 200);
});

t.test("messages: oneOf by role; a tool message requires tool_call_id, only assistants carry tool_calls", async (t) => {
  const variants = field(prop(bodySchema("/v1/chat/completions"), "messages"), "items", "oneOf") as Json[];
  t.equal(variants.length, 4);
  const byRole = new Map(variants.map((v) => [field(v, "properties", "role", "const") as string, v]));
  t.ok((field(byRole.get("tool"), "required") as string[]).includes("tool_call_id"), "tool requires tool_call_id");
  t.notOk(field(byRole.get("user"), "properties", "tool_calls"), "user has no tool_calls");
  t.equal(field(byRole.get("user"), "additionalProperties"), false);
  const noId = await post("/v1/chat/completions", { messages: [...hi, { role: "tool", content: "r" }] });
  t.equal(noId.status, 400);
  t.match(JSON.stringify(noId.body), /messages\.1\.tool_call_id/);
  const userCalls = await post("/v1/chat/completions", { messages: [{ role: "user", content: "x", tool_calls: [] }] });
  t.equal(userCalls.status, 400, "tool_calls on a user message");
  const roundTrip = await post("/v1/chat/completions", {
    messages: [...hi, { role: "assistant", content: null, tool_calls: [{ id: "c1", name: "f", arguments: {} }] }, { role: "tool", tool_call_id: "c1", content: "r" }],
  });
  t.equal(roundTrip.status, 200, "an answered tool call is served");
});

t.test("names: non-blank pattern and maxLength in code points, checked on the string as sent", async (t) => {
  const name = prop(bodySchema("/v1/orgs"), "name");
  t.match(name, { type: "string", minLength: 1, maxLength: 200, pattern: nonBlankPattern.source });
  for (const blank of ["   ", "\u3000\t", "\ufeff"]) {
    const r = await post("/v1/orgs", { name: blank }, user.token);
    t.equal(r.status, 400, `blank ${JSON.stringify(blank)} refused`);
  }
  const spaced = await post("/v1/orgs", { name: `\u000b${"*".repeat(200)}` }, user.token);
  t.equal(spaced.status, 400, "201 characters refused even if trimming would make them 200");
  const emoji = await post("/v1/orgs", { name: "😀".repeat(200) }, user.token);
  t.equal(emoji.status, 201, "200 code points (400 UTF-16 units) accepted, as maxLength says");
  t.equal((await post("/v1/orgs", { name: "😀".repeat(201) }, user.token)).status, 400);
  const trimmed = await post("/v1/orgs", { name: "  Acme  " }, user.token);
  t.equal(field(trimmed.body, "name"), "Acme", "stored trimmed");
  t.equal(codePoints("a😀\ud800"), 3, "a lone surrogate counts as one");
});

t.test("whitespace-only query and content: refused by pattern, as documented", async (t) => {
  t.equal(field(prop(bodySchema("/v1/embeddings/search"), "query"), "pattern"), nonBlankPattern.source);
  t.equal(field(prop(bodySchema("/v1/embeddings/index"), "content"), "pattern"), nonBlankPattern.source);
  t.equal((await post("/v1/embeddings/search", { query: " \n " })).status, 400);
  t.equal((await post("/v1/embeddings/index", { content: "\t" })).status, 400);
  t.equal((await post("/v1/embeddings/search", { query: " x " })).status, 200);
});

t.test("email: format email (RFC 5321 lengths) within the documented pattern", async (t) => {
  const email = prop(bodySchema("/v1/auth/signup"), "email");
  t.match(email, { type: "string", format: "email", maxLength: 254 });
  const pattern = new RegExp(str(email, "pattern"));
  const local65 = `${"a".repeat(65)}@example.com`;
  t.ok(pattern.test(local65), "the pattern alone would allow it");
  const signupAs = (address: string) => troupe.request("POST", "/v1/auth/signup", { body: { email: address, password: "a long enough password" } });
  t.equal((await signupAs(local65)).status, 400, "local part of 65 characters refused (format: email)");
  t.equal((await signupAs(`${"b".repeat(64)}@example.com`)).status, 201, "64 accepted");
  t.equal((await signupAs("someone@-example.com")).status, 400, "a label starting with - refused");
  t.notOk(pattern.test("someone@-example.com"));
  t.equal((await signupAs("someone@ru--example.com")).status, 400, "-- in a label's 3rd-4th characters is reserved (IDNA)");
  t.equal((await signupAs("someone@xn--abc.com")).status, 400, "punycode that does not decode refused");
  t.equal((await signupAs("someone@xn--80ak6aa92e.com")).status, 201, "valid punycode accepted");
});

t.test("cursor: a documented format; anything else is a 400, never the first page", async (t) => {
  const cursor = field(doc, "paths", "/v1/orgs/{org_id}/projects", "get", "parameters") as Json[];
  const spec = cursor.find((p) => p["name"] === "cursor");
  const pattern = new RegExp(str(spec, "schema", "pattern"));
  for (let i = 0; i < 3; i++) await post(`/v1/orgs/${user.orgId}/projects`, { name: `p${i}` }, user.token);
  const first = await troupe.request("GET", `/v1/orgs/${user.orgId}/projects?limit=2`, { token: user.token });
  const next = str(first.body, "next_cursor");
  t.ok(pattern.test(next), "the server's cursors match the documented pattern");
  const second = await troupe.request("GET", `/v1/orgs/${user.orgId}/projects?limit=2&cursor=${next}`, { token: user.token });
  t.equal(second.status, 200);
  t.notSame(field(second.body, "data", 0, "id"), field(first.body, "data", 0, "id"));
  for (const bad of ["garbage", "12.", ".abc", "x".repeat(600)]) {
    t.notOk(pattern.test(bad));
    const r = await troupe.request("GET", `/v1/orgs/${user.orgId}/projects?cursor=${bad}`, { token: user.token });
    t.equal(r.status, 400, `cursor ${bad.slice(0, 12)} refused`);
  }
  for (const limit of ["0", "101", "-5", "abc"]) {
    t.equal((await troupe.request("GET", `/v1/orgs?limit=${limit}`, { token: user.token })).status, 400, `limit ${limit} refused, not clamped`);
  }
});

t.test("request bodies are required exactly when the server refuses an empty one", async (t) => {
  t.equal(field(doc, "paths", "/v1/agents/conversations", "post", "requestBody", "required"), false);
  const empty = await troupe.request("POST", "/v1/agents/conversations", { token: user.testKey });
  t.equal(empty.status, 201, "no body: every field has a default");
  t.equal(field(doc, "paths", "/v1/orgs", "post", "requestBody", "required"), true);
  const noName = await troupe.request("POST", "/v1/orgs", { token: user.token });
  t.equal(noName.status, 400, "no body where name is required");
});
