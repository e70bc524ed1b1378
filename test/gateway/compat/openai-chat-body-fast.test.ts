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
import { checkShortPath, generatedBody, pickWith, shuffledKeys, type FieldValues } from "../../support/short-path-check.ts";

// The route's schema, as chat-route.ts declares it.
const schema = openAiChatRequestSchema.extend({ model: modelNameSchema(Catalogue.load(), { category: "text" }) });
const random = seededRandom(2027);
const pick = pickWith(random);

/** Per field: valid values, and values the schema refuses (picked one time in ten). */
const fieldValues: Record<string, FieldValues> = {
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
  return shuffledKeys(random, m);
}

const body = (): unknown => generatedBody(random, message, fieldValues, (field) => (field === "model" ? 0.97 : rare.has(field) ? 0.04 : 0.4));

t.test("on 20,000 generated bodies the short path answers what the schema parses, or leaves the body to it", async (t) => {
  checkShortPath(t, 20_000, body, schema, plainOpenAiChatBody);
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
