// The chat route's hand-written body check (gateway/routes/chat-body.ts)
// against the route's own schema, on generated bodies: where the short path
// answers, it must answer exactly what the schema parses (key order
// included); where the schema refuses, the short path must not answer.
import t from "tap";
import { Catalogue, modelIdSchema, withModel } from "../../../providers/catalogue.ts";
import { chatCompletionBodySchema, plainChatBody } from "../../../gateway/routes/chat-body.ts";
import { seededRandom } from "../../support/seeded-random.ts";
import { checkShortPath, generatedBody, pickWith, shuffledKeys, type FieldValues } from "../../support/short-path-check.ts";

const models = modelIdSchema(Catalogue.load(), { category: "text" });
const schema = withModel(chatCompletionBodySchema, models.nullable().optional());
const modelIds: ReadonlySet<string> = new Set(models.options);
const random = seededRandom(27);
const pick = pickWith(random);

/** Per field: valid values, and values the schema refuses (picked one time in ten). */
const fieldValues: Record<string, FieldValues> = {
  model: { valid: ["gpt-4.1-mini", "gpt-4.1", "simulated-chat", null], invalid: ["", "no-such-model", "text-embedding-3-small", 4] },
  routing_strategy: { valid: ["auto", "manual", "cost", "latency"], invalid: ["fastest", null, 1] },
  max_tokens: { valid: [1, 256, 1_000_000, null], invalid: [0, 1_000_001, 2.5, -3, "5"] },
  temperature: { valid: [0, 0.7, 2, null], invalid: [2.01, -0.1, "1"] },
  stream: { valid: [true, false], invalid: [null, "true", 0] },
  tools: { valid: [null, [], [{ type: "function", function: { name: "f", parameters: { type: "object" } } }]], invalid: [{}] },
  tool_choice: { valid: [null, "auto", "none"], invalid: ["sometimes"] },
  extra: { valid: [], invalid: [1, "x"] },
};

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
  return shuffledKeys(random, m);
}

const body = (): unknown => generatedBody(random, message, fieldValues, (field) => (field === "extra" || field === "tools" || field === "tool_choice" ? 0.04 : 0.5));

t.test("on 20,000 generated bodies the short path answers what the schema parses, or leaves the body to it", async (t) => {
  checkShortPath(t, 20_000, body, schema, (value) => plainChatBody(value, modelIds));
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
