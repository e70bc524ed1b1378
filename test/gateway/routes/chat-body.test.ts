// The chat route's hand-written body check (gateway/routes/chat-body.ts)
// against the route's own schema, on generated bodies: where the short path
// answers, it must answer exactly what the schema parses (key order
// included); where the schema refuses, the short path must not answer.
import t from "tap";
import { Catalogue, modelIdSchema, withModel } from "../../../providers/catalogue.ts";
import { chatCompletionBodySchema, plainChatBody } from "../../../gateway/routes/chat-body.ts";
import { seededRandom } from "../../support/seeded-random.ts";

const models = modelIdSchema(Catalogue.load(), { category: "text" });
const schema = withModel(chatCompletionBodySchema, models.nullable().optional());
const modelIds: ReadonlySet<string> = new Set(models.options);
const random = seededRandom(27);
const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;

/** Per field: valid values, and values the schema refuses (picked one time in ten). */
const fieldValues: Record<string, { valid: readonly unknown[]; invalid: readonly unknown[] }> = {
  model: { valid: ["gpt-4.1-mini", "gpt-4.1", "simulated-chat", null], invalid: ["", "no-such-model", "text-embedding-3-small", 4] },
  routing_strategy: { valid: ["auto", "manual", "cost", "latency"], invalid: ["fastest", null, 1] },
  max_tokens: { valid: [1, 256, 1_000_000, null], invalid: [0, 1_000_001, 2.5, -3, "5"] },
  temperature: { valid: [0, 0.7, 2, null], invalid: [2.01, -0.1, "1"] },
  stream: { valid: [true, false], invalid: [null, "true", 0] },
  tools: { valid: [null, [], [{ type: "function", function: { name: "f", parameters: { type: "object" } } }]], invalid: [{}] },
  tool_choice: { valid: [null, "auto", "none"], invalid: ["sometimes"] },
  extra: { valid: [], invalid: [1, "x"] },
};
const valueOf = ({ valid, invalid }: { valid: readonly unknown[]; invalid: readonly unknown[] }): unknown => (valid.length > 0 && random() < 0.9 ? pick(valid) : pick(invalid));

function message(): unknown {
  const m: Record<string, unknown> = {};
  if (random() < 0.99) m["role"] = random() < 0.95 ? pick(["system", "user", "assistant"]) : pick(["tool", "developer", 3]);
  const content = random();
  if (content < 0.9) m["content"] = pick(["Hi", "", "a longer message with ünïcödé", "{\"json\":1}"]);
  else if (content < 0.95) m["content"] = null;
  else if (content < 0.97) m["content"] = 5;
  // else: no content (the schema's default)
  if (random() < 0.2) m["id"] = pick(["m1", "", "m1", 7]);
  if (random() < 0.02) m["tool_call_id"] = "call_1";
  if (random() < 0.02) m["tool_calls"] = pick([null, []]);
  if (random() < 0.01) m["name"] = "n";
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
    const chance = field === "extra" || field === "tools" || field === "tool_choice" ? 0.04 : 0.5;
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
    const fast = plainChatBody(JSON.parse(text), modelIds);
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

t.test("the common body takes the short path; tools, tool messages and nulls go to the schema", async (t) => {
  const common = { model: "gpt-4.1-mini", routing_strategy: "manual", messages: [{ role: "user", content: "Hi" }] };
  t.same(plainChatBody(common, modelIds), { messages: [{ role: "user", content: "Hi" }], model: "gpt-4.1-mini", routing_strategy: "manual", stream: false });
  t.equal(plainChatBody({ ...common, tools: [] }, modelIds), undefined, "tools");
  t.equal(plainChatBody({ ...common, messages: [{ role: "tool", content: "x", tool_call_id: "c" }] }, modelIds), undefined, "a tool message");
  t.equal(plainChatBody({ ...common, messages: [{ role: "assistant", content: null }] }, modelIds), undefined, "a null content");
  t.equal(plainChatBody({ ...common, model: null }, modelIds), undefined, "manual without a model");
  t.equal(plainChatBody({ ...common, model: "no-such-model" }, modelIds), undefined, "a model the catalogue lacks");
});
