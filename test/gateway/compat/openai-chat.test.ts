// The official `openai` SDK against /openai/v1/chat/completions: plain and
// streamed answers (with include_usage), and the tool-call round trip plain
// and streamed, each through an OpenAI, an Anthropic and a Gemini model
// (the fakes speak each provider's real wire format).
import t from "tap";
import type OpenAI from "openai";
import { modelsByProvider, startCompatHarness, weatherTool } from "./openai-harness.ts";

t.setTimeout(60_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client();

for (const [provider, model] of Object.entries(modelsByProvider)) {
  t.test(`${provider} (${model}): plain answer in chat.completion shape`, async (t) => {
    const before = h.fakes[provider as keyof typeof modelsByProvider].requests.length;
    const { data, response, request_id } = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hello there" }] }).withResponse();
    t.equal(response.status, 200);
    t.match(data.id, /^chatcmpl-/);
    t.equal(data.object, "chat.completion");
    t.type(data.created, "number");
    t.equal(data.model, model);
    t.equal(data.choices.length, 1);
    t.match(data.choices[0], { index: 0, finish_reason: "stop", message: { role: "assistant", content: "Echo: hello there" } });
    t.notOk(data.choices[0]!.message.tool_calls, "no tool_calls when none were made");
    t.match(data.usage, { prompt_tokens: Number, completion_tokens: Number, total_tokens: Number });
    t.equal(data.usage!.total_tokens, data.usage!.prompt_tokens + data.usage!.completion_tokens);
    t.ok(request_id, "the SDK reads x-request-id");
    t.match(
      h.usage.filter((u) => u.request_id === request_id),
      [{ category: "chat", model, provider, input_tokens: data.usage!.prompt_tokens, output_tokens: data.usage!.completion_tokens }],
      "metered once, under the request id",
    );
    t.equal(h.fakes[provider as keyof typeof modelsByProvider].requests.length, before + 1, `${provider} served it`);
  });

  t.test(`${provider} (${model}): streamed chunks with include_usage`, async (t) => {
    const { data: stream, request_id } = await client.chat.completions
      .create({ model, messages: [{ role: "user", content: "hello stream" }], stream: true, stream_options: { include_usage: true } })
      .withResponse();
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    t.ok(chunks.length >= 4, "role, content, finish, usage");
    t.ok(chunks.every((c) => c.object === "chat.completion.chunk" && c.id === chunks[0]!.id), "one id, chunk objects");
    t.same(chunks[0]!.choices[0]!.delta, { role: "assistant", content: "" }, "the role delta first");
    const text = chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? "")).join("");
    t.equal(text, "Echo: hello stream");
    const finish = chunks.at(-2)!;
    t.equal(finish.choices[0]!.finish_reason, "stop");
    t.equal(finish.model, model);
    const last = chunks.at(-1)!;
    t.same(last.choices, [], "the usage chunk has empty choices");
    t.match(last.usage, { prompt_tokens: Number, completion_tokens: Number, total_tokens: Number });
    t.ok(chunks.slice(0, -1).every((c) => c.usage === null), "usage null on the others");
    t.match(h.usage.filter((u) => u.request_id === request_id), [{ category: "chat", model, input_tokens: last.usage!.prompt_tokens, output_tokens: last.usage!.completion_tokens }], "billed before the last chunk");
  });

  for (const stream of [false, true]) {
    t.test(`${provider} (${model}): tool-call round trip, ${stream ? "streamed" : "plain"}`, async (t) => {
      const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: "user", content: "Weather in Paris?" }];
      let call: { id: string; name: string; arguments: string };
      if (stream) {
        const s = client.chat.completions.stream({ model, messages, tools: [weatherTool], tool_choice: "auto", parallel_tool_calls: false });
        const final = await s.finalChatCompletion();
        t.equal(final.choices[0]!.finish_reason, "tool_calls");
        const calls = final.choices[0]!.message.tool_calls!;
        t.equal(calls.length, 1);
        const c = calls[0]!;
        if (c.type !== "function") throw new Error("expected a function call");
        call = { id: c.id, name: c.function.name, arguments: c.function.arguments };
      } else {
        const r = await client.chat.completions.create({ model, messages, tools: [weatherTool], tool_choice: "auto" });
        t.equal(r.choices[0]!.finish_reason, "tool_calls");
        // The Anthropic fake says a word before its tool_use block; the others answer with the call only.
        if (provider !== "anthropic") t.equal(r.choices[0]!.message.content, null, "content null beside tool calls only");
        const c = r.choices[0]!.message.tool_calls![0]!;
        if (c.type !== "function") throw new Error("expected a function call");
        t.equal(c.type, "function");
        call = { id: c.id, name: c.function.name, arguments: c.function.arguments };
      }
      t.equal(call.name, "get_weather");
      t.type(call.arguments, "string", "arguments as a JSON string");
      t.match(JSON.parse(call.arguments), { input: "Weather in Paris?" });
      messages.push(
        { role: "assistant", content: null, tool_calls: [{ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } }] },
        { role: "tool", tool_call_id: call.id, content: "sunny" },
      );
      if (stream) {
        const s = await client.chat.completions.create({ model, messages, tools: [weatherTool], stream: true });
        let text = "";
        for await (const chunk of s) text += chunk.choices[0]?.delta.content ?? "";
        t.match(text, /^Tool said: .*sunny/);
      } else {
        const r = await client.chat.completions.create({ model, messages, tools: [weatherTool] });
        t.equal(r.choices[0]!.finish_reason, "stop");
        t.match(r.choices[0]!.message.content, /^Tool said: .*sunny/);
      }
    });
  }
}

t.test("troupe/auto lets Troupe choose a text model", async (t) => {
  const r = await client.chat.completions.create({ model: "troupe/auto", messages: [{ role: "user", content: "hi" }] });
  t.equal(r.object, "chat.completion");
  t.not(r.model, "troupe/auto", "the answer names the model that served");
  t.equal(r.choices[0]!.message.content, "Echo: hi");
});
