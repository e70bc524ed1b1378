// LangChain's ChatOpenAI (@langchain/openai, pinned), unmodified in its
// default configuration but for the base URL and key, against an embedded
// Troupe's /openai/v1 and the OpenAI fake behind it: invoke, stream, a tool
// round trip whose ToolMessage sends `name` on the tool message (refused as
// an unknown field before), and withStructuredOutput with its default method
// (json_schema) on a GPT model.
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { ChatOpenAI } from "@langchain/openai";
import t from "tap";
import { z } from "zod";
import { startCompatHarness } from "./openai-harness.ts";

t.setTimeout(90_000);
// LangSmith tracing stays off: no network beyond the local gateway.
process.env["LANGCHAIN_TRACING_V2"] = "false";
process.env["LANGSMITH_TRACING"] = "false";
const h = await startCompatHarness();
t.teardown(() => h.stop());
const chat = (model = "gpt-4.1-mini") => new ChatOpenAI({ model, apiKey: h.user.testKey, configuration: { baseURL: h.baseURL }, maxRetries: 0 });

t.test("invoke", async (t) => {
  const answer = await chat().invoke("hello there");
  t.equal(answer.content, "Echo: hello there");
  t.ok((answer.usage_metadata?.input_tokens ?? 0) > 0, "usage read");
});

t.test("stream", async (t) => {
  let text = "";
  for await (const chunk of await chat().stream("hello there")) text += typeof chunk.content === "string" ? chunk.content : "";
  t.equal(text, "Echo: hello there");
});

t.test("a tool round trip: the ToolMessage sends name on the tool message", async (t) => {
  const weather = tool(async ({ input }) => JSON.stringify({ city: input, temp: 21 }), {
    name: "get_weather",
    description: "Weather for a city",
    schema: z.object({ input: z.string() }),
  });
  const model = chat().bindTools([weather]);
  const question = new HumanMessage("weather in Paris?");
  const first = await model.invoke([question]);
  const call = first.tool_calls?.[0];
  if (!call) throw new Error("expected a tool call");
  t.equal(call.name, "get_weather");
  const result = (await weather.invoke(call)) as ToolMessage;
  t.type(result, ToolMessage);
  t.equal(result.name, "get_weather", "LangChain names the tool on its message");
  const second = await model.invoke([question, first as AIMessage, result]);
  t.type(second.content, "string");
  const sent = h.fakes.openai.requests.at(-1)?.body as { messages: Record<string, unknown>[] };
  t.equal(sent.messages.at(-1)?.["role"], "tool", "the tool result reached OpenAI");
});

t.test("withStructuredOutput, default method, on a GPT model", async (t) => {
  const schema = z.object({ city: z.string(), population: z.number().int() });
  const structured = chat().withStructuredOutput(schema);
  const answer = await structured.invoke("the largest city of France");
  t.type(answer.city, "string");
  t.type(answer.population, "number");
  const sent = h.fakes.openai.requests.at(-1)?.body as { response_format?: { type: string } };
  t.equal(sent.response_format?.type, "json_schema", "LangChain's default is json_schema, sent on to OpenAI");
});
