// The simulated model's schema instances, checked by a validator that is not
// the generator's: zod 4's z.fromJSONSchema (the project's zod), on schemas
// as zod's own emitter (what LangChain's and the OpenAI SDK's zod helpers
// send), pydantic (the fixture is pydantic 2's model_json_schema output) and
// OpenAI strict mode write them.
import { readFileSync } from "node:fs";
import t, { type Test } from "tap";
import { z } from "zod";
import { fromPattern, jsonInstance } from "../../providers/simulated/json-instance.ts";

const seeds = Array.from({ length: 24 }, (_, i) => `seed ${i}`);

function validator(schema: unknown): z.ZodType {
  return z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
}

function checkAll(t: Test, name: string, schema: unknown): unknown[] {
  const check = validator(schema);
  const values: unknown[] = [];
  const invalid: string[] = [];
  for (const seed of seeds) {
    const value = jsonInstance(schema, seed);
    const parsed = check.safeParse(value);
    if (!parsed.success) invalid.push(`${seed}: ${JSON.stringify(value)} — ${z.prettifyError(parsed.error)}`);
    values.push(value);
  }
  t.same(invalid, [], `${name}: ${seeds.length} instances valid`);
  t.same(jsonInstance(schema, "seed 0"), values[0], `${name}: the same seed gives the same instance`);
  return values;
}

const Node: z.ZodType<{ value: number; children: unknown[] }> = z.object({ value: z.number().int(), get children() {
  return z.array(Node).max(3);
} });

const zodSchemas: Record<string, z.ZodType> = {
  "object with optional, nullable, enum, literal": z.object({
    name: z.string().min(3).max(20),
    nickname: z.string().optional(),
    note: z.string().nullable(),
    mood: z.enum(["happy", "sad", "calm"]),
    kind: z.literal("person"),
    age: z.number().int().min(0).max(120),
    ratio: z.number().gt(0).lt(1),
    steps: z.number().multipleOf(0.25).min(1).max(3),
  }),
  "arrays with bounds and unique items": z.object({
    tags: z.array(z.string()).min(2).max(5),
    exactly: z.array(z.boolean()).length(4),
    unique: z.array(z.enum(["a", "b", "c", "d"])).min(3).refine(() => true),
    tuple: z.tuple([z.string(), z.number()]),
  }),
  "unions and discriminated unions": z.object({
    either: z.union([z.string(), z.number()]),
    shape: z.discriminatedUnion("type", [z.object({ type: z.literal("circle"), r: z.number().positive() }), z.object({ type: z.literal("square"), side: z.number().positive() })]),
  }),
  formats: z.object({ email: z.email(), id: z.uuid(), at: z.iso.datetime(), day: z.iso.date(), site: z.url(), code: z.string().regex(/^[A-Z]{2}-\d{3}$/) }),
  "recursive ($ref to a $defs entry)": z.object({ root: Node }),
  "records (additionalProperties) and minProperties": z.record(z.string(), z.number().int()),
};

t.test("instances of zod-emitted schemas validate", async (t) => {
  for (const [name, schema] of Object.entries(zodSchemas)) {
    const json = z.toJSONSchema(schema, { target: "draft-2020-12" });
    checkAll(t, name, json);
    // The same through the older draft the OpenAI SDK's zod helper emits for strict mode.
    checkAll(t, `${name} (draft-7)`, z.toJSONSchema(schema, { target: "draft-7" }));
  }
});

t.test("instances of a pydantic model's schema validate ($defs, $ref, oneOf with a discriminator, anyOf null, pattern, formats)", async (t) => {
  const schema: unknown = JSON.parse(readFileSync(new URL("../fixtures/json-schemas/pydantic-person.json", import.meta.url), "utf8"));
  const values = checkAll(t, "pydantic Person", schema);
  // Varied, not one fixed answer: optional fields come and go, enums change.
  t.ok(new Set(values.map((v) => JSON.stringify(v))).size > seeds.length / 2, "different seeds give different instances");
  t.ok(values.some((v) => (v as { parent?: unknown }).parent !== undefined), "optional properties appear for some seeds");
});

t.test("OpenAI strict mode: every property required, additionalProperties false, nullable as a type list", async (t) => {
  const strict = {
    type: "object",
    additionalProperties: false,
    required: ["city", "days", "unit", "alerts"],
    properties: {
      city: { type: "string" },
      days: { type: "array", minItems: 1, maxItems: 7, items: { type: "object", additionalProperties: false, required: ["date", "high", "low"], properties: { date: { type: "string", format: "date" }, high: { type: "number" }, low: { type: ["number", "null"] } } } },
      unit: { type: "string", enum: ["C", "F"] },
      alerts: { anyOf: [{ type: "array", items: { type: "string" } }, { type: "null" }] },
    },
  };
  const values = checkAll(t, "strict weather", strict);
  for (const v of values) t.same(Object.keys(v as object).sort(), ["alerts", "city", "days", "unit"], "every required property, no other");
});

t.test("bounds: depth, size, and a schema that only recurses", async (t) => {
  const infinite = { $defs: { A: { type: "object", properties: { a: { $ref: "#/$defs/A" } }, required: ["a"] } }, $ref: "#/$defs/A" };
  const value = jsonInstance(infinite, "x");
  t.ok(JSON.stringify(value).length < 10_000, "a required self-reference ends (in null past the ref limit)");
  const wide = { type: "array", minItems: 100_000, items: { type: "string" } };
  t.ok((jsonInstance(wide, "x") as unknown[]).length <= 100, "minItems past the hard limit is capped, not honoured");
  const twoProps = { type: "object", properties: { a: { type: "string" }, b: { type: "string" } }, required: ["a"] };
  for (const seed of seeds) t.same(Object.keys(jsonInstance(twoProps, seed, { optional: false }) as object), ["a"], "optional: false keeps to the required properties");
});

t.test("patterns: the sampler's subset matches; beyond it, undefined", async (t) => {
  for (const pattern of ["^\\d{5}$", "^[A-Z]{2}-\\d{3}$", "^(foo|bar)+baz?$", "^[a-z0-9_]{3,8}$", "^sk-[A-Za-z0-9]{4}$", "abc", "^\\w+@\\w+\\.com$"]) {
    const misses = Array.from({ length: 20 }, (_, h) => fromPattern(pattern, h)).filter((s) => s === undefined || !new RegExp(pattern, "u").test(s));
    t.same(misses, [], `${pattern}: 20 samples match`);
  }
  t.equal(fromPattern("^(?=a)b$", 1), undefined, "lookahead: not sampled");
  t.equal(fromPattern("^[^a]$", 1), undefined, "negated class: not sampled");
});
