// One scope rule for image input on every door: a request carrying an image
// needs the key's vision scope, as POST /v1/vision/analyze does, whether it
// comes as an image_url part on /openai/v1/chat/completions or an image block
// on /anthropic/v1/messages. A chat-only key is refused 403 in each mount's
// own error shape, naming the scope; the same key's text-only request is
// answered; a key with both scopes is answered and the image call is billed
// as vision (as /v1/vision/analyze bills it). /v1/chat/completions takes no
// image input at all (its body refuses one), so it has no such gap.
import t from "tap";
import { field } from "../support/troupe.ts";
import { startCompatHarness } from "./compat/openai-harness.ts";

t.setTimeout(60_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());

const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const model = "gpt-4.1-mini";

async function keyWith(scopes: string[]): Promise<string> {
  const res = await h.troupe.request("POST", `/v1/environments/${h.user.developmentEnvId}/api-keys`, { token: h.user.token, body: { name: `scopes ${scopes.join(" ")}`, scopes } });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
  return String(field(res.body, "key"));
}

const chatOnly = await keyWith(["chat"]);
const chatAndVision = await keyWith(["chat", "vision"]);

const openAiImage = {
  model,
  messages: [{ role: "user", content: [{ type: "text", text: "what is this?" }, { type: "image_url", image_url: { url: `data:image/png;base64,${png}` } }] }],
};
const openAiText = { model, messages: [{ role: "user", content: [{ type: "text", text: "hello there" }] }] };
const anthropicImage = {
  model,
  max_tokens: 50,
  messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: png } }, { type: "text", text: "What is this?" }] }],
};
const anthropicText = { model, max_tokens: 50, messages: [{ role: "user", content: [{ type: "text", text: "hello there" }] }] };

const openAi = (key: string, body: unknown, stream = false) =>
  h.troupe.request("POST", "/openai/v1/chat/completions", { token: key, body: stream ? { ...(body as object), stream: true } : body });
const anthropic = (key: string, body: unknown, stream = false) =>
  h.troupe.request("POST", "/anthropic/v1/messages", { headers: { "x-api-key": key, "anthropic-version": "2023-06-01" }, body: stream ? { ...(body as object), stream: true } : body });

t.test("the reference door: /v1/vision/analyze refuses a chat-only key", async (t) => {
  const res = await h.troupe.request("POST", "/v1/vision/analyze", { token: chatOnly, body: { model, prompt: "what is this?", image_url: `data:image/png;base64,${png}` } });
  t.equal(res.status, 403);
  t.match(res.body, { error: { code: "insufficient_scope", details: { required_scope: "vision" } } });
});

for (const stream of [false, true]) {
  t.test(`OpenAI mount, an image part with a chat-only key: 403 in OpenAI's shape, no provider call${stream ? " (stream)" : ""}`, async (t) => {
    const before = h.fakes.openai.requests.length;
    const res = await openAi(chatOnly, openAiImage, stream);
    t.equal(res.status, 403);
    t.match(res.body, { error: { type: "permission_error", code: "insufficient_scope", message: /"vision"/ } });
    t.equal(h.fakes.openai.requests.length, before, "refused before any provider call");
  });

  t.test(`Anthropic mount, an image block with a chat-only key: 403 in Anthropic's shape, no provider call${stream ? " (stream)" : ""}`, async (t) => {
    const before = h.fakes.openai.requests.length;
    const res = await anthropic(chatOnly, anthropicImage, stream);
    t.equal(res.status, 403);
    t.match(res.body, { type: "error", error: { type: "permission_error", message: /"vision"/ } });
    t.equal(h.fakes.openai.requests.length, before, "refused before any provider call");
  });
}

t.test("the same chat-only key, text only: 200 on both mounts, billed as chat", async (t) => {
  const o = await openAi(chatOnly, openAiText);
  t.equal(o.status, 200, o.text);
  const a = await anthropic(chatOnly, anthropicText);
  t.equal(a.status, 200, a.text);
  for (const res of [o, a]) {
    const id = res.headers.get("x-request-id");
    t.match(h.usage.filter((u) => u.request_id === id), [{ category: "chat" }]);
  }
});

t.test("a key with chat and vision: the image call is answered on both mounts and billed as vision", async (t) => {
  const o = await openAi(chatAndVision, openAiImage);
  t.equal(o.status, 200, o.text);
  const a = await anthropic(chatAndVision, anthropicImage);
  t.equal(a.status, 200, a.text);
  const s = await anthropic(chatAndVision, anthropicImage, true);
  t.equal(s.status, 200, s.text);
  for (const res of [o, a, s]) {
    const id = res.headers.get("x-request-id");
    t.match(h.usage.filter((u) => u.request_id === id), [{ category: "vision" }]);
  }
});

t.test("/v1/chat/completions takes no image input: a body carrying one is 400 before scopes matter", async (t) => {
  const res = await h.troupe.request("POST", "/v1/chat/completions", { token: chatOnly, body: { messages: [{ role: "user", content: "hi", images: [{ url: "https://example.com/a.png" }] }] } });
  t.equal(res.status, 400);
  const parts = await h.troupe.request("POST", "/v1/chat/completions", { token: chatOnly, body: openAiImage });
  t.equal(parts.status, 400);
});
