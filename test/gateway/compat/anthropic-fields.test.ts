// The /anthropic mount's rule per request field (docs/guides/anthropic-compatible.md),
// over real sockets through the official SDK, each checked at the fake the
// provider runs as: a supported field reaches the provider as its own field;
// a field that changes only how the provider works is named in
// troupe-ignored-params (JSON and stream) and reaches no provider; a field
// that would change the answer in a way no provider can honour is a 400
// naming it; an unknown field is a 400 naming it, in Anthropic's shape.
import Anthropic from "@anthropic-ai/sdk";
import t from "tap";
import type { RecordedRequest } from "../../fakes/fake-server.ts";
import { models, startCompatHarness } from "./anthropic-harness.ts";

t.setTimeout(90_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client(undefined, { maxRetries: 0 });
const hello: Anthropic.MessageCreateParamsNonStreaming = { model: models.anthropic, max_tokens: 4096, messages: [{ role: "user", content: "hello there" }] };

type Body = Record<string, unknown> & { messages: { role: string; content: unknown }[] };
const last = (requests: RecordedRequest[]): Body => requests[requests.length - 1]!.body as Body;

/** A raw POST (for bodies and headers the SDK's types would not let through). */
async function post(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${h.troupe.url}/anthropic/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": h.liveKey, "anthropic-version": "2023-06-01", ...headers },
    body: JSON.stringify(body),
  });
}

async function refusal(answer: Response): Promise<{ status: number; body: { type: string; error: { type: string; message: string } } }> {
  return { status: answer.status, body: (await answer.json()) as { type: string; error: { type: string; message: string } } };
}

t.test("translated: thinking.budget_tokens reaches Anthropic as thinking (temperature left out, as Anthropic requires with thinking)", async (t) => {
  // temperature: gone from the current SDK's types, still sent by older clients.
  const m = await client.messages.create({ ...hello, temperature: 0.5, thinking: { type: "enabled", budget_tokens: 2048 } } as Anthropic.MessageCreateParamsNonStreaming);
  const sent = last(h.fakes.anthropic.requests);
  t.same(sent.thinking, { type: "enabled", budget_tokens: 2048 });
  t.equal(sent.temperature, undefined);
  t.equal(m.content[0]?.type, "thinking", "the answer's thinking block comes first");
});

t.test("translated: adaptive thinking with output_config.effort becomes that effort's budget; disabled sends none", async (t) => {
  await client.messages.create({ ...hello, thinking: { type: "adaptive" }, output_config: { effort: "low" } } as Anthropic.MessageCreateParamsNonStreaming);
  t.same(last(h.fakes.anthropic.requests).thinking, { type: "enabled", budget_tokens: 2048 }, "low: 2048 tokens");
  await client.messages.create({ ...hello, max_tokens: 3000, thinking: { type: "adaptive" } } as Anthropic.MessageCreateParamsNonStreaming);
  t.same(last(h.fakes.anthropic.requests).thinking, { type: "enabled", budget_tokens: 2999 }, "adaptive is high (16384), under max_tokens");
  const m = await client.messages.create({ ...hello, thinking: { type: "disabled" } });
  t.equal(last(h.fakes.anthropic.requests).thinking, undefined);
  t.same(m.content.map((b) => b.type), ["text"]);
});

t.test("translated: a system turn inside messages is a system message (GPT); output_config.format is response_format", async (t) => {
  const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false };
  await client.messages.create({
    model: models.openai,
    max_tokens: 100,
    messages: [
      { role: "user", content: "hello" },
      { role: "system", content: [{ type: "text", text: "Answer in French." }] },
    ],
    output_config: { format: { type: "json_schema", schema } },
  } as unknown as Anthropic.MessageCreateParamsNonStreaming);
  const sent = last(h.fakes.openai.requests) as Body & { response_format?: { type: string; json_schema?: { schema?: unknown } } };
  t.match(sent.messages, [{ role: "user", content: "hello" }, { role: "system", content: "Answer in French." }]);
  t.match(sent.response_format, { type: "json_schema", json_schema: { schema } });
});

t.test("translated: cache_control reaches Anthropic on its block, and the second call reads the cache (usage)", async (t) => {
  const system: Anthropic.TextBlockParam[] = [{ type: "text", text: "You are a careful assistant with a long shared preamble.", cache_control: { type: "ephemeral" } }];
  const first = await client.messages.create({ ...hello, system }).withResponse();
  const sent = last(h.fakes.anthropic.requests) as Body & { system: unknown };
  t.match(sent.system, [{ type: "text", cache_control: { type: "ephemeral" } }]);
  t.equal(first.response.headers.get("troupe-ignored-params"), null, "sent on: not listed");
  t.ok((first.data.usage.cache_creation_input_tokens ?? 0) > 0, "the first call writes the cache");
  const second = await client.messages.create({ ...hello, system });
  t.ok((second.usage.cache_read_input_tokens ?? 0) > 0, "the second reads it");
  t.equal(second.usage.cache_creation_input_tokens, 0);
});

t.test("translated: cache_control on a tool and at the top level (automatic caching) reach Anthropic; the second call reads the cache", async (t) => {
  const tools: Anthropic.Tool[] = [
    { name: "get_weather", description: "Weather for a city, with a long shared description", input_schema: { type: "object", properties: { city: { type: "string" } } } },
    { name: "get_time", description: "Time in a city", input_schema: { type: "object", properties: { city: { type: "string" } } }, cache_control: { type: "ephemeral", ttl: "1h" } },
  ];
  const ask = { ...hello, tools, messages: [{ role: "user" as const, content: "what time is it in Oslo, by the clock tower?" }] };
  const first = await client.messages.create(ask).withResponse();
  const sent = last(h.fakes.anthropic.requests) as Body & { tools: Record<string, unknown>[] };
  t.same(sent.tools.map((tool) => tool["cache_control"]), [undefined, { type: "ephemeral", ttl: "1h" }], "on the tool it was on");
  t.equal(first.response.headers.get("troupe-ignored-params"), null, "sent on: not listed");
  t.ok((first.data.usage.cache_creation_input_tokens ?? 0) > 0, "the tools were written to the cache");
  const again = await client.messages.create(ask);
  t.ok((again.usage.cache_read_input_tokens ?? 0) > 0, "and read back");

  const automatic = { ...hello, messages: [{ role: "user" as const, content: "a question asked twice, cached whole by the automatic breakpoint" }], cache_control: { type: "ephemeral" } };
  const cold = await client.messages.create(automatic as Anthropic.MessageCreateParamsNonStreaming).withResponse();
  t.same(last(h.fakes.anthropic.requests)["cache_control"], { type: "ephemeral" }, "the top-level field, as sent");
  t.equal(cold.response.headers.get("troupe-ignored-params"), null);
  t.ok((cold.data.usage.cache_creation_input_tokens ?? 0) > 0);
  const warm = await client.messages.create(automatic as Anthropic.MessageCreateParamsNonStreaming);
  t.ok((warm.usage.cache_read_input_tokens ?? 0) > 0, "the same prompt reads what the automatic breakpoint cached");

  const onGemini = await post({ ...automatic, model: models.gemini, tools });
  await onGemini.json();
  t.equal(onGemini.headers.get("troupe-ignored-params"), "cache_control", "a provider that caches on its own: named");
  t.notMatch(JSON.stringify(last(h.fakes.gemini.requests)), /cache_control|ephemeral/);
});

t.test("translated: disable_parallel_tool_use reaches Anthropic and OpenAI as their own field", async (t) => {
  const weather: Anthropic.Tool = { name: "get_weather", description: "Weather", input_schema: { type: "object", properties: { city: { type: "string" } } } };
  const ask = { ...hello, tools: [weather], tool_choice: { type: "auto" as const, disable_parallel_tool_use: true } };
  await client.messages.create(ask);
  t.same(last(h.fakes.anthropic.requests)["tool_choice"], { type: "auto", disable_parallel_tool_use: true });
  await client.messages.create({ ...ask, model: models.openai });
  t.equal(last(h.fakes.openai.requests)["parallel_tool_calls"], false);
});

t.test("honoured: thinking.display omitted — thinking blocks without their text, signatures kept, accepted back (Claude and Gemini)", async (t) => {
  const weather: Anthropic.Tool = { name: "get_weather", description: "Weather", input_schema: { type: "object", properties: { city: { type: "string" } } } };
  const thinking = { type: "enabled", budget_tokens: 2048, display: "omitted" } as const;
  for (const model of [models.anthropic, models.gemini]) {
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: "Weather in Paris?" }];
    const ask = { model, max_tokens: 4096, thinking, tools: [weather], messages } as Anthropic.MessageCreateParamsNonStreaming;
    const first = await client.messages.create(ask).withResponse();
    t.equal(first.response.headers.get("troupe-ignored-params"), null, `${model}: honoured, not listed`);
    const block = first.data.content.find((b) => b.type === "thinking");
    t.match(block, { type: "thinking", thinking: "", signature: /./ }, `${model}: the block, its text left out`);
    if (model === models.anthropic) t.equal((last(h.fakes.anthropic.requests)["thinking"] as { display?: string }).display, "omitted", "asked of Anthropic, which signs what it kept");
    const events: Anthropic.MessageStreamEvent[] = [];
    const stream = client.messages.stream(ask);
    stream.on("streamEvent", (e) => events.push(e));
    const streamed = await stream.finalMessage();
    t.notOk(events.some((e) => e.type === "content_block_delta" && e.delta.type === "thinking_delta"), `${model}: no thinking_delta streamed`);
    t.ok(events.some((e) => e.type === "content_block_delta" && e.delta.type === "signature_delta"), `${model}: the signature still streamed`);
    t.match(streamed.content.find((b) => b.type === "thinking"), { thinking: "" });
    const use = first.data.content.find((b): b is Anthropic.ToolUseBlock => b.type === "tool_use");
    if (!use) {
      t.fail(`${model}: expected a tool call`);
      continue;
    }
    messages.push({ role: "assistant", content: first.data.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny" }] });
    const second = await client.messages.create({ ...ask, messages });
    t.match(second.content.at(-1), { type: "text", text: /sunny/ }, `${model}: the empty block went back and was accepted`);
  }
});

const providerOnly = {
  metadata: { user_id: "u-1" },
  service_tier: "auto",
  container: "container_1",
  context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
  top_k: 5,
};

for (const stream of [false, true]) {
  t.test(`ignored (${stream ? "stream" : "JSON"}): provider-only fields and anthropic-beta are listed in troupe-ignored-params and not sent`, async (t) => {
    const answer = await post({ ...hello, ...providerOnly, output_config: { task_budget: { type: "tokens", total: 100000 } }, stream }, { "anthropic-beta": "context-management-2025-06-27" });
    t.equal(answer.status, 200);
    t.equal(answer.headers.get("troupe-ignored-params"), "metadata, service_tier, container, context_management, anthropic-beta, top_k, output_config.task_budget");
    if (stream) t.match(await answer.text(), /event: message_stop/);
    else await answer.json();
    const sent = last(h.fakes.anthropic.requests);
    for (const name of Object.keys(providerOnly)) t.notOk(name in sent, `${name} not sent`);
  });
}

t.test("ignored: cache_control on a GPT model (which caches on its own) is listed", async (t) => {
  const answer = await post({ ...hello, model: models.openai, messages: [{ role: "user", content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }] }] });
  t.equal(answer.status, 200);
  t.equal(answer.headers.get("troupe-ignored-params"), "cache_control");
  t.notMatch(JSON.stringify(last(h.fakes.openai.requests)), /cache_control/);
});

t.test("refused by name: a server tool, mcp_servers, a document block, output_config.format where no JSON answer exists", async (t) => {
  const calls = h.providerCalls();
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ tools: [{ type: "web_search_20250305", name: "web_search" }] }, /tools\.0\.type.*web_search_20250305 is an Anthropic server tool/],
    [{ mcp_servers: [{ type: "url", url: "https://mcp.example.com", name: "x" }] }, /body\.mcp_servers/],
    [{ messages: [{ role: "user", content: [{ type: "document", source: { type: "text", media_type: "text/plain", data: "x" } }] }] }, /messages\.0\.content\.0\.type.*document blocks are not supported/],
    [{ output_config: { format: { type: "json_schema", schema: { type: "object" } } } }, /output_config\.format/],
  ];
  for (const [fields, message] of cases) {
    const { status, body } = await refusal(await post({ ...hello, ...fields }));
    t.equal(status, 400, String(Object.keys(fields)[0]));
    t.match(body, { type: "error", error: { type: "invalid_request_error", message } });
  }
  t.equal(h.providerCalls(), calls, "no provider was called");
});

t.test("unknown: a field the API does not have is a 400 naming it, top level and nested", async (t) => {
  const top = await refusal(await post({ ...hello, reasoning_effort: "high" }));
  t.equal(top.status, 400);
  t.match(top.body.error.message, /reasoning_effort/);
  const nested = await refusal(await post({ ...hello, thinking: { type: "enabled", budget_tokens: 2048, depth: 3 } }));
  t.equal(nested.status, 400);
  t.match(nested.body.error.message, /thinking.*depth/);
});

t.test("the beta client (?beta=true, anthropic-beta) is the same endpoint", async (t) => {
  const m = await client.beta.messages.create({ ...hello, betas: ["context-management-2025-06-27"], context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] } });
  t.equal(m.type, "message");
  const bad = await fetch(`${h.troupe.url}/anthropic/v1/messages?beta=maybe`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": h.liveKey },
    body: JSON.stringify(hello),
  });
  t.equal(bad.status, 400, "beta is true or false");
});
