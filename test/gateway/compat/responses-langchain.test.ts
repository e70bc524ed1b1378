// LangChain's ChatOpenAI (@langchain/openai 1.6.0, pinned) on the Responses
// API, `new ChatOpenAI({ useResponsesApi: true })`, unmodified but for the
// base URL and key, against an embedded Troupe's /openai/v1 over real
// sockets: invoke, a stream, and a tool round trip (bindTools, the
// ToolMessage sent back as a function_call_output), plain and streamed —
// through an OpenAI, an Anthropic and a Gemini model on the fakes and the
// simulated provider.
import { AIMessage, AIMessageChunk, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { ChatOpenAI } from "@langchain/openai";
import t from "tap";
import { z } from "zod";
import { modelsByProvider, startCompatHarness } from "./openai-harness.ts";

t.setTimeout(120_000);
// LangSmith tracing stays off: no network beyond the local gateway.
process.env["LANGCHAIN_TRACING_V2"] = "false";
process.env["LANGSMITH_TRACING"] = "false";
const h = await startCompatHarness();
t.teardown(() => h.stop());

const models = { ...modelsByProvider, simulated: "simulated-chat" } as const;
const chat = (model: string) => new ChatOpenAI({ model, useResponsesApi: true, apiKey: h.user.testKey, configuration: { baseURL: h.baseURL }, maxRetries: 0 });
const weather = tool(async ({ input }) => JSON.stringify({ city: input, temp: 21 }), {
  name: "get_weather",
  description: "Weather for a city",
  schema: z.object({ input: z.string() }),
});
const text = (m: { content: unknown }) => (typeof m.content === "string" ? m.content : (m.content as { type: string; text?: string }[]).map((p) => (p.type === "text" ? (p.text ?? "") : "")).join(""));

for (const [provider, model] of Object.entries(models)) {
  const simulated = provider === "simulated";

  t.test(`${provider} (${model}): invoke and stream`, async (t) => {
    const answer = await chat(model).invoke("hello there");
    if (simulated) t.match(text(answer), /\S/);
    else t.equal(text(answer), "Echo: hello there");
    t.match(answer.response_metadata?.["id"], /^resp_/, "the Responses API answered");
    t.ok((answer.usage_metadata?.input_tokens ?? 0) > 0, "usage read");
    const pieces: string[] = [];
    for await (const chunk of await chat(model).stream("hello stream")) pieces.push(text(chunk));
    t.ok(pieces.filter((p) => p !== "").length >= 1, "text arrived in chunks");
    if (simulated) t.match(pieces.join(""), /\S/);
    else t.equal(pieces.join(""), "Echo: hello stream");
  });

  for (const streamed of [false, true]) {
    t.test(`${provider} (${model}): bindTools, a ToolMessage back, ${streamed ? "streamed" : "plain"}`, async (t) => {
      // The simulated model calls a tool only when made to. LangChain 1.6.0's Responses path drops a
      // string tool_choice ("required" formats to a string, which it only keeps as an object), so
      // the tool is named: that is sent as {type: "function", name}.
      const bound = chat(model).bindTools([weather], simulated ? { tool_choice: "get_weather" } : {});
      const question = new HumanMessage("weather in Paris?");
      const since = h.usage.length;
      let first: AIMessage;
      if (streamed) {
        let acc: AIMessageChunk | undefined;
        for await (const chunk of await bound.stream([question])) acc = acc ? acc.concat(chunk) : chunk;
        if (!acc) throw new Error("no chunks");
        first = acc;
      } else first = await bound.invoke([question]);
      const call = first.tool_calls?.[0];
      if (!call) throw new Error(`expected a tool call, got ${JSON.stringify(first.content)}`);
      t.equal(call.name, "get_weather");
      t.match(call.id, /\S/, "the call has an id to answer");
      if (!simulated) t.same(call.args, { input: "weather in Paris?", n: 1 });
      const result = (await weather.invoke(call)) as ToolMessage;
      t.type(result, ToolMessage);
      const after = chat(model).bindTools([weather]);
      const second = streamed
        ? await (async () => {
            let acc: AIMessageChunk | undefined;
            for await (const chunk of await after.stream([question, first, result])) acc = acc ? acc.concat(chunk) : chunk;
            if (!acc) throw new Error("no chunks");
            return acc;
          })()
        : await after.invoke([question, first, result]);
      if (!simulated) t.match(text(second), /^Tool said: .*"temp":21/, "the model answered from the tool's output");
      else t.match(text(second), /\S/);
      t.equal(h.usage.slice(since).filter((u) => u.category === "chat").length, 2, "two Responses calls, both billed");
    });
  }
}
