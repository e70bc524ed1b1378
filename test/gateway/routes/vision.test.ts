// POST /v1/vision/analyze end to end: the image reaches each provider in its own format.
import t from "tap";
import { field } from "../../support/troupe.ts";
import { startAiHarness } from "./ai-harness.ts";

const h = await startAiHarness();
t.teardown(() => h.stop());
const post = (body: unknown) => h.troupe.request("POST", "/v1/vision/analyze", { token: h.key, body });

t.test("simulated: deterministic description", async (t) => {
  const r = await post({ image_url: "https://example.com/cat.png", prompt: "What animal?", model: "simulated-chat" });
  t.equal(r.status, 200, r.text);
  t.same(r.body, {
    content: "Simulated description of https://example.com/cat.png for: What animal?",
    model: "simulated-chat",
    provider: "simulated",
    input_tokens: Number(field(r.body, "input_tokens")),
    output_tokens: Number(field(r.body, "output_tokens")),
  });
  t.ok(Number(field(r.body, "input_tokens")) > 85, "the image is counted");
});

t.test("each adapter sends the image in its provider's format", async (t) => {
  const url = "https://example.com/cat.png";
  await post({ image_url: url, prompt: "What?", model: "gpt-4.1-mini", routing_strategy: "manual" });
  const oa = h.fakes.openai.requests.at(-1)!.body as { messages: { content: unknown }[] };
  t.same(oa.messages[0]!.content, [{ type: "text", text: "What?" }, { type: "image_url", image_url: { url } }]);
  const an = await post({ image_url: "data:image/png;base64,iVBORw0KGgo=", prompt: "What?", model: "claude-haiku-4-5", routing_strategy: "manual" });
  t.equal(an.status, 200);
  t.match(String(field(an.body, "content")), /\[1 image\]/);
  const ab = h.fakes.anthropic.requests.at(-1)!.body as { messages: { content: unknown[] }[] };
  t.same(ab.messages[0]!.content[0], { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } });
  await post({ image_url: url, prompt: "What?", model: "gemini-2.5-flash", routing_strategy: "manual" });
  const gb = h.fakes.gemini.requests.at(-1)!.body as { contents: { parts: unknown[] }[] };
  t.same(gb.contents[0]!.parts[1], { file_data: { mime_type: "image/png", file_uri: url } });
});

t.test("validation and category checks", async (t) => {
  t.equal((await post({ prompt: "x" })).status, 400, "image_url required");
  const r = await post({ image_url: "https://x/y.png", model: "local/llama-3.1-8b", routing_strategy: "manual" });
  t.equal(r.status, 400, "a model without vision is refused before any call");
  t.match(String(field(r.body, "error", "message")), /cannot serve vision/);
});
