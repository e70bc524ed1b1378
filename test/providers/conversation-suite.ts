// One shared case for every chat adapter: the same tool-calling conversation,
// JSON and streaming, against the adapter's fake (which speaks the provider's real wire format).
import type { Test } from "tap";
import type { ChatMessage, ChatRequest } from "../../providers/chat-request.ts";
import type { ProviderAdapter, StreamEvent, ToolCall } from "../../providers/types.ts";

export const weatherTool = {
  name: "get_weather",
  description: "Weather for a city",
  parameters: { type: "object", properties: { input: { type: "string" }, n: { type: "integer" } }, required: ["input"] },
};

export async function collect(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

export function streamSummary(events: StreamEvent[]) {
  let text = "";
  const toolCalls: ToolCall[] = [];
  for (const e of events) {
    if ("delta" in e) text += e.delta;
    if ("tool_call" in e) toolCalls.push(e.tool_call);
  }
  const last = events[events.length - 1];
  return { text, toolCalls, finish: last && "finish_reason" in last ? last : undefined };
}

export async function conversationSuite(t: Test, adapter: ProviderAdapter, model: string): Promise<void> {
  const opts = { signal: new AbortController().signal, upstreamModel: model };
  const base: ChatRequest = { messages: [{ role: "user", content: "Hello fake world" }] };

  await t.test("plain JSON answer", async (t) => {
    const r = await adapter.chat!(base, opts);
    t.equal(r.content, "Echo: Hello fake world");
    t.equal(r.finish_reason, "stop");
    t.equal(r.provider, adapter.provider);
    t.ok(r.input_tokens > 0, "input tokens counted upstream");
    t.equal(r.output_tokens, 4);
    t.equal(r.tool_calls, null);
  });

  await t.test("plain streamed answer: deltas concatenate to the content, final event last", async (t) => {
    const events = await collect(adapter.chatStream!(base, opts));
    const s = streamSummary(events);
    t.ok(events.filter((e) => "delta" in e).length >= 2, "several deltas");
    t.equal(s.text, "Echo: Hello fake world");
    t.equal(s.finish?.finish_reason, "stop");
    t.equal(s.finish?.output_tokens, 4);
    t.ok((s.finish?.input_tokens ?? 0) > 0);
  });

  await t.test("max_tokens cuts the answer with finish_reason length", async (t) => {
    const r = await adapter.chat!({ ...base, max_tokens: 2 }, opts);
    t.equal(r.content, "Echo: Hello");
    t.equal(r.finish_reason, "length");
  });

  for (const streaming of [false, true]) {
    await t.test(`tool-call round trip (${streaming ? "stream" : "JSON"})`, async (t) => {
      const messages: ChatMessage[] = [
        { role: "system", content: "You are terse." },
        { role: "user", content: "Weather in Paris?" },
      ];
      const req: ChatRequest = { messages, tools: [weatherTool] };
      let calls: ToolCall[];
      let content: string;
      if (streaming) {
        const s = streamSummary(await collect(adapter.chatStream!(req, opts)));
        t.equal(s.finish?.finish_reason, "tool_calls");
        calls = s.toolCalls;
        content = s.text;
      } else {
        const r = await adapter.chat!(req, opts);
        t.equal(r.finish_reason, "tool_calls");
        calls = r.tool_calls ?? [];
        content = r.content;
      }
      t.equal(calls.length, 1);
      t.equal(calls[0]!.name, "get_weather");
      t.same(calls[0]!.arguments, { input: "Weather in Paris?", n: 1 }, "arguments parsed into an object");
      t.ok(calls[0]!.id.length > 0);
      const next: ChatMessage[] = [
        ...messages,
        { role: "assistant", content, tool_calls: calls },
        { role: "tool", tool_call_id: calls[0]!.id, content: "sunny, 21 C" },
      ];
      const final = streaming
        ? streamSummary(await collect(adapter.chatStream!({ ...req, messages: next }, opts)))
        : await adapter.chat!({ ...req, messages: next }, opts);
      const text = "text" in final ? final.text : final.content;
      t.match(text, /^Tool said: .*sunny, 21 C/);
      t.equal("finish" in final ? final.finish?.finish_reason : final.finish_reason, "stop");
    });
  }
}
