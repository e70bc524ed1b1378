// The exact cache's key: one request in many spellings is one key; each
// answer-changing field changed alone is another; organization, environment
// and key kind are in it; the stream flag and message ids are not.
import t from "tap";
import { canonicalJson, chatCacheKey, chatContextDigest, embeddingCacheKey, type KeyOwner } from "../../../gateway/cache/cache-key.ts";
import { chatRequestSchema, type ChatRequest } from "../../../providers/chat-request.ts";

const owner: KeyOwner = { organization_id: "org_a", project_id: "prj_a", environment_id: "env_a", live: true };

const base = {
  model: "gpt-4.1-mini",
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "What is the capital of France?" },
  ],
  max_tokens: 100,
  temperature: 0.5,
  tools: [{ name: "lookup", description: "Looks up", parameters: { type: "object", properties: { q: { type: "string" }, n: { type: "number" } } } }],
};

/** What a route hands the router: the body parsed by the one chat schema (defaults and transforms applied). */
function parsed(body: unknown): ChatRequest {
  return chatRequestSchema.parse(body) as ChatRequest;
}

const keyOf = (body: unknown, who: KeyOwner = owner) => chatCacheKey(who, parsed(body), undefined);

t.test("one request in many spellings is one key", async (t) => {
  const reference = keyOf(base);
  t.match(reference, /^[0-9a-f]{64}$/, "a fixed-size digest");
  const spellings: [string, unknown][] = [
    ["keys in another order", { temperature: 0.5, tools: base.tools, max_tokens: 100, messages: base.messages, model: "gpt-4.1-mini" }],
    ["nested keys in another order", { ...base, tools: [{ parameters: { properties: { n: { type: "number" }, q: { type: "string" } }, type: "object" }, description: "Looks up", name: "lookup" }] }],
    ["routing_strategy spelled at its default", { ...base, routing_strategy: "auto" }],
    ["temperature written 0.50", JSON.parse(JSON.stringify(base).replace('"temperature":0.5', '"temperature":0.50'))],
    ["max_tokens written 1e2", JSON.parse(JSON.stringify(base).replace('"max_tokens":100', '"max_tokens":1e2'))],
    ["tool_choice at its default (auto)", { ...base, tool_choice: "auto" }],
    ["null temperature and max_tokens against their absence", null],
    ["message ids (names, not content)", { ...base, messages: base.messages.map((m, i) => ({ ...m, id: `msg_${i}` })) }],
  ];
  for (const [label, body] of spellings) if (body !== null) t.equal(keyOf(body), reference, label);
  const { temperature: _t, max_tokens: _m, ...bare } = base;
  t.equal(keyOf({ ...bare, temperature: null, max_tokens: null }), keyOf(bare), "null temperature and max_tokens are their absence");
  t.equal(chatCacheKey(owner, { ...parsed(base), seed: null, top_p: null }, undefined), reference, "null seed and top_p are their absence");
  // Fields parsed and internal alike: an explicit empty stop list, the stream flag an internal caller leaves on the body, a prompt-cache mark.
  const internal = { ...parsed(base), stop: [], stream: true, messages: parsed(base).messages.map((m) => ({ ...m, cache: {} })) } as ChatRequest;
  t.equal(chatCacheKey(owner, internal, undefined), reference, "empty stop, the stream flag and a prompt-cache mark change nothing");
  t.equal(chatCacheKey(owner, { ...parsed(base), stop: ["b", "a", "a"] }, undefined), chatCacheKey(owner, { ...parsed(base), stop: ["a", "b"] }, undefined), "stop sequences are a set");
  t.equal(chatCacheKey(owner, parsed(base), "text"), reference, "category text is the default");
  t.equal(chatCacheKey(owner, { ...parsed(base), prompt_cache: {}, hints: {} }, undefined), reference, "prompt-cache breakpoints and empty hints change nothing");
});

t.test("each answer-changing field changed alone gives a new key", async (t) => {
  const reference = keyOf(base);
  const r = parsed(base);
  const changes: [string, ChatRequest | unknown][] = [
    ["model", { ...base, model: "gpt-4.1" }],
    ["no model (routed)", { ...base, model: null }],
    ["routing_strategy", { ...base, routing_strategy: "cost" }],
    ["a message's content", { ...base, messages: [base.messages[0], { role: "user", content: "What is the capital of Spain?" }] }],
    ["a message's role", { ...base, messages: [{ role: "user", content: "Be brief." }, base.messages[1]] }],
    ["one more message", { ...base, messages: [...base.messages, { role: "assistant", content: "Paris." }, { role: "user", content: "Sure?" }] }],
    ["max_tokens", { ...base, max_tokens: 101 }],
    ["temperature", { ...base, temperature: 0.7 }],
    ["temperature absent (the provider's default is not assumed)", { ...base, temperature: undefined }],
    ["tools", { ...base, tools: [{ ...base.tools[0], name: "search" }] }],
    ["a tool's parameters", { ...base, tools: [{ ...base.tools[0], parameters: { type: "object", properties: {} } }] }],
    ["no tools", { ...base, tools: undefined }],
    ["tool_choice", { ...base, tool_choice: "required" }],
    ["tool_choice by name", { ...base, tool_choice: { name: "lookup" } }],
  ];
  const seen = new Set([reference]);
  for (const [label, body] of changes) {
    const key = keyOf(body);
    t.not(key, reference, label);
    seen.add(key);
  }
  const internal: [string, ChatRequest][] = [
    ["top_p", { ...r, top_p: 0.9 }],
    ["seed", { ...r, seed: 7 }],
    ["stop", { ...r, stop: ["\n"] }],
    ["response_format", { ...r, response_format: { type: "json_object" } }],
    ["response_format schema", { ...r, response_format: { type: "json_schema", name: "x", schema: { type: "object" } } }],
    ["reasoning effort", { ...r, reasoning: { effort: "high" } }],
    ["a provider hint", { ...r, hints: { presence_penalty: 1 } }],
    ["an image", { ...r, messages: [r.messages[0]!, { ...r.messages[1]!, images: [{ url: "https://example.test/a.png" }] }] }],
    ["a tool result", { ...r, messages: [...r.messages, { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "lookup", arguments: { q: "x" } }] }, { role: "tool", content: "42", tool_call_id: "c1" }] }],
    ["a tool call's arguments", { ...r, messages: [...r.messages, { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "lookup", arguments: { q: "y" } }] }, { role: "tool", content: "42", tool_call_id: "c1" }] }],
  ];
  for (const [label, request] of internal) {
    const key = chatCacheKey(owner, request, undefined);
    t.not(key, reference, label);
    seen.add(key);
  }
  t.not(chatCacheKey(owner, r, "vision"), reference, "the category");
  t.equal(seen.size, 1 + changes.length + internal.length, "every change is a key of its own");
});

t.test("organization, environment and key kind are in the key", async (t) => {
  const reference = keyOf(base);
  t.not(keyOf(base, { ...owner, organization_id: "org_b" }), reference, "another organization");
  t.not(keyOf(base, { ...owner, environment_id: "env_b" }), reference, "another environment");
  t.not(keyOf(base, { ...owner, live: false }), reference, "a test key");
});

t.test("embedding keys", async (t) => {
  const reference = embeddingCacheKey(owner, { model: "text-embedding-3-small", input: ["a", "b"] });
  t.equal(embeddingCacheKey(owner, { model: "text-embedding-3-small", routing_strategy: "auto", input: ["a", "b"], dimensions: null }), reference, "defaults spelled");
  t.not(embeddingCacheKey(owner, { model: "text-embedding-3-small", input: ["b", "a"] }), reference, "input order matters");
  t.not(embeddingCacheKey(owner, { model: "text-embedding-3-small", input: ["a", "b"], dimensions: 256 }), reference, "dimensions");
  t.not(embeddingCacheKey({ ...owner, organization_id: "org_b" }, { model: "text-embedding-3-small", input: ["a", "b"] }), reference, "organization");
  t.not(embeddingCacheKey(owner, { model: "text-embedding-3-small", input: ["a", "b"] }), keyOf(base), "never a chat key");
});

t.test("the context digest leaves out only the last user message", async (t) => {
  const turn = (last: string) => parsed({ ...base, messages: [...base.messages, { role: "assistant", content: "Paris." }, { role: "user", content: last }] });
  const a = chatContextDigest(owner, turn("And of Spain?"), undefined);
  t.equal(chatContextDigest(owner, turn("What about Spain?"), undefined), a, "another last user message: the same context");
  t.not(chatContextDigest(owner, parsed({ ...base, messages: [...base.messages, { role: "assistant", content: "Lyon." }, { role: "user", content: "And of Spain?" }] }), undefined), a, "another earlier turn: another context");
  t.not(chatContextDigest(owner, turn("And of Spain?"), undefined), chatCacheKey(owner, turn("And of Spain?"), undefined), "not the exact key");
  t.equal(chatContextDigest(owner, parsed({ messages: [{ role: "system", content: "x" }] }), undefined), undefined, "no user message: none");
});

t.test("canonical JSON", async (t) => {
  t.equal(canonicalJson({ b: 1, a: [2, { d: -0, c: null }], e: undefined }), '{"a":[2,{"c":null,"d":0}],"b":1}', "sorted, -0 as 0, nested null kept, undefined dropped");
});

t.test("keys are stable: stored entries keep matching across releases", async (t) => {
  // Pinned digests (as keyVersion 1 has always written them): a change to the canonical form or the hash must bump keyVersion instead.
  const request = {
    model: "gpt-4.1-mini",
    max_tokens: 100,
    temperature: 0.5,
    stop: ["b", "a"],
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: 'Quote "this" \\ and\nthat, é 😀 \ud800 \u0001' },
    ],
    tools: [{ name: "lookup", description: "Looks up", parameters: { type: "object", properties: { q: { type: "string" }, 'z"k': { type: "number" } } } }],
  } as ChatRequest;
  t.equal(chatCacheKey(owner, request, undefined), "bbc0ffee85ccaaf3be516c246a74f6fa4872fa44d940fe115f005f3d3697a758", "a chat key with text to escape, a lone surrogate, a control character");
  t.equal(embeddingCacheKey(owner, { model: "text-embedding-3-small", input: ["a", "b\u2028"] }), "a01933d2b529a5e60016e021722fb0ebb9dbf7d795e483d90da5197482c6b709", "an embedding key");
});

t.test("canonical JSON is JSON.stringify with sorted keys", async (t) => {
  // The reference: a sorted copy written by JSON.stringify (undefined members dropped there too).
  const sorted = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map((x) => (x === undefined ? null : sorted(x)));
    if (v === null || typeof v !== "object") return typeof v === "number" && Object.is(v, -0) ? 0 : v;
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted((v as Record<string, unknown>)[k])]));
  };
  const texts = ["", "plain", 'a "quote"', "back\\slash", "new\nline\ttab", "\u0000\u001f", "é ü 漢字", "😀 pair", "\ud800 lone high", "lone low \udc00", "\u2028\u2029", "\u007f del", "</script>"];
  for (const text of texts) {
    const value = { text, [text]: 1, list: [text, undefined, -0, 1.5e300, true, null], nested: { b: text, a: [{ y: 1, x: text }] } };
    // The label in ASCII: a raw U+2028 would break the TAP line.
    t.equal(canonicalJson(value), JSON.stringify(sorted(value)), JSON.stringify(text).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`));
  }
});
