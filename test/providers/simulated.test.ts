import t from "tap";
import { createSimulatedAdapter } from "../../providers/simulated/index.ts";
import { parseScript, splitSteps } from "../../providers/simulated/script.ts";
import { simulatedVector } from "../../providers/simulated/embed.ts";
import { countTokens, tokenPieces } from "../../providers/tokens.ts";
import type { ChatMessage } from "../../providers/chat-request.ts";
import type { ToolDefinition } from "../../providers/types.ts";
import { collect, streamSummary } from "./conversation-suite.ts";

const signal = new AbortController().signal;
const tools: ToolDefinition[] = [
  { name: "remember", description: "", parameters: { type: "object", properties: { content: { type: "string" } }, required: ["content"] } },
  { name: "search_memory", description: "", parameters: { type: "object", properties: { top_k: { type: "integer" }, query: { type: "string" } }, required: ["query"] } },
  { name: "lookup", description: "", parameters: { type: "object", properties: {} } },
];

t.test("tokenizer: words and punctuation, pieces join back", async (t) => {
  t.equal(countTokens("Hello, world!"), 4);
  t.equal(countTokens(""), 0);
  const text = "  Hi there;  x = 1.5 ok  ";
  t.equal(tokenPieces(text).join(""), text);
  t.equal(tokenPieces(text).length, countTokens(text));
});

t.test("script parsing", async (t) => {
  t.same(splitSteps('call lookup {"a":"x;y"}; then answer'), ['call lookup {"a":"x;y"}', "answer"]);
  t.same(parseScript("remember: milk; then search_memory: food; call lookup {\"q\":1}; call nope; answer", tools), [
    { kind: "call", tool: "remember", args: { content: "milk" } },
    { kind: "call", tool: "search_memory", args: { query: "food" } },
    { kind: "call", tool: "lookup", args: { q: 1 } },
    { kind: "reply" },
    { kind: "answer" },
  ]);
});

t.test("a multi-step script plays out across calls, then answers from the tool results", async (t) => {
  const sim = createSimulatedAdapter();
  const messages: ChatMessage[] = [{ role: "user", content: 'remember: X is 3; then search_memory: X; then call lookup {"q":1}; then answer' }];
  const seen: string[] = [];
  for (let turn = 0; turn < 5; turn++) {
    const r = await sim.chat!({ messages, tools }, { signal, upstreamModel: "simulated-chat" });
    if (!r.tool_calls) {
      t.equal(r.finish_reason, "stop");
      t.equal(r.content, "remember returned ok-0; search_memory returned ok-1; lookup returned ok-2");
      break;
    }
    t.equal(r.finish_reason, "tool_calls");
    seen.push(`${r.tool_calls[0]!.name}:${JSON.stringify(r.tool_calls[0]!.arguments)}`);
    messages.push({ role: "assistant", content: r.content, tool_calls: r.tool_calls });
    messages.push({ role: "tool", tool_call_id: r.tool_calls[0]!.id, content: `ok-${turn}` });
  }
  t.same(seen, ['remember:{"content":"X is 3"}', 'search_memory:{"query":"X"}', 'lookup:{"q":1}']);
});

t.test("deterministic, honest counts, say/lorem, max_tokens", async (t) => {
  const sim = createSimulatedAdapter();
  const req = { messages: [{ role: "user" as const, content: "Hello there" }] };
  const opts = { signal, upstreamModel: "simulated-chat" };
  const a = await sim.chat!(req, opts);
  const b = await sim.chat!(req, opts);
  t.same(a, b);
  t.equal(a.content, "Simulated reply to: Hello there");
  t.equal(a.output_tokens, countTokens(a.content));
  t.equal(a.input_tokens, 3 + countTokens("Hello there"));
  const say = await sim.chat!({ ...req, messages: [{ role: "user", content: "say Bonjour !" }], tools }, opts);
  t.equal(say.content, "Bonjour !");
  const lorem = await sim.chat!({ ...req, messages: [{ role: "user", content: "lorem 50" }], tools }, opts);
  t.equal(countTokens(lorem.content), 50);
  const cut = await sim.chat!({ ...req, max_tokens: 3 }, opts);
  t.equal(cut.finish_reason, "length");
  t.equal(cut.output_tokens, 3);
  t.equal(cut.content, "Simulated reply to");
});

t.test("tool_choice none never calls; required calls the first tool", async (t) => {
  const sim = createSimulatedAdapter();
  const none = await sim.chat!({ messages: [{ role: "user", content: "call lookup" }], tools, tool_choice: "none" }, { signal, upstreamModel: "s" });
  t.equal(none.tool_calls, null);
  const req = await sim.chat!({ messages: [{ role: "user", content: "hi" }], tools, tool_choice: "required" }, { signal, upstreamModel: "s" });
  t.equal(req.tool_calls?.[0]?.name, "remember");
});

t.test("streams token by token at the configured rate", async (t) => {
  const sim = createSimulatedAdapter({ tokensPerSecond: 200, latencyMs: 50 });
  const started = performance.now();
  const stamps: number[] = [];
  const events = [];
  for await (const e of sim.chatStream!({ messages: [{ role: "user", content: "lorem 40" }], tools }, { signal, upstreamModel: "s" })) {
    stamps.push(performance.now() - started);
    events.push(e);
  }
  const s = streamSummary(events);
  t.equal(countTokens(s.text), 40);
  t.ok(events.filter((e) => "delta" in e).length >= 20, "many small deltas");
  t.ok(stamps[0]! >= 45, `first token after the latency (${stamps[0]})`);
  // 40 tokens at 200/s = 200 ms after the first.
  t.ok(stamps.at(-1)! >= 230 && stamps.at(-1)! < 1000, `paced (${stamps.at(-1)} ms)`);
  t.equal(s.finish?.output_tokens, 40);
});

t.test("abort interrupts latency", async (t) => {
  const sim = createSimulatedAdapter({ latencyMs: 10_000 });
  const ctl = new AbortController();
  setTimeout(() => ctl.abort(new Error("stop")), 20);
  await t.rejects(sim.chat!({ messages: [{ role: "user", content: "x" }] }, { signal: ctl.signal, upstreamModel: "s" }), /stop/);
});

t.test("vision and translation conventions", async (t) => {
  const sim = createSimulatedAdapter();
  const v = await sim.chat!({ messages: [{ role: "user", content: "what?", images: [{ url: "https://x/cat.png" }] }] }, { signal, upstreamModel: "s" });
  t.equal(v.content, "Simulated description of https://x/cat.png for: what?");
  const tr = await sim.chat!(
    {
      messages: [
        { role: "system", content: "Translate the user's text into French. Reply with the translation only." },
        { role: "user", content: "Good morning" },
      ],
    },
    { signal, upstreamModel: "s" },
  );
  t.equal(tr.content, "[French] Good morning");
});

t.test("embeddings: unit vectors, shared words are closer", async (t) => {
  const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);
  const cat = simulatedVector("the cat sat on the mat");
  const cat2 = simulatedVector("a cat sat on a mat");
  const physics = simulatedVector("quantum chromodynamics lecture");
  t.ok(Math.abs(dot(cat, cat) - 1) < 1e-9);
  t.equal(cat.length, 256);
  t.ok(dot(cat, cat2) > 0.4, `similar ${dot(cat, cat2)}`);
  t.ok(dot(cat, cat2) > dot(cat, physics) + 0.3, `dissimilar ${dot(cat, physics)}`);
  t.same(simulatedVector(""), simulatedVector(""));
  t.ok(Math.abs(dot(simulatedVector("!!"), simulatedVector("!!")) - 1) < 1e-9, "no-word text still a unit vector");
  const sim = createSimulatedAdapter();
  const r = await sim.embed!({ model: "simulated-embed", input: ["a", "b"] }, { signal });
  t.equal(r.dimensions, 256);
  t.equal(r.embeddings.length, 2);
});

t.test("collect helper sanity", async (t) => {
  const sim = createSimulatedAdapter();
  const ev = await collect(sim.chatStream!({ messages: [{ role: "user", content: "call lookup" }], tools }, { signal, upstreamModel: "s" }));
  t.same(ev.map((e) => Object.keys(e)[0]), ["tool_call", "finish_reason"]);
});
