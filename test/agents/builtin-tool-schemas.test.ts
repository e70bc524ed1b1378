// The built-in tools' parameters are the JSON Schema of the zod schemas their
// arguments are parsed with (core/tool-parameters.ts): every parsed field is
// offered and described, a field is required exactly when parsing needs it,
// the bounds are the parser's, and nothing a provider refuses ($schema) is sent.
import t from "tap";
import { z } from "zod";
import { builtinTools, offeredBuiltinTools } from "../../actors/conversation/builtin-tools.ts";
import { generateVideoArgs, MAX_NARRATION_CHARS, MAX_PROMPT_CHARS, MAX_SCENES, MAX_SEGMENT_SECONDS, MIN_SEGMENT_SECONDS } from "../../actors/job/video-request.ts";
import { toolParameters } from "../../core/tool-parameters.ts";
import { MAX_TOP_K } from "../../vectors/vector-index.ts";

interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  description?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
  anyOf?: Schema[];
  items?: Schema;
}
const params = (name: string) => offeredBuiltinTools.find((tool) => tool.name === name)?.parameters as Schema;

t.test("every built-in tool: an object schema, every property described, no $schema", async (t) => {
  t.same(offeredBuiltinTools.map((tool) => tool.name), ["search_memory", "remember", "generate_video"]);
  for (const tool of offeredBuiltinTools) {
    const schema = tool.parameters as Schema & Record<string, unknown>;
    t.equal(schema.type, "object", tool.name);
    t.notOk("$schema" in schema, `${tool.name}: no $schema`);
    for (const [field, property] of Object.entries(schema.properties ?? {})) t.ok(property.description, `${tool.name}.${field} is described`);
  }
});

t.test("search_memory and remember: the fields, requirement and bounds the tools parse with", async (t) => {
  const search = params("search_memory");
  t.same(Object.keys(search.properties ?? {}), ["query", "top_k"]);
  t.same(search.required, ["query"]);
  t.equal(search.properties?.query?.minLength, 1);
  t.match(search.properties?.top_k, { type: "integer", minimum: 1, maximum: MAX_TOP_K });
  const remember = params("remember");
  t.same(remember.required, ["content"]);
  t.equal(remember.properties?.content?.minLength, 1);
  t.equal(builtinTools.length, 2, "generate_video is not run inside the turn");
});

t.test("generate_video: generateVideoArgs' fields; required exactly where parsing needs a value", async (t) => {
  const video = params("generate_video");
  const shape = Object.keys(generateVideoArgs.shape);
  t.same(Object.keys(video.properties ?? {}), shape);
  const neededByParser = shape.filter((field) => !generateVideoArgs.shape[field as keyof typeof generateVideoArgs.shape].safeParse(undefined).success);
  t.same(video.required, neededByParser);
  t.same(video.required, ["prompt"]);
  t.match(video.properties?.prompt, { minLength: 1, maxLength: MAX_PROMPT_CHARS });
  t.match(video.properties?.duration_seconds, { type: "integer", minimum: MIN_SEGMENT_SECONDS, maximum: MAX_SEGMENT_SECONDS });
  t.match(video.properties?.narration_text?.anyOf?.[0], { type: "string", maxLength: MAX_NARRATION_CHARS });
  t.match(video.properties?.scenes?.anyOf?.[0], { type: "array", maxItems: MAX_SCENES, items: { maxLength: MAX_PROMPT_CHARS } });
});

t.test("toolParameters follows the schema it is given", async (t) => {
  const schema = toolParameters(z.object({ n: z.number().int().max(3).describe("n"), s: z.string().default("x").describe("s") })) as Schema;
  t.same(schema.required, ["n"], "a default makes a field optional to the model");
  t.equal(schema.properties?.n?.maximum, 3);
});
