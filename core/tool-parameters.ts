// A built-in tool's `parameters` (the JSON Schema a model is shown) made from
// the zod schema its arguments are parsed with, so the two cannot disagree:
// a bound changed in one place is the bound the model reads and the bound
// the tool enforces. The input side is described (defaults make a field
// optional), and `$schema` is left out: Gemini's function declarations
// refuse keys they do not know.
import { z } from "zod";

export type ToolParameters = Record<string, unknown>;

export function toolParameters(args: z.ZodObject): ToolParameters {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(args, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  return schema;
}
