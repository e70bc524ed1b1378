// The /openai/v1 chat route's hand-written body check
// (gateway/compat/openai/chat-body-fast.ts) against the route's own schema,
// on generated bodies: where the short path answers, it must answer exactly
// what the schema parses (key order included); where the schema refuses,
// the short path must not answer.
import t from "tap";
import { Catalogue } from "../../../providers/catalogue.ts";
import { plainOpenAiChatBody } from "../../../gateway/compat/openai/chat-body-fast.ts";
import { openAiChatRequestSchema } from "../../../gateway/compat/openai/chat-request.ts";
import { modelNameSchema } from "../../../gateway/compat/openai/model-name.ts";
import { seededRandom } from "../../support/seeded-random.ts";

// The route's schema, as chat-route.ts declares it.
const schema = openAiChatRequestSchema.extend({ model: modelNameSchema(Catalogue.load(), { category: "text" }) });
const random = seededRandom(2027);
const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;

/** Per field: valid values, and values the schema refuses (picked one time in ten). */
const fieldValues: Record<string, { valid: readonly unknown[]; invalid: readonly unknown[] }> = {
  model: { valid: ["gpt-4.1-mini", "troupe/auto", "any-name-at-all"], invalid: ["", 4, null] },
  stream: { valid: [true, false, null], invalid: ["true", 0] },
  temperature: { valid: [0, 0.7, 2, null], invalid: [2.01, -0.1, "1"] },
  top_p: { valid: [0, 0.5, 1, null], invalid: [1.5, "x"] },
  seed: { valid: [0, -7, 42, null], invalid: [1.5, "3"] },
  max_tokens: { valid: [1, 256, 1_000_000, null], invalid: [0, 1_000_001, 2.5, "5"] },
  max_completion_tokens: { valid: [1, 64, null], invalid: [0, -1] },
  user: { valid: ["u-1", ""], invalid: [null, 3] },
  routing_strategy: { valid: ["auto", "manual", "cost", "latency"], invalid: ["fastest", null] },
  stop: { valid: [null, "END", ["a", "b"]], invalid: [["a", "b", "c", "d", "e"]] },
  tools: { valid: [[], [{ type: "function", function: { name: "f", parameters: { type: "object" } } }]], invalid: [{}] },
  n: { valid: [1, null], invalid: [2] },
  extra: { valid: [], invalid: [1, "x"] },
};
const rare = new Set(["stop", "tools", "n", "extra"]);
const valueOf = ({ valid, invalid }: { valid: readonly unknown[]; invalid: readonly unknown[] }): unknown => (valid.length > 0 && random() < 0.9 ? pick(valid) : pick(invalid));

function message(): unknown {
  const m: Record<string, unknown> = {};
  if (random() < 0.99) m["role"] = random() < 0.95 ? pick(["system", "developer", "user", "assistant"]) : pick(["tool", "function", 3]);
  const content = random();
  if (content < 0.88) m["content"] = pick(["Hi", "", "a longer message with ünïcödé", "{\"json\":1}"]);
  else if (content < 0.92) m["content"] = [{ type: "text", text: "part" }];
  else if (content < 0.95) m["content"] = null;
  else if (content < 0.97) m["content"] = 5;
  // else: no content
  if (random() < 0.1) m["name"] = pick(["alice", "", 7]);
  if (random() < 0.02) m["tool_call_id"] = "call_1";
  if (random() < 0.02) m["refusal"] = null;
  if (random() < 0.01) m["id"] = "m1";
  // Key order varies: the output's order is the schema's whatever the input's.
  return Object.fromEntries(Object.entries(m).sort(() => random() - 0.5));
}

function body(): unknown {
  const shape = random();
  if (shape < 0.02) return pick([null, [], "text", 3]);
  const b: Record<string, unknown> = {};
  const count = random();
  if (count < 0.95) b["messages"] = count < 0.03 ? [] : count < 0.05 ? "hi" : Array.from({ length: 1 + Math.floor(random() * 4) }, message);
  for (const [field, values] of Object.entries(fieldValues)) {
    const chance = field === "model" ? 0.97 : rare.has(field) ? 0.04 : 0.4;
    if (random() < chance) b[field] = valueOf(values);
  }
  return Object.fromEntries(Object.entries(b).sort(() => random() - 0.5));
}

t.test("on 20,000 generated bodies the short path answers what the schema parses, or leaves the body to it", async (t) => {
  let short = 0;
  let refusedBySchema = 0;
  const wrong: string[] = [];
  for (let i = 0; i < 20_000; i++) {
    // Each path gets its own copy, as each request has its own parsed body.
    const text = JSON.stringify(body());
    const parsed = schema.safeParse(JSON.parse(text));
    const fast = plainOpenAiChatBody(JSON.parse(text));
    if (!parsed.success) refusedBySchema++;
    if (fast === undefined) continue;
    short++;
    if (!parsed.success) wrong.push(`${text}: the schema refuses it, the short path answered ${JSON.stringify(fast)}`);
    else if (JSON.stringify(fast) !== JSON.stringify(parsed.data)) wrong.push(`${text}: ${JSON.stringify(fast)} ≠ the schema's ${JSON.stringify(parsed.data)}`);
  }
  t.same(wrong.slice(0, 5), [], `no body where the two differ (${wrong.length} of 20,000)`);
  t.ok(short > 1000, `the short path answered ${short} of 20,000 bodies`);
  t.ok(refusedBySchema > 2000, `the schema refused ${refusedBySchema} of them`);
});

t.test("what an OpenAI SDK sends takes the short path; tools, parts and nulls go to the schema", async (t) => {
  const common = { model: "gpt-4.1-mini", messages: [{ role: "developer", content: "Be brief" }, { content: "Hi", role: "user", name: "al" }], temperature: 0.2 };
  t.same(plainOpenAiChatBody(common), { model: "gpt-4.1-mini", messages: [{ role: "developer", content: "Be brief" }, { role: "user", content: "Hi", name: "al" }], temperature: 0.2 });
  t.equal(plainOpenAiChatBody({ ...common, tools: [] }), undefined, "tools");
  t.equal(plainOpenAiChatBody({ ...common, messages: [{ role: "tool", content: "x", tool_call_id: "c" }] }), undefined, "a tool message");
  t.equal(plainOpenAiChatBody({ ...common, messages: [{ role: "user", content: [{ type: "text", text: "x" }] }] }), undefined, "content parts");
  t.equal(plainOpenAiChatBody({ ...common, messages: [{ role: "assistant", content: null }] }), undefined, "a null content");
  t.equal(plainOpenAiChatBody({ messages: common.messages }), undefined, "no model");
});
