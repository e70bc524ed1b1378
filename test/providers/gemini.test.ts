import t from "tap";
import { createGeminiAdapter } from "../../providers/gemini/index.ts";
import { toGeminiContents } from "../../providers/gemini/chat.ts";
import { mapGeminiFinishReason } from "../../providers/gemini/map-gemini-finish-reason.ts";
import { ProviderCallError } from "../../providers/errors.ts";
import { startGeminiFake } from "../fakes/gemini-fake.ts";
import { collect, conversationSuite } from "./conversation-suite.ts";

const fake = await startGeminiFake({ apiKey: "g-test" });
let n = 0;
const adapter = createGeminiAdapter({ baseUrl: fake.url, apiKey: "g-test", newToolCallId: () => `call_${++n}` });
t.teardown(async () => {
  await adapter.close?.();
  await fake.close();
});
const signal = new AbortController().signal;

await conversationSuite(t, adapter, "gemini-2.5-flash");

t.test("request mapping: roles, functionResponse named after the call, images as inline_data/file_data", async (t) => {
  const { system, contents } = toGeminiContents([
    { role: "system", content: "S" },
    { role: "user", content: "look", images: [{ url: "https://x/a.png" }, { base64: "AAAA", media_type: "image/webp" }] },
    { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "lookup", arguments: { q: 1 } }] },
    { role: "tool", tool_call_id: "c1", content: '{"found":true}' },
    { role: "tool", tool_call_id: "c1", content: "plain" },
  ]);
  t.equal(system, "S");
  t.same(contents[0], {
    role: "user",
    parts: [
      { text: "look" },
      { file_data: { mime_type: "image/png", file_uri: "https://x/a.png" } },
      { inline_data: { mime_type: "image/webp", data: "AAAA" } },
    ],
  });
  t.same(contents[1], { role: "model", parts: [{ functionCall: { name: "lookup", args: { q: 1 } } }] });
  t.same(contents[2], {
    role: "user",
    parts: [{ functionResponse: { name: "lookup", response: { found: true } } }, { functionResponse: { name: "lookup", response: { content: "plain" } } }],
  });
});

t.test("URL and key header", async (t) => {
  fake.requests.length = 0;
  await collect(adapter.chatStream!({ messages: [{ role: "user", content: "hi" }] }, { signal, upstreamModel: "gemini-2.5-flash" }));
  t.equal(fake.requests[0]!.path, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
  t.equal(fake.requests[0]!.headers["x-goog-api-key"], "g-test");
});

t.test("a stream without finishReason was cut", async (t) => {
  fake.faults.queue.push({ kind: "cut" });
  const err = await collect(adapter.chatStream!({ messages: [{ role: "user", content: "a b c d e f" }] }, { signal, upstreamModel: "m" })).catch((e: unknown) => e);
  t.ok(err instanceof ProviderCallError);
  t.equal((err as ProviderCallError).kind, "connection");
});

t.test("finish reason mapping", async (t) => {
  t.equal(mapGeminiFinishReason("STOP", false), "stop");
  t.equal(mapGeminiFinishReason("STOP", true), "tool_calls");
  t.equal(mapGeminiFinishReason("MAX_TOKENS", false), "length");
  t.equal(mapGeminiFinishReason("SAFETY", false), "content_filter");
  t.equal(mapGeminiFinishReason("MALFORMED_FUNCTION_CALL", false), "error");
});
