// The one chat request type: what the route's schema parses is what the
// adapters map, with no mapper in between. The schema's two normalizations
// (null content, OpenAI's tool_choice form) reach the upstream bodies, and
// internal-only fields (images) are refused in a public body.
import t from "tap";
import { toAnthropicBody } from "../../providers/anthropic/chat.ts";
import { chatRequestSchema, systemApart, type ChatRequest } from "../../providers/chat-request.ts";
import { toGeminiBody } from "../../providers/gemini/chat.ts";
import { toOpenAIBody } from "../../providers/openai/chat.ts";
import { createSimulatedAdapter } from "../../providers/simulated/index.ts";

const tool = { name: "get_weather", parameters: { type: "object", properties: {} } };

const body = {
  model: "claude-haiku-4-5",
  tools: [tool],
  tool_choice: { type: "function", function: { name: "get_weather" } },
  messages: [
    { role: "user", content: "weather?" },
    { role: "assistant", content: null, tool_calls: [{ id: "c1", name: "get_weather", arguments: {} }] },
    { role: "tool", tool_call_id: "c1", content: "sunny" },
  ],
};

t.test("the parsed body is a ChatRequest: defaults filled, content and tool_choice normalized", async (t) => {
  const req: ChatRequest = chatRequestSchema.parse(body);
  t.equal(req.routing_strategy, "auto");
  t.same(req.tool_choice, { name: "get_weather" }, "OpenAI's function form becomes { name }");
  t.equal(req.messages[1]!.content, "", "null content becomes empty text");
  t.same(req.tools, [{ name: "get_weather", description: "", parameters: { type: "object", properties: {} } }]);
  t.equal(chatRequestSchema.parse({ messages: [{ role: "user" }] }).messages[0]!.content, "", "absent content too");
});

t.test("adapters map the parsed request directly", async (t) => {
  const req = chatRequestSchema.parse(body);
  const anthropic = toAnthropicBody({ provider: "anthropic", baseUrl: "http://x", defaultMaxTokens: 64 }, req, "claude-haiku-4-5-20251001", false);
  t.equal(anthropic.model, "claude-haiku-4-5-20251001", "the upstream model comes from the call, not the request");
  t.same(anthropic.tool_choice, { type: "tool", name: "get_weather" });
  t.match(anthropic.messages, [{ role: "user" }, { role: "assistant", content: [{ type: "tool_use", id: "c1" }] }, { role: "user", content: [{ type: "tool_result", content: "sunny" }] }]);

  const openai = toOpenAIBody({ provider: "openai", baseUrl: "http://x", maxTokensField: "max_completion_tokens" }, req, "gpt-4.1-mini", false);
  t.same(openai.tool_choice, { type: "function", function: { name: "get_weather" } });
  t.match(openai.messages, [{ role: "user", content: "weather?" }, { role: "assistant", content: null }, { role: "tool", content: "sunny" }]);

  t.same(toGeminiBody(req).toolConfig, { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] } });

  const sim = await createSimulatedAdapter().chat!(req, { signal: new AbortController().signal, upstreamModel: "simulated-chat" });
  t.equal(sim.model, "simulated-chat");
});

t.test("the public body refuses internal and unknown fields", async (t) => {
  const withImages = { messages: [{ role: "user", content: "x", images: [{ url: "https://x/a.png" }] }] };
  t.notOk(chatRequestSchema.safeParse(withImages).success, "images are for internal callers (vision) only");
  t.notOk(chatRequestSchema.safeParse({ messages: [{ role: "user", content: "x" }], category: "vision" }).success);
  t.notOk(chatRequestSchema.safeParse({ messages: [{ role: "user", content: "x" }], tool_choice: { type: "function", function: {} } }).success);
});

t.test("systemApart: every system message joined by a blank line, the rest in order", async (t) => {
  const split = systemApart([
    { role: "system", content: "Be brief." },
    { role: "user", content: "hi" },
    { role: "system", content: "Answer in French." },
    { role: "assistant", content: "salut" },
  ]);
  t.equal(split.system, "Be brief.\n\nAnswer in French.");
  t.same(split.conversation.map((m) => m.content), ["hi", "salut"]);
  t.equal(systemApart([{ role: "user", content: "hi" }]).system, undefined, "no system message: no system prompt, not an empty one");
});
