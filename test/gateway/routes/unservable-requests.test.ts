// A request that no configured provider can ever serve is the client's to
// change (or the operator's to configure), so it is a 400 naming the field
// at fault, the catalogue's providers that would serve it and what the
// configured ones take; 503 is kept for configured providers that are
// failing, which a retry may get past. Here only the simulated provider is
// configured, as in a fresh install.
import t from "tap";
import { field, signup, startTestTroupe } from "../../support/troupe.ts";

t.setTimeout(60_000);
const troupe = await startTestTroupe({});
const user = await signup(troupe, "unservable");
t.teardown(() => troupe.stop());
const post = (path: string, body: unknown) => troupe.request("POST", path, { token: user.testKey, body });
const simulatedSizes = /256x256, 512x512, 1024x1024, 1024x768, 768x1024, 1792x1024, 1024x1792/;

/** The /v1 body's only issue: its path and message. */
function issue(body: unknown): { path: unknown; message: string } {
  const details = field(body, "error", "details");
  return { path: field(details, 0, "path"), message: String(field(details, 0, "message")) };
}

t.test("speech: a voice only unconfigured providers have is a 400 naming voice, who has it and the voices that work", async (t) => {
  for (const [voice, provider, setting] of [
    ["ash", "openai", "OPENAI_API_KEY"],
    ["rachel", "elevenlabs", "ELEVENLABS_API_KEY"],
  ] as const) {
    const r = await post("/v1/audio/speech", { text: "0", voice });
    t.equal(r.status, 400, `${voice}: ${r.text}`);
    t.equal(field(r.body, "error", "code"), "invalid_request");
    const { path, message } = issue(r.body);
    t.equal(path, "body.voice");
    t.match(message, new RegExp(`the voice "${voice}" needs provider ${provider}, which is not configured`));
    t.match(message, setting);
    t.match(message, /voices the configured providers offer: alto, bass, soprano/);
  }
  const named = await post("/v1/audio/speech", { text: "0", voice: "ash", model: "tts-1" });
  t.equal(named.status, 400, "a named model of an unconfigured provider stays a 400 naming model");
  t.match(issue(named.body), { path: "body.model", message: /set OPENAI_API_KEY/ });
});

t.test("images: a size only unconfigured providers make is a 400 naming size and the sizes that work", async (t) => {
  const r = await post("/v1/images/generations", { prompt: "a lighthouse", size: "1344x768" });
  t.equal(r.status, 400, r.text);
  const { path, message } = issue(r.body);
  t.equal(path, "body.size");
  t.match(message, /the size 1344x768 needs provider stability, which is not configured .*STABILITY_API_KEY/);
  t.match(message, simulatedSizes);
  const none = await post("/v1/images/generations", { prompt: "a lighthouse", size: "10x10" });
  t.equal(none.status, 400);
  t.match(issue(none.body), { path: "body.size", message: /no model makes "10x10" images; sizes of the models available now: 256x256/ });
});

t.test("the OpenAI mount: troupe/auto with a size, voice or JSON answer nothing configured offers is a 400 naming the param", async (t) => {
  for (const [path, body, param, pattern] of [
    ["/openai/v1/images/generations", { prompt: "x", model: "troupe/auto", size: "10x10" }, "size", /no model offers the size 10x10; sizes the configured providers offer: 256x256/],
    ["/openai/v1/images/generations", { prompt: "x", model: "troupe/auto", size: "1344x768" }, "size", /needs provider stability/],
    ["/openai/v1/audio/speech", { input: "x", model: "troupe/auto", voice: "ash" }, "voice", /needs provider openai.*voices the configured providers offer: alto, bass, soprano/],
  ] as const) {
    const r = await post(path, body);
    t.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${r.text}`);
    t.match(r.body, { error: { type: "invalid_request_error", param, code: "invalid_request", message: pattern } });
  }
});

t.test("the OpenAI mount: troupe/auto with a JSON answer is served by the simulated models (they honour response_format)", async (t) => {
  const r = await post("/openai/v1/chat/completions", { model: "troupe/auto", messages: [{ role: "user", content: "hi" }], response_format: { type: "json_object" } });
  t.equal(r.status, 200, r.text);
  const content = String((r.body as { choices: { message: { content: string } }[] }).choices[0]!.message.content);
  t.type(JSON.parse(content), "object", `a JSON object: ${content}`);
});

t.test("configured providers that are failing stay a 503: a retry may get past an open breaker", async (t) => {
  const isolated = troupe.services.router.healthOf("simulated").breaker.isolate();
  try {
    const speech = await post("/v1/audio/speech", { text: "0", voice: "alto" });
    t.equal(speech.status, 503, speech.text);
    t.equal(field(speech.body, "error", "code"), "no_provider_available");
    const image = await post("/openai/v1/images/generations", { prompt: "x", model: "troupe/auto", size: "256x256" });
    t.equal(image.status, 503, image.text);
  } finally {
    isolated.dispose();
  }
  const served = await post("/v1/audio/speech", { text: "0", voice: "alto" });
  t.equal(served.status, 200, "served once the breaker closes");
});
