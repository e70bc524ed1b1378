// Mistral end to end over HTTP, embedded mode: Troupe started from
// MISTRAL_* settings answers /v1/chat/completions (plain, SSE, tool round
// trips) and /v1/embeddings through the Mistral fake, which refuses what
// Mistral refuses (unknown fields such as stream_options, tool-call ids that
// are not 9 letters or digits). Also: finish_reason mapping and the id rewrite.
import t from "tap";
import { loadConfig } from "../../gateway/config.ts";
import { createAdapters } from "../../providers/index.ts";
import { mapMistralFinishReason, mistralToolCallId } from "../../providers/mistral/dialect.ts";
import { startMistralFake } from "../fakes/mistral-fake.ts";
import { field } from "../support/troupe.ts";
import { plainAndStreamed, post, postSse, startWith, toolRoundTrip, weatherTool } from "./provider-e2e.ts";

t.setTimeout(60_000);

t.test("finish_reason and tool-call ids", async (t) => {
  t.equal(mapMistralFinishReason("stop", false), "stop");
  t.equal(mapMistralFinishReason("length", false), "length");
  t.equal(mapMistralFinishReason("model_length", false), "length", "context window exhausted");
  t.equal(mapMistralFinishReason("tool_calls", true), "tool_calls");
  t.equal(mapMistralFinishReason("error", false), "error");
  t.equal(mistralToolCallId("D681PevKs"), "D681PevKs", "a Mistral id stays");
  const rewritten = mistralToolCallId("call_abc123def456");
  t.match(rewritten, /^[A-Za-z0-9]{9}$/);
  t.equal(mistralToolCallId("call_abc123def456"), rewritten, "the same id each time");
  t.not(mistralToolCallId("toolu_01"), rewritten);
});

const fake = await startMistralFake({ apiKey: "mi-key" });
const s = await startWith({ MISTRAL_API_KEY: "mi-key", MISTRAL_BASE_URL: `${fake.url}/v1` });
t.teardown(async () => {
  await s.troupe.stop();
  await fake.close();
});

t.test("chat, plain and streamed (usage from the last chunk, no stream_options)", async (t) => {
  await plainAndStreamed(t, s, "mistral-large-latest", "mistral");
  const last = fake.requests.at(-1)!;
  t.equal(last.path, "/v1/chat/completions");
  t.equal(last.headers.authorization, "Bearer mi-key");
  t.match(last.body, { model: "mistral-large-latest", stream: true });
  t.notOk((last.body as Record<string, unknown>).stream_options);
});

t.test("max_tokens is sent as max_tokens; a cut answer finishes with length", async (t) => {
  const r = await post(s, "/v1/chat/completions", { model: "mistral-small-latest", messages: [{ role: "user", content: "one two three four" }], max_tokens: 2 });
  t.equal(r.status, 200, r.text);
  t.match(r.body, { finish_reason: "length", provider: "mistral" });
  t.match(fake.requests.at(-1)!.body, { max_tokens: 2 });
});

for (const stream of [false, true]) {
  t.test(`tool round trip, ${stream ? "SSE" : "JSON"}`, async (t) => {
    const calls = await toolRoundTrip(t, s, "mistral-large-latest", stream);
    t.match(calls[0]!.id, /^[A-Za-z0-9]{9}$/, "Mistral's own id is passed through");
  });
}

t.test("a conversation with another provider's tool-call ids is accepted", async (t) => {
  const messages = [
    { role: "user", content: "Paris" },
    { role: "assistant", content: "", tool_calls: [{ id: "call_9f2a1c0b7e", name: "get_weather", arguments: { input: "Paris" } }] },
    { role: "tool", tool_call_id: "call_9f2a1c0b7e", content: "rainy" },
  ];
  const r = await post(s, "/v1/chat/completions", { model: "mistral-large-latest", routing_strategy: "manual", messages, tools: [weatherTool] });
  t.equal(r.status, 200, r.text);
  t.match(r.body, { content: "Tool said: rainy" });
  const sent = fake.requests.at(-1)!.body as { messages: { tool_calls?: { id: string }[]; tool_call_id?: string }[] };
  t.equal(sent.messages[1]!.tool_calls![0]!.id, sent.messages[2]!.tool_call_id, "the call and its answer keep one id");
  const st = await postSse(s, { model: "mistral-large-latest", routing_strategy: "manual", messages, tools: [weatherTool] });
  t.equal(st.status, 200, st.raw);
});

t.test("embeddings: mistral-embed, 1024 dimensions, no OpenAI-only fields", async (t) => {
  const r = await post(s, "/v1/embeddings", { model: "mistral-embed", routing_strategy: "manual", input: ["first", "second"] });
  t.equal(r.status, 200, r.text);
  t.match(r.body, { model: "mistral-embed", provider: "mistral", dimensions: 1024 });
  t.equal((field(r.body, "embeddings") as number[][])[1]!.length, 1024);
  t.same(Object.keys(fake.requests.at(-1)!.body as object).sort(), ["input", "model"]);
  const other = await post(s, "/v1/embeddings", { model: "mistral-embed", input: "x", dimensions: 64 });
  t.equal(other.status, 400, "a fixed-size model refuses other dimensions before any call");
});

t.test("an openai-compatible endpoint named mistral clashes only when MISTRAL_API_KEY is set too", async (t) => {
  const compatible = JSON.stringify([{ name: "mistral", base_url: `${fake.url}/v1`, models: ["mistral-small-latest"] }]);
  const alone = createAdapters(loadConfig({ OPENAI_COMPATIBLE_ENDPOINTS: compatible }).providers);
  t.equal(alone.get("mistral")?.provider, "mistral", "existing deployments keep working");
  for (const a of alone.values()) await a.close?.();
  t.throws(() => createAdapters(loadConfig({ OPENAI_COMPATIBLE_ENDPOINTS: compatible, MISTRAL_API_KEY: "k" }).providers), /mistral clashes/);
});
