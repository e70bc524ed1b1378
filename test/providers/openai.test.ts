import t from "tap";
import { createAzureOpenAIAdapter } from "../../providers/azure/index.ts";
import { adapterServesCategory } from "../../providers/media-types.ts";
import { createMistralAdapter } from "../../providers/mistral/index.ts";
import { createOpenAIAdapter } from "../../providers/openai/index.ts";
import { mapOpenAIFinishReason } from "../../providers/openai/map-openai-finish-reason.ts";
import { ProviderCallError } from "../../providers/errors.ts";
import { startOpenAIFake } from "../fakes/openai-fake.ts";
import { collect, conversationSuite } from "./conversation-suite.ts";

const fake = await startOpenAIFake({ apiKey: "sk-test" });
const adapter = createOpenAIAdapter({ baseUrl: `${fake.url}/v1`, apiKey: "sk-test" });
t.teardown(async () => {
  await adapter.close?.();
  await fake.close();
});
const signal = new AbortController().signal;

await conversationSuite(t, adapter, "gpt-4.1-mini");

t.test("request mapping: max_completion_tokens, stream_options, tool and tool message shapes", async (t) => {
  fake.requests.length = 0;
  await collect(
    adapter.chatStream!(
      {
        max_tokens: 50,
        tool_choice: { name: "f" },
        tools: [{ name: "f", description: "d", parameters: { type: "object", properties: {} } }],
        messages: [
          { role: "user", content: "look", images: [{ url: "https://example.com/a.png" }, { base64: "AAAA", media_type: "image/png" }] },
          { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "f", arguments: { a: 1 } }] },
          { role: "tool", tool_call_id: "c1", content: "ok" },
        ],
      },
      { signal, upstreamModel: "gpt-4.1-mini" },
    ),
  );
  const body = fake.requests[0]!.body as Record<string, unknown>;
  t.equal(body.max_completion_tokens, 50);
  t.same(body.stream_options, { include_usage: true });
  t.same(body.tool_choice, { type: "function", function: { name: "f" } });
  const msgs = body.messages as Record<string, unknown>[];
  t.same(msgs[0]!.content, [
    { type: "text", text: "look" },
    { type: "image_url", image_url: { url: "https://example.com/a.png" } },
    { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
  ]);
  t.same(msgs[1], { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: '{"a":1}' } }] });
  t.same(msgs[2], { role: "tool", tool_call_id: "c1", content: "ok" });
  t.equal(fake.requests[0]!.headers.authorization, "Bearer sk-test");
});

t.test("errors are classified: 429 with Retry-After is retryable, 400 is not even fallbackable", async (t) => {
  fake.faults.queue.push({ kind: "status", status: 429, retryAfter: "2" });
  const e429 = await adapter.chat!({ messages: [{ role: "user", content: "x" }] }, { signal, upstreamModel: "m" }).catch((e: unknown) => e);
  t.ok(e429 instanceof ProviderCallError);
  t.equal((e429 as ProviderCallError).status, 429);
  t.equal((e429 as ProviderCallError).retryable, true);
  t.equal((e429 as ProviderCallError).retryAfter, "2", "Retry-After kept as sent, for the router to read on its clock");
  t.match((e429 as ProviderCallError).message, /injected 429/);
  fake.faults.queue.push({ kind: "status", status: 400 });
  const e400 = (await adapter.chat!({ messages: [{ role: "user", content: "x" }] }, { signal, upstreamModel: "m" }).catch((e: unknown) => e)) as ProviderCallError;
  t.equal(e400.retryable, false);
  t.equal(e400.fallbackable, false);
});

t.test("a cut stream is a retryable connection failure, not a short answer", async (t) => {
  fake.faults.queue.push({ kind: "cut" });
  const err = await collect(adapter.chatStream!({ messages: [{ role: "user", content: "one two three four five six" }] }, { signal, upstreamModel: "m" })).catch((e: unknown) => e);
  t.ok(err instanceof ProviderCallError, String(err));
  t.equal((err as ProviderCallError).kind, "connection");
  t.equal((err as ProviderCallError).retryable, true);
});

t.test("a cut JSON body is a connection failure", async (t) => {
  fake.faults.queue.push({ kind: "cut" });
  const err = await adapter.chat!({ messages: [{ role: "user", content: "x" }] }, { signal, upstreamModel: "m" }).catch((e: unknown) => e);
  t.equal((err as ProviderCallError).kind, "connection");
});

t.test("abort signal stops a hanging call", async (t) => {
  fake.faults.queue.push({ kind: "hang" });
  const ctl = new AbortController();
  const started = Date.now();
  setTimeout(() => ctl.abort(new Error("caller gone")), 100);
  const err = await adapter.chat!({ messages: [{ role: "user", content: "x" }] }, { signal: ctl.signal, upstreamModel: "m" }).catch((e: unknown) => e);
  t.match(String(err), /caller gone/);
  t.ok(Date.now() - started < 2000);
});

t.test("embeddings", async (t) => {
  const r = await adapter.embed!({ model: "text-embedding-3-small", input: ["a", "b"], dimensions: 8 }, { signal });
  t.equal(r.embeddings.length, 2);
  t.equal(r.dimensions, 8);
  t.notSame(r.embeddings[0], r.embeddings[1]);
  t.equal(r.input_tokens, 2);
});

t.test("finish reason mapping", async (t) => {
  t.equal(mapOpenAIFinishReason("stop", false), "stop");
  t.equal(mapOpenAIFinishReason("length", false), "length");
  t.equal(mapOpenAIFinishReason("tool_calls", true), "tool_calls");
  t.equal(mapOpenAIFinishReason("function_call", true), "tool_calls");
  t.equal(mapOpenAIFinishReason("content_filter", false), "content_filter");
  t.equal(mapOpenAIFinishReason("weird", false), "error");
});

t.test("wrong key is a 401 that may fall back but not retry", async (t) => {
  const bad = createOpenAIAdapter({ baseUrl: `${fake.url}/v1`, apiKey: "wrong" });
  const err = (await bad.chat!({ messages: [{ role: "user", content: "x" }] }, { signal, upstreamModel: "m" }).catch((e: unknown) => e)) as ProviderCallError;
  await bad.close?.();
  t.equal(err.status, 401);
  t.equal(err.retryable, false);
  t.equal(err.fallbackable, true);
});

t.test("openai-compatible: own name, max_tokens (not max_completion_tokens), optional key", async (t) => {
  const { createCompatibleAdapter } = await import("../../providers/openai-compatible/index.ts");
  const local = await startOpenAIFake();
  const compat = createCompatibleAdapter({ name: "ollama", base_url: `${local.url}/v1`, models: ["llama3"] });
  const r = await compat.chat!({ max_tokens: 7, messages: [{ role: "user", content: "hi" }] }, { signal, upstreamModel: "llama3" });
  await compat.close?.();
  await local.close();
  t.equal(r.provider, "ollama");
  const body = local.requests[0]!.body as Record<string, unknown>;
  t.equal(body.max_tokens, 7);
  t.notOk("max_completion_tokens" in body);
  t.notOk("authorization" in local.requests[0]!.headers, "no key, no Authorization header");
});

t.test("Azure and Mistral, on this adapter, serve chat and embeddings only: the router plans no audio or image call there", async (t) => {
  const narrowed = [
    createAzureOpenAIAdapter({ endpoint: fake.url, apiKey: "k", apiVersion: "2024-10-21", deployments: {} }),
    createMistralAdapter({ baseUrl: `${fake.url}/v1`, apiKey: "k" }),
  ];
  for (const a of narrowed) {
    const served = ["chat", "embedding", "audio", "image", "video"].filter((category) => adapterServesCategory(a, category));
    t.same(served, ["chat", "embedding"], a.provider);
    await a.close?.();
  }
  t.same(
    ["audio", "image"].filter((category) => adapterServesCategory(adapter, category)),
    ["audio", "image"],
    "OpenAI itself serves both",
  );
});
