// POST /v1/chat/completions end to end over HTTP: the same tool-calling
// conversation through every adapter (fakes) and the simulated provider,
// JSON and SSE; validation 400s; errors before and after a stream started;
// usage records.
import t from "tap";
import { field } from "../../support/troupe.ts";
import { postSse, startAiHarness } from "./ai-harness.ts";

t.setTimeout(60_000);
const h = await startAiHarness();
t.teardown(() => h.stop());

const tool = {
  name: "get_weather",
  description: "Weather for a city",
  parameters: { type: "object", properties: { input: { type: "string" } }, required: ["input"] },
};
const post = (body: unknown) => h.troupe.request("POST", "/v1/chat/completions", { token: h.key, body });

for (const model of ["gpt-4.1-mini", "claude-haiku-4-5", "gemini-2.5-flash", "local/llama-3.1-8b", "simulated-chat"]) {
  for (const stream of [false, true]) {
    t.test(`${model}: tool round trip, ${stream ? "SSE" : "JSON"}`, async (t) => {
      // The fakes call the first declared tool whenever tools are given; the
      // simulated model follows the `call <tool>` convention.
      const messages: Record<string, unknown>[] = [{ role: "user", content: 'call get_weather {"input":"Paris"}' }];
      const body = { model, routing_strategy: "manual", messages, tools: [tool], stream };
      let calls: { id: string; name: string; arguments: Record<string, unknown> }[];
      let content: string;
      if (stream) {
        const r = await postSse(h, "/v1/chat/completions", body);
        t.equal(r.status, 200);
        t.match(r.contentType, /^text\/event-stream/);
        t.ok(r.done, "ends with [DONE]");
        const last = r.events.at(-1)!;
        t.match(last, { finish_reason: "tool_calls", model, input_tokens: Number, output_tokens: Number });
        calls = r.events.filter((e) => "tool_call" in e).map((e) => e.tool_call as (typeof calls)[number]);
        content = r.events.filter((e) => "delta" in e).map((e) => e.delta).join("");
      } else {
        const r = await post(body);
        t.equal(r.status, 200, r.text);
        t.match(r.body, { finish_reason: "tool_calls", model, provider: String, input_tokens: Number, output_tokens: Number });
        calls = field(r.body, "tool_calls") as typeof calls;
        content = String(field(r.body, "content"));
      }
      t.equal(calls.length, 1);
      t.equal(calls[0]!.name, "get_weather");
      t.type(calls[0]!.arguments, "object");
      messages.push({ role: "assistant", content, tool_calls: calls }, { role: "tool", tool_call_id: calls[0]!.id, content: "sunny" });
      if (stream) {
        const r = await postSse(h, "/v1/chat/completions", body);
        const text = r.events.filter((e) => "delta" in e).map((e) => e.delta).join("");
        t.match(text, /sunny/);
        t.match(r.events.at(-1), { finish_reason: "stop", model });
        t.ok(r.events.slice(0, -1).every((e) => "delta" in e), "only deltas before the final event");
      } else {
        const r = await post(body);
        t.equal(r.status, 200, r.text);
        t.match(r.body, { finish_reason: "stop", tool_calls: null, model });
        t.match(String(field(r.body, "content")), /sunny/);
      }
    });
  }
}

t.test("usage records name the serving model and its cost", async (t) => {
  const before = h.usage.length;
  const r = await post({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "hello there" }] });
  t.equal(r.status, 200);
  const u = h.usage.slice(before);
  t.equal(u.length, 1);
  t.match(u[0], { category: "chat", model: "gpt-4.1-mini", provider: "openai", live: false, input_tokens: Number, output_tokens: 3 });
  t.equal(u[0]!.cost_usd, 0, "a test key's call is recorded unbilled");
  t.equal(u[0]!.request_id, r.headers.get("x-request-id"));
});

t.test("auto falls back and says who served", async (t) => {
  h.fakes.openai.faults.queue.push({ kind: "status", status: 503 });
  const r = await post({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "hi" }] });
  t.equal(r.status, 200);
  t.equal(field(r.body, "provider"), "anthropic");
  t.equal(field(r.body, "model"), "claude-haiku-4-5");
});

t.test("invalid requests are 400s naming the problem, before any provider call", async (t) => {
  const calls = () => Object.values(h.fakes).reduce((n, f) => n + f.requests.length, 0);
  const before = calls();
  const cases: [unknown, RegExp][] = [
    [{ messages: [{ role: "robot", content: "x" }] }, /messages\.0\.role/],
    [{ messages: [{ role: "user", content: "x" }, { role: "tool", tool_call_id: "c9", content: "r" }] }, /tool_call_id/],
    [{ messages: [{ role: "user", content: "x" }], n: 2 }, /\bn\b/],
    [{ messages: [{ role: "user", content: "x" }], model: "text-embedding-3-small" }, /embedding model/],
    [{ messages: [{ role: "user", content: "x" }], routing_strategy: "manual" }, /manual needs a model/],
    [{ messages: [{ role: "user", content: "x" }], model: "nope-1" }, /unknown model/],
    [{ messages: [] }, /messages/],
    [{ messages: [{ role: "user", content: "x" }], routing_strategy: "fastest" }, /routing_strategy/],
  ];
  for (const [body, pattern] of cases) {
    const r = await post(body);
    t.equal(r.status, 400, JSON.stringify(body));
    t.equal(field(r.body, "error", "code"), "invalid_request");
    t.match(JSON.stringify(r.body), pattern, JSON.stringify(body));
  }
  const streamBad = await postSse(h, "/v1/chat/completions", { stream: true, model: "nope-1", messages: [{ role: "user", content: "x" }] });
  t.equal(streamBad.status, 400, "errors before the stream starts keep their HTTP status");
  t.equal(calls(), before, "no provider was called");
});

t.test("unavailable provider: 503 no_provider_available", async (t) => {
  const r = await post({ model: "claude-opus-4-1", routing_strategy: "manual", messages: [{ role: "user", content: "x" }] });
  t.equal(r.status, 200, "configured");
  const breaker = h.router.healthOf("gemini");
  breaker.breaker.isolate();
  const down = await post({ model: "gemini-2.5-flash", routing_strategy: "manual", messages: [{ role: "user", content: "x" }] });
  t.equal(down.status, 503);
  t.equal(field(down.body, "error", "code"), "no_provider_available");
});

t.test("a failure after the stream started: final error event, then [DONE]", async (t) => {
  h.fakes.openai.faults.queue.push({ kind: "cut" });
  h.fakes.openai.faults.eventDelayMs = 20;
  const r = await postSse(h, "/v1/chat/completions", {
    stream: true,
    model: "gpt-4.1-mini",
    routing_strategy: "manual",
    messages: [{ role: "user", content: "one two three four five six seven eight nine ten" }],
  });
  h.fakes.openai.faults.eventDelayMs = 0;
  t.equal(r.status, 200);
  t.ok(r.events.length >= 2);
  t.ok("delta" in r.events[0]!);
  t.match(r.events.at(-1), { error: { code: "provider_error", message: String } });
  t.ok(r.done);
});

t.test("SSE wire format", async (t) => {
  const r = await postSse(h, "/v1/chat/completions", { stream: true, model: "simulated-chat", messages: [{ role: "user", content: "Hi!" }] });
  t.equal(r.raw, 'data: {"delta":"Simulated reply to: Hi!"}\n\ndata: {"finish_reason":"stop","input_tokens":5,"output_tokens":6,"model":"simulated-chat","provider":"simulated"}\n\ndata: [DONE]\n\n');
});

t.test("client disconnect aborts the upstream stream", async (t) => {
  h.fakes.openai.faults.eventDelayMs = 100;
  const ctl = new AbortController();
  const res = await fetch(`http://127.0.0.1:${h.troupe.port}/v1/chat/completions`, {
    method: "POST",
    signal: ctl.signal,
    headers: { authorization: `Bearer ${h.key}`, "content-type": "application/json" },
    body: JSON.stringify({ stream: true, model: "gpt-4.1-mini", routing_strategy: "manual", messages: [{ role: "user", content: "a b c d e f g h i j k l m n o p" }] }),
  });
  const reader = res.body!.getReader();
  await reader.read();
  const before = h.usage.length;
  ctl.abort();
  await new Promise((r) => setTimeout(r, 400));
  h.fakes.openai.faults.eventDelayMs = 0;
  t.equal(h.usage.length, before, "the stream never finished, so no usage was recorded for it");
  // The next request on the same provider is served normally.
  const ok = await post({ model: "gpt-4.1-mini", routing_strategy: "manual", messages: [{ role: "user", content: "x" }] });
  t.equal(ok.status, 200);
});
