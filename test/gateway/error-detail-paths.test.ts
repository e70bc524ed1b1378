// One form for `details[].path` in 400s: the request validation
// names body fields `body.<field>`, while speech, chat tool messages,
// audio_url, image_url and a video model said `voice`, `messages.1…`,
// `audio_url`… And speech without `voice` answered "no model has the voice
// undefined". Over real sockets, each of them: the body.… form.
import t from "tap";
import { field, signup, startTestTroupe } from "../support/troupe.ts";

const troupe = await startTestTroupe({ OUTBOUND_ALLOW_HOSTS: "" });
t.teardown(() => troupe.stop());
const user = await signup(troupe, "paths");
const post = (path: string, body: unknown) => troupe.request("POST", path, { token: user.testKey, body });

t.test("speech without voice names the missing field", async (t) => {
  const res = await post("/v1/audio/speech", { text: "hello", model: "simulated-speech" });
  t.equal(res.status, 400, res.text);
  t.match(field(res.body, "error", "details"), [{ path: "body.voice", message: /required/ }]);
  t.notMatch(res.text, /undefined/, "never 'the voice undefined'");
});

t.test("every field-level 400 names its field as body.<field>", async (t) => {
  const cases: [string, string, unknown, string][] = [
    ["a voice the model lacks", "/v1/audio/speech", { text: "hello", voice: "rachel", model: "simulated-speech" }, "body.voice"],
    ["a tool message answering no call", "/v1/chat/completions", { model: "simulated-chat", messages: [{ role: "user", content: "hi" }, { role: "tool", tool_call_id: "call_x", content: "42" }] }, "body.messages.1.tool_call_id"],
    ["an audio_url the guard refuses", "/v1/audio/transcriptions", { audio_url: "https://localhost:8443/a.wav", model: "simulated-transcribe" }, "body.audio_url"],
    ["an image_url the guard refuses", "/v1/video/generate", { prompt: "a cat", image_url: "https://localhost:8443/a.png", model: "simulated-video" }, "body.image_url"],
    ["a video model that is not one", "/v1/video/generate", { prompt: "a cat", model: "simulated-chat" }, "body.model"],
    ["manual routing without a model", "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], routing_strategy: "manual" }, "body.model"],
    ["a zod failure, for comparison", "/v1/chat/completions", { messages: [] }, "body.messages"],
  ];
  for (const [what, path, body, expected] of cases) {
    const res = await post(path, body);
    t.equal(res.status, 400, `${what}: ${res.text.slice(0, 300)}`);
    const paths = ((field(res.body, "error", "details") ?? []) as { path: string }[]).map((d) => d.path);
    t.ok(paths.includes(expected), `${what}: ${expected} in ${JSON.stringify(paths)}`);
    t.ok(paths.every((p) => p === "body" || p.startsWith("body.")), `${what}: every path in the body.… form`);
  }
});
