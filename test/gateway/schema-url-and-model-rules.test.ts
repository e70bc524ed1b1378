// URL fields and per-model rules, stated in the /v1 OpenAPI document and
// applied by the server alike: every URL field is `format: uri` (a request's
// non-URL is a 400 naming the field), and what a named model asks of other
// fields is an if/then in the body's allOf (a fixed embedding dimension, a
// video model that needs image_url, a speech model's voices, an image
// model's sizes and n).
import t from "tap";
import { startOpenApiFixture } from "../support/openapi-fixture.ts";
import { field } from "../support/troupe.ts";

type Json = Record<string, unknown>;
const { troupe, doc, user } = await startOpenApiFixture(t, "uri-rules");

const body = (path: string) => field(doc, "paths", path, "post", "requestBody", "content", "application/json", "schema") as Json;
const ok = (path: string, method: string, status: string) => field(doc, "paths", path, method, "responses", status, "content", "application/json", "schema") as Json;
/** The string variant of a (possibly nullable) property. */
const stringOf = (schema: unknown): Json => {
  const variants = (field(schema, "anyOf") as Json[] | undefined) ?? [schema as Json];
  return variants.find((v) => v["type"] === "string") ?? {};
};
/** The rule of the allOf whose `if` names `model`. */
const ruleFor = (schema: Json, model: string): Json | undefined =>
  ((schema["allOf"] as Json[] | undefined) ?? []).find((r) => field(r, "if", "properties", "model", "const") === model);

t.test("every URL field is format: uri", async (t) => {
  const requestFields: [string, string][] = [
    ["/v1/audio/transcriptions", "audio_url"],
    ["/v1/vision/analyze", "image_url"],
    ["/v1/video/generate", "image_url"],
    ["/v1/webhooks", "url"],
  ];
  for (const [path, name] of requestFields) t.equal(stringOf(field(body(path), "properties", name))["format"], "uri", `${path} ${name}`);
  t.equal(field(ok("/v1/audio/speech", "post", "200"), "properties", "audio", "format"), "uri", "speech: audio");
  t.equal(field(ok("/v1/images/generations", "post", "200"), "properties", "images", "items", "format"), "uri", "images: images[]");
  t.equal(stringOf(field(ok("/v1/jobs/{id}", "get", "200"), "properties", "result_url"))["format"], "uri", "job: result_url");
  t.equal(field(ok("/v1/webhooks/{webhook_id}", "get", "200"), "properties", "url", "format"), "uri", "webhook: url");
});

t.test("a request's URL field that is no URL is a 400 naming it", async (t) => {
  for (const [path, payload, name] of [
    ["/v1/audio/transcriptions", { audio_url: "not a url" }, "audio_url"],
    ["/v1/vision/analyze", { image_url: "cat.png", prompt: "what is it?" }, "image_url"],
  ] as const) {
    const r = await troupe.request("POST", path, { token: user.testKey, body: payload });
    t.equal(r.status, 400, `${path}: ${r.text}`);
    t.equal(field(r.body, "error", "details", 0, "path"), `body.${name}`);
  }
  const data = await troupe.request("POST", "/v1/vision/analyze", {
    token: user.testKey,
    body: { image_url: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", prompt: "what is it?" },
  });
  t.equal(data.status, 200, "a data: URL is a URI and still served");
});

t.test("per-model rules: if/then in the document, the same refusal from the server", async (t) => {
  t.match(ruleFor(body("/v1/embeddings"), "embed-english-v3.0"), { then: { properties: { dimensions: { anyOf: [{ const: 1024 }, { type: "null" }] } } } }, "a fixed-dimension embedding model");
  t.notOk(ruleFor(body("/v1/embeddings"), "simulated-embed"), "custom dimensions: no rule");
  t.match(ruleFor(body("/v1/video/generate"), "gen4_turbo"), { then: { required: ["image_url"] } }, "a video model that only animates images needs image_url");
  t.match(ruleFor(body("/v1/audio/speech"), "simulated-speech"), { then: { properties: { voice: { enum: ["alto", "bass", "soprano"] } } } });
  t.match(ruleFor(body("/v1/images/generations"), "simulated-image"), { then: { properties: { n: { maximum: Number } } } });
  t.ok(field(body("/v1/embeddings"), "if"), "the manual-routing rule is kept beside them");

  const voice = await troupe.request("POST", "/v1/audio/speech", { token: user.testKey, body: { model: "simulated-speech", text: "hi", voice: "alloy" } });
  t.equal(voice.status, 400, "a voice outside the model's enum is refused");
  const video = await troupe.request("POST", "/v1/video/generate", { token: user.testKey, body: { model: "gen4_turbo", prompt: "a boat" } });
  t.equal(video.status, 400, "gen4_turbo without image_url is refused");
  t.equal(field(video.body, "error", "details", 0, "path"), "body.model");
});
