// The /gemini generation route's hand-written body check
// (gateway/compat/gemini/body-fast.ts) against the path it short-cuts — the
// proto-JSON name pass and the strict schema (routes.ts bodyFor) — on
// generated bodies: where the short path answers, it must answer exactly
// what the schema parses (key order included); where the schema refuses,
// the short path must not answer.
import t from "tap";
import { plainGenerateContentBody } from "../../../gateway/compat/gemini/body-fast.ts";
import { camelFields } from "../../../gateway/compat/gemini/proto-json.ts";
import { generateContentBodySchema } from "../../../gateway/compat/gemini/schemas.ts";
import { seededRandom } from "../../support/seeded-random.ts";
import { checkShortPath, pickWith, shuffledKeys } from "../../support/short-path-check.ts";

const random = seededRandom(4343);
const pick = pickWith(random);

// What bodyFor runs when the short path does not answer: names to lowerCamelCase, then the schema.
const schema = {
  safeParse: (value: unknown) => {
    try {
      return generateContentBodySchema.safeParse(camelFields(value));
    } catch {
      return { success: false as const, data: undefined };
    }
  },
} as unknown as Parameters<typeof checkShortPath>[3];

function part(): unknown {
  const r = random();
  if (r < 0.85) return shuffledKeys(random, { text: pick(["Hello", "", "ünïcödé and more", "{\"json\":1}"]) });
  if (r < 0.88) return { text: "x", thought: true };
  if (r < 0.9) return { inlineData: { mimeType: "image/png", data: "iVBOR" } };
  if (r < 0.92) return { functionCall: { name: "f", args: {} } };
  if (r < 0.94) return { text: 5 };
  if (r < 0.96) return {};
  if (r < 0.98) return "text";
  return { text: "a", extra: 1 };
}

function content(roles: readonly unknown[]): unknown {
  const c: Record<string, unknown> = {};
  if (random() < 0.8) c["role"] = pick(roles);
  const r = random();
  if (r < 0.95) c["parts"] = Array.from({ length: Math.floor(random() * 4) }, part);
  else if (r < 0.97) c["parts"] = "hi";
  if (random() < 0.02) c["extra"] = true;
  return shuffledKeys(random, c);
}

const configValues: Record<string, readonly unknown[]> = {
  temperature: [0, 0.7, 2, 2.5, -1, "1"],
  topP: [0, 0.5, 1, 1.2],
  maxOutputTokens: [1, 256, 1_000_000, 0, 1_000_001, 2.5],
  seed: [0, -3, 42, 1.5],
  max_output_tokens: [64],
  topK: [40],
  thinkingConfig: [{ thinkingBudget: 0 }],
};

function config(): unknown {
  if (random() < 0.03) return pick([null, "x", []]);
  const c: Record<string, unknown> = {};
  for (const [key, values] of Object.entries(configValues)) {
    const rare = key === "max_output_tokens" || key === "topK" || key === "thinkingConfig";
    if (random() < (rare ? 0.03 : 0.35)) c[key] = pick(values);
  }
  return shuffledKeys(random, c);
}

function body(): unknown {
  if (random() < 0.02) return pick([null, [], "text", 3]);
  const b: Record<string, unknown> = {};
  const count = random();
  if (count < 0.95) b["contents"] = count < 0.03 ? [] : count < 0.05 ? "hi" : Array.from({ length: 1 + Math.floor(random() * 4) }, () => content(["user", "model", "user", "model", "function", "system", "bot", 3]));
  if (random() < 0.3) b["systemInstruction"] = content(["user", "system", "model"]);
  if (random() < 0.5) b["generationConfig"] = config();
  if (random() < 0.03) b[pick(["tools", "safetySettings", "system_instruction", "model", "labels"])] = pick([[], {}, "x"]);
  return shuffledKeys(random, b);
}

t.test("on 20,000 generated bodies the short path answers what the name pass and the schema parse, or leaves the body to them", async (t) => {
  checkShortPath(t, 20_000, body, schema, plainGenerateContentBody);
});

t.test("what Google's SDKs send for a text prompt takes the short path; tools, images, snake_case and thinking go to the schema", async (t) => {
  const common = { contents: [{ parts: [{ text: "Hi" }], role: "user" }], generationConfig: { temperature: 0.2, maxOutputTokens: 64 } };
  t.same(plainGenerateContentBody(common), { contents: [{ role: "user", parts: [{ text: "Hi" }] }], generationConfig: { temperature: 0.2, maxOutputTokens: 64 } });
  t.equal(plainGenerateContentBody({ ...common, tools: [{ functionDeclarations: [] }] }), undefined, "tools");
  t.equal(plainGenerateContentBody({ contents: [{ role: "user", parts: [{ inlineData: { mimeType: "image/png", data: "x" } }] }] }), undefined, "an image");
  t.equal(plainGenerateContentBody({ ...common, generation_config: { max_output_tokens: 5 } }), undefined, "snake_case names");
  t.equal(plainGenerateContentBody({ ...common, generationConfig: { thinkingConfig: { thinkingBudget: 0 } } }), undefined, "thinking");
});
