// The one rule for each field of /openai/v1/chat/completions
// (docs/guides/compat-fields.md), through the official `openai` SDK against
// the provider fakes: a supported field reaches the fake as the provider's
// own field; a field that only changes how the provider works is named in
// troupe-ignored-params and absent at the fake; a field that changes the
// answer and that no model honours is a 400 naming it; a field unknown to
// OpenAI's API is a 400 naming it. Also: the prompt-cache reads and thinking
// tokens each provider reports show in OpenAI's usage details.
import t from "tap";
import OpenAI from "openai";
import { createOpenAIAdapter } from "../../../providers/openai/index.ts";
import { toGeminiBody } from "../../../providers/gemini/chat.ts";
import { createGeminiAdapter } from "../../../providers/gemini/index.ts";
import { startGeminiFake } from "../../fakes/gemini-fake.ts";
import { startOpenAIFake } from "../../fakes/openai-fake.ts";
import { startCompatHarness, weatherTool } from "./openai-harness.ts";

t.setTimeout(90_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client();

/** The body of the last request the fake received. */
function lastBody(fake: { requests: { body: unknown }[] }): Record<string, unknown> {
  const body = fake.requests[fake.requests.length - 1]?.body;
  if (typeof body !== "object" || body === null) throw new Error("the fake received nothing");
  return body as Record<string, unknown>;
}

async function refusal(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

/** In chat-fields.ts's order, which the header keeps. */
const ignoredFields = {
  store: true,
  metadata: { team: "search" },
  service_tier: "flex" as const,
  user: "u-1",
  safety_identifier: "s-1",
  prompt_cache_key: "k-1",
};

/** The tuning hints (providers/provider-hints.ts): sent to providers that take them, named for the others. */
const hintFields = {
  parallel_tool_calls: false,
  verbosity: "low" as const,
  presence_penalty: 0.5,
  frequency_penalty: -0.25,
  logit_bias: { "50256": -100 },
};

t.test("translated: reasoning_effort becomes Gemini's thinkingConfig, and its thinking tokens show in usage", async (t) => {
  const res = await client.chat.completions.create({ model: "gemini-2.5-flash", reasoning_effort: "high", messages: [{ role: "user", content: "think about it" }] });
  const sent = lastBody(h.fakes.gemini);
  t.same((sent["generationConfig"] as Record<string, unknown>)["thinkingConfig"], { thinkingBudget: 24_576 });
  t.equal(res.usage?.completion_tokens_details?.reasoning_tokens, 48, "the fake's thoughtsTokenCount");
  t.ok((res.usage?.completion_tokens ?? 0) >= 48, "thinking is part of the completion tokens");
  const off = await client.chat.completions.create({ model: "gemini-2.5-flash", reasoning_effort: "none", messages: [{ role: "user", content: "no thinking" }] });
  t.same((lastBody(h.fakes.gemini)["generationConfig"] as Record<string, unknown>)["thinkingConfig"], { thinkingBudget: 0 }, "none is off");
  t.equal(off.usage?.completion_tokens_details?.reasoning_tokens, 0);
});

t.test("translated: a streamed Gemini answer that thinks (its signed parts) streams the text and its thinking tokens", async (t) => {
  const stream = await client.chat.completions.create({
    model: "gemini-2.5-flash",
    reasoning_effort: "low",
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: "user", content: "hello there" }],
  });
  let text = "";
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? "";
    usage = chunk.usage ?? usage;
  }
  t.equal(text, "Echo: hello there", "the thought signature is not text");
  t.equal(usage?.completion_tokens_details?.reasoning_tokens, 48);
});

t.test("translated: reasoning_effort is not sent to an OpenAI model that does not reason (OpenAI would refuse it)", async (t) => {
  const res = await client.chat.completions.create({ model: "gpt-4.1-mini", reasoning_effort: "low", messages: [{ role: "user", content: "hello" }] });
  t.type(res.choices[0]?.message.content, "string");
  t.notOk("reasoning_effort" in lastBody(h.fakes.openai));
});

t.test("translated: the OpenAI adapter sends reasoning_effort to a reasoning model and reads its reasoning and cached tokens", async (t) => {
  const fake = await startOpenAIFake({ apiKey: "sk-x" });
  t.teardown(() => fake.close());
  const adapter = createOpenAIAdapter({ baseUrl: `${fake.url}/v1`, apiKey: "sk-x" });
  t.teardown(() => adapter.close?.());
  const messages = [
    // A prefix of 1,024 tokens or more: the fake caches as OpenAI does.
    { role: "system" as const, content: `be brief about ${"lighthouses ".repeat(1100)}` },
    { role: "user" as const, content: "first" },
  ];
  const first = await adapter.chat!({ messages, reasoning: { effort: "medium" } }, { upstreamModel: "o4-mini", signal: new AbortController().signal });
  t.equal(lastBody(fake)["reasoning_effort"], "medium");
  t.equal(first.extras?.reasoning_tokens, 64);
  t.notOk(first.extras?.cached_input_tokens, "nothing cached on a first call");
  const again = await adapter.chat!({ messages, reasoning: { budget_tokens: 31_999 } }, { upstreamModel: "o4-mini", signal: new AbortController().signal });
  t.equal(lastBody(fake)["reasoning_effort"], "high", "a token budget becomes the nearest effort");
  t.ok((again.extras?.cached_input_tokens ?? 0) > 0, "the repeated prefix was read from the cache");
});

t.test("ignored: fields that change only how the provider works are named in the header and not sent (JSON)", async (t) => {
  const { data, response } = await client.chat.completions
    .create({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "hello" }], ...ignoredFields })
    .withResponse();
  t.type(data.choices[0]?.message.content, "string");
  t.equal(response.headers.get("troupe-ignored-params"), Object.keys(ignoredFields).join(", "));
  const sent = lastBody(h.fakes.openai);
  for (const name of Object.keys(ignoredFields)) t.notOk(name in sent, `${name} not sent`);
});

t.test("hints: an OpenAI model gets parallel_tool_calls, the penalties and logit_bias as OpenAI's fields; verbosity (gpt-5 only) is named", async (t) => {
  const { response } = await client.chat.completions
    .create({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "weather?" }], tools: [weatherTool], ...hintFields })
    .withResponse();
  const sent = lastBody(h.fakes.openai);
  t.same(
    { parallel_tool_calls: sent["parallel_tool_calls"], presence_penalty: sent["presence_penalty"], frequency_penalty: sent["frequency_penalty"], logit_bias: sent["logit_bias"] },
    { parallel_tool_calls: false, presence_penalty: 0.5, frequency_penalty: -0.25, logit_bias: { "50256": -100 } },
  );
  t.notOk("verbosity" in sent, "gpt-4.1 would refuse verbosity");
  t.equal(response.headers.get("troupe-ignored-params"), "verbosity");
});

t.test("hints: the OpenAI adapter sends verbosity to a gpt-5 model, and no penalty or logit_bias (reasoning models refuse them)", async (t) => {
  const fake = await startOpenAIFake({ apiKey: "sk-x" });
  t.teardown(() => fake.close());
  const adapter = createOpenAIAdapter({ baseUrl: `${fake.url}/v1`, apiKey: "sk-x" });
  t.teardown(() => adapter.close?.());
  const tools = [{ name: "get_weather", description: "Weather", parameters: { type: "object", properties: {} } }];
  await adapter.chat!({ messages: [{ role: "user", content: "hi" }], tools, hints: hintFields }, { upstreamModel: "gpt-5-mini", signal: new AbortController().signal });
  const sent = lastBody(fake);
  t.same(
    [sent["verbosity"], sent["parallel_tool_calls"], "presence_penalty" in sent, "frequency_penalty" in sent, "logit_bias" in sent],
    ["low", false, false, false, false],
  );
  await adapter.chat!({ messages: [{ role: "user", content: "hi" }], hints: hintFields }, { upstreamModel: "gpt-5-mini", signal: new AbortController().signal });
  t.notOk("parallel_tool_calls" in lastBody(fake), "without tools (OpenAI refuses parallel_tool_calls there)");
});

t.test("hints: a Gemini model takes none of them: all named in the header (JSON and stream), none sent", async (t) => {
  const { response } = await client.chat.completions
    .create({ model: "gemini-2.5-flash", messages: [{ role: "user", content: "hello" }], ...hintFields })
    .withResponse();
  t.equal(response.headers.get("troupe-ignored-params"), Object.keys(hintFields).join(", "));
  const sent = JSON.stringify(lastBody(h.fakes.gemini));
  t.notMatch(sent, /enalty|logit|arallel|erbosity/, "nothing of them reached Gemini");
  const streamed = await client.chat.completions
    .create({ model: "gemini-2.5-flash", stream: true, store: true, messages: [{ role: "user", content: "hello" }], ...hintFields })
    .withResponse();
  for await (const _chunk of streamed.data);
  t.equal(streamed.response.headers.get("troupe-ignored-params"), ["store", ...Object.keys(hintFields)].join(", "));
});

t.test("hints: a Claude model takes parallel_tool_calls: false as tool_choice.disable_parallel_tool_use; the rest are named", async (t) => {
  const { response } = await client.chat.completions
    .create({ model: "claude-haiku-4-5", messages: [{ role: "user", content: "weather?" }], tools: [weatherTool], tool_choice: "required", ...hintFields })
    .withResponse();
  t.same(lastBody(h.fakes.anthropic)["tool_choice"], { type: "any", disable_parallel_tool_use: true });
  t.equal(response.headers.get("troupe-ignored-params"), "verbosity, presence_penalty, frequency_penalty, logit_bias");
  const streamed = await client.chat.completions
    .create({ model: "claude-haiku-4-5", stream: true, messages: [{ role: "user", content: "weather?" }], tools: [weatherTool], parallel_tool_calls: false })
    .withResponse();
  for await (const _chunk of streamed.data);
  t.same(lastBody(h.fakes.anthropic)["tool_choice"], { type: "auto", disable_parallel_tool_use: true }, "no tool_choice: auto, one call at most");
  t.equal(streamed.response.headers.get("troupe-ignored-params"), null, "nothing ignored");
});

t.test("ignored: the same header on a streamed answer", async (t) => {
  const { data, response } = await client.chat.completions
    .create({ model: "gemini-2.5-flash", stream: true, store: false, metadata: { a: "b" }, messages: [{ role: "user", content: "hello" }] })
    .withResponse();
  let text = "";
  for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? "";
  t.ok(text.length > 0);
  t.equal(response.headers.get("troupe-ignored-params"), "store, metadata");
  t.notOk("store" in lastBody(h.fakes.gemini));
});

t.test("no header when nothing was ignored", async (t) => {
  const { response } = await client.chat.completions.create({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "hello" }] }).withResponse();
  t.equal(response.headers.get("troupe-ignored-params"), null);
});

t.test("answer-changing: n > 1, logprobs, audio output and a web search are refused by name, before any provider call", async (t) => {
  const before = h.fakes.openai.requests.length;
  const cases: [Record<string, unknown>, string][] = [
    [{ n: 2 }, "n"],
    [{ logprobs: true, top_logprobs: 2 }, "logprobs"],
    [{ top_logprobs: 3 }, "top_logprobs"],
    [{ modalities: ["text", "audio"], audio: { format: "wav", voice: "alloy" } }, "modalities"],
    [{ web_search_options: {} }, "web_search_options"],
  ];
  for (const [fields, param] of cases) {
    const e = await refusal(client.chat.completions.create({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "hi" }], ...fields }));
    t.equal(e.status, 400, param);
    t.equal((e.error as { param?: string }).param, param);
    t.match(e.message, /no model served by Troupe answers with/);
  }
  const routed = await refusal(client.chat.completions.create({ model: "troupe/auto", n: 3, messages: [{ role: "user", content: "hi" }] }));
  t.equal((routed.error as { param?: string }).param, "n", "a routing name too");
  t.equal(h.fakes.openai.requests.length, before, "no provider call");
  // What does not change the answer is served: n 1, logprobs false, text only.
  const fine = await client.chat.completions.create({ model: "gpt-4.1-mini", n: 1, logprobs: false, modalities: ["text"], messages: [{ role: "user", content: "hi" }] });
  t.equal(fine.choices.length, 1);
});

t.test("unknown: a field OpenAI's API does not have is a 400 naming it", async (t) => {
  const body = { model: "gpt-4.1-mini", messages: [{ role: "user", content: "hi" }], not_a_field: 1 };
  const e = await refusal(client.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsNonStreaming));
  t.equal(e.status, 400);
  t.match(e.message, /not_a_field/);
  const inMessage = { model: "gpt-4.1-mini", messages: [{ role: "tool", content: "x", tool_call_id: "c", bogus: true }] };
  const e2 = await refusal(client.chat.completions.create(inMessage as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming));
  t.match(e2.message, /bogus/);
});

t.test("a tool round trip with name on the tool message and a developer message", async (t) => {
  const first = await client.chat.completions.create({ model: "gpt-4.1-mini", tools: [weatherTool], messages: [{ role: "developer", content: "use tools" }, { role: "user", content: "weather in Paris?" }] });
  const call = first.choices[0]?.message.tool_calls?.[0];
  if (!call || call.type !== "function") throw new Error("expected a function call");
  const tool = { role: "tool" as const, tool_call_id: call.id, name: call.function.name, content: '{"temp":21}' };
  const second = await client.chat.completions.create({
    model: "gpt-4.1-mini",
    tools: [weatherTool],
    messages: [{ role: "user", content: "weather in Paris?" }, first.choices[0]!.message, tool as OpenAI.ChatCompletionToolMessageParam],
  });
  t.equal(second.choices[0]?.finish_reason, "stop");
  const sent = lastBody(h.fakes.openai)["messages"] as Record<string, unknown>[];
  t.equal(sent[2]?.["role"], "tool");
});

t.test("the deprecated functions / function_call form round-trips", async (t) => {
  const functions = [weatherTool.function];
  const first = await client.chat.completions.create({ model: "gpt-4.1-mini", functions, messages: [{ role: "user", content: "weather in Paris?" }] });
  const call = first.choices[0]?.message.function_call;
  t.equal(first.choices[0]?.finish_reason, "function_call");
  if (!call) throw new Error("expected a function_call");
  t.equal(call.name, "get_weather");
  const second = await client.chat.completions.create({
    model: "gpt-4.1-mini",
    functions,
    messages: [{ role: "user", content: "weather in Paris?" }, { role: "assistant", content: null, function_call: call }, { role: "function", name: call.name, content: '{"temp":21}' }],
  });
  t.equal(second.choices[0]?.finish_reason, "stop");
});

t.test("prompt-cache reads show in usage.prompt_tokens_details.cached_tokens (OpenAI and Gemini)", async (t) => {
  for (const model of ["gpt-4.1-mini", "gemini-2.5-flash"]) {
    const history: OpenAI.ChatCompletionMessageParam[] = [
      { role: "system", content: `a stable system prompt for ${model}` },
      // The fakes cache a prefix of 1,024 tokens or more, as the providers do.
      { role: "user", content: `first question about ${"lighthouses ".repeat(1100)}` },
      { role: "assistant", content: "a first answer" },
    ];
    const cold = await client.chat.completions.create({ model, messages: [...history, { role: "user", content: "one" }] });
    t.equal(cold.usage?.prompt_tokens_details?.cached_tokens, 0, `${model}: cold`);
    const warm = await client.chat.completions.create({ model, stream: true, stream_options: { include_usage: true }, messages: [...history, { role: "user", content: "two" }] });
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of warm) usage = chunk.usage ?? usage;
    t.ok((usage?.prompt_tokens_details?.cached_tokens ?? 0) > 0, `${model}: warm, streamed`);
    t.ok((usage?.prompt_tokens_details?.cached_tokens ?? 0) <= (usage?.prompt_tokens ?? 0), "a part of the prompt tokens");
  }
});

t.test("Gemini's thoughtSignature goes back on the function call of the turn that made it", async (t) => {
  const body = toGeminiBody(
    {
      messages: [
        { role: "user", content: "weather?" },
        { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "get_weather", arguments: { input: "Paris" } }], reasoning: [{ provider: "gemini", text: "", signature: "sig-1" }, { provider: "anthropic", text: "x", signature: "other" }] },
        { role: "tool", content: "{}", tool_call_id: "c1" },
      ],
    },
    "gemini-2.5-flash",
  );
  const model = (body["contents"] as { role: string; parts: Record<string, unknown>[] }[])[1]!;
  t.equal(model.parts[0]?.["thoughtSignature"], "sig-1");
  t.equal(model.parts.length, 1, "another provider's block is not sent");
});

t.test("the Gemini adapter keeps a thinking answer's signature in extras.reasoning, and Gemini accepts it back", async (t) => {
  const fake = await startGeminiFake({ apiKey: "g-key" });
  t.teardown(() => fake.close());
  const adapter = createGeminiAdapter({ baseUrl: fake.url, apiKey: "g-key" });
  t.teardown(() => adapter.close?.());
  const opts = { upstreamModel: "gemini-2.5-flash", signal: new AbortController().signal };
  const tools = [{ name: "get_weather", description: "Weather", parameters: weatherTool.function.parameters }];
  const question = { role: "user" as const, content: "weather in Paris?" };
  const first = await adapter.chat!({ messages: [question], tools, reasoning: { effort: "low" } }, opts);
  const call = first.tool_calls?.[0];
  if (!call) throw new Error("expected a tool call");
  const blocks = first.extras?.reasoning ?? [];
  t.match(blocks, [{ provider: "gemini", signature: /^sig-/ }]);
  const turn = { role: "assistant" as const, content: "", tool_calls: [call], reasoning: blocks };
  const second = await adapter.chat!({ messages: [question, turn, { role: "tool", content: "{}", tool_call_id: call.id }], tools, reasoning: { effort: "low" } }, opts);
  t.type(second.content, "string");
  const forged = { ...turn, reasoning: [{ provider: "gemini", text: "", signature: "sig-forged" }] };
  await t.rejects(adapter.chat!({ messages: [question, forged, { role: "tool", content: "{}", tool_call_id: call.id }], tools }, opts), "the fake checks what comes back");
});
