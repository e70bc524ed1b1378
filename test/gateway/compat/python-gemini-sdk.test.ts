// The official `google-genai` PyPI package (scripts/python-sdks.sh),
// unmodified but for api_key and http_options base_url, against an embedded
// Troupe's /gemini mount over real sockets, the provider fakes behind it:
// generate_content, its stream, a function-call round trip and count_tokens
// on a Gemini, a Claude and a GPT model; embed_content; a bad key and an
// unknown model caught as the SDK's own error classes.
import t from "tap";
import { field } from "../../support/troupe.ts";
import { embeddingModel, models, startGeminiHarness } from "./gemini-harness.ts";
import { runPython, withPythonSdk } from "./python-sdk.ts";

t.setTimeout(180_000);
await withPythonSdk(t, startGeminiHarness, async (python, h) => {
  const out = await runPython(python, "gemini_generate.py", { base_url: `${h.url}/gemini`, key: h.liveKey, models: Object.values(models), embedding_model: embeddingModel });

  t.test("the 3.x SDK ran", async (t) => {
    t.match(field(out, "sdk"), /^3\./);
  });

  for (const [provider, model] of Object.entries(models)) {
    t.test(`${provider} (${model})`, async (t) => {
      const r = field(out, model);
      t.match(field(r, "plain"), { text: "Echo: hello there", model_version: model, finish_reason: "STOP" });
      t.ok(Number(field(r, "plain", "output_tokens")) > 0);
      const fragments = field(r, "stream", "fragments") as string[];
      t.ok(fragments.length > 1, "several chunks");
      t.equal(fragments.join(""), "Echo: hello stream");
      t.match(field(r, "tools"), { call: { name: "get_weather", args: { input: "What is the weather in Paris?" } }, answer: /sunny, 24 °C/ });
      t.ok(Number(field(r, "count")) > 0, "count_tokens");
    });
  }

  t.test("embed_content and errors", async (t) => {
    t.same(field(out, "embed"), [32, 32], "two vectors of the asked dimensionality");
    t.match(field(out, "bad_key"), { class: "ClientError", code: 401, status: "UNAUTHENTICATED" });
    t.match(field(out, "unknown_model"), { class: "ClientError", code: 404, status: "NOT_FOUND" });
  });
});
