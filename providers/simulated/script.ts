// The simulated model's scripting convention, so tests, demos and agents can
// drive multi-step tool use deterministically. The LAST user message is read
// as steps separated by `;` (each may start with `then`):
//
//   call <tool>                  → a tool call with arguments made from its
//                                  parameters' schema (required ones only:
//                                  {} when none is required; json-instance.ts)
//   call <tool> {json}           → a tool call with those arguments
//   <tool>: <text>               → as `call <tool>`, with its first string parameter
//                                  (first `required`, else first property) <text>
//   say <text>                   → final answer, exactly <text>
//   answer                       → final answer built from the tool results
//   lorem <n>                    → final answer of n deterministic words
//   anything else                → final answer "Simulated reply to: <message>"
//
// Only declared tools count (a step naming an undeclared tool is plain text).
// The leading run of tool steps plays out across model calls: the simulated
// model counts the assistant tool-call turns after the last user message and
// returns the next tool call, or, once all are done, the final answer from the
// first non-tool step (or `answer` when the script ends with tool steps).
// Example: `remember: X; then search_memory: Y; then call lookup {"q":1}; then answer`
// gives three calls in three turns, then an answer quoting the three results.
import type { ToolDefinition } from "../types.ts";
import { jsonInstance } from "./json-instance.ts";

export type Step =
  | { kind: "call"; tool: string; args: Record<string, unknown> }
  | { kind: "say"; text: string }
  | { kind: "answer" }
  | { kind: "lorem"; words: number }
  | { kind: "reply" };

/** Splits on `;` outside JSON braces and string quotes. */
export function splitSteps(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let inString = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"' && depth > 0) inString = true;
    else if (ch === "{") depth++;
    else if (ch === "}") depth = Math.max(0, depth - 1);
    else if (ch === ";" && depth === 0) {
      out.push(text.slice(start, i));
      start = i + 1;
    }
  }
  out.push(text.slice(start));
  return out.map((s) => s.trim().replace(/^then\b\s*/i, "").trim()).filter((s) => s.length > 0);
}

export function parseScript(text: string, tools: ToolDefinition[]): Step[] {
  const declared = new Map(tools.map((t) => [t.name, t]));
  return splitSteps(text).map((segment): Step => {
    const call = /^call\s+([A-Za-z0-9_-]+)\s*(\{[\s\S]*\})?\s*$/i.exec(segment);
    if (call && declared.has(call[1]!)) {
      // The caller's own JSON is sent as written (a test may want arguments the schema refuses).
      const args = call[2] ? parseArgs(call[2]) : requiredArguments(declared.get(call[1]!)!, segment);
      if (args !== undefined) return { kind: "call", tool: call[1]!, args };
    }
    const named = /^([A-Za-z0-9_-]+)\s*:\s*([\s\S]*)$/.exec(segment);
    if (named && declared.has(named[1]!)) {
      const tool = declared.get(named[1]!)!;
      return { kind: "call", tool: tool.name, args: { ...requiredArguments(tool, segment), [firstStringParameter(tool)]: named[2]!.trim() } };
    }
    const say = /^say\b\s*:?\s*([\s\S]*)$/i.exec(segment);
    if (say) return { kind: "say", text: say[1]! };
    if (/^answer\b/i.test(segment)) return { kind: "answer" };
    const lorem = /^lorem\s+(\d{1,6})$/i.exec(segment);
    if (lorem) return { kind: "lorem", words: Number(lorem[1]) };
    return { kind: "reply" };
  });
}

/** Arguments that validate against the tool's parameters: its required ones, from the schema (a tool with none required gets {}). */
export function requiredArguments(tool: ToolDefinition, seed: string): Record<string, unknown> {
  const value = jsonInstance(tool.parameters, `${tool.name}:${seed}`, { optional: false });
  return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function parseArgs(json: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(json);
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The parameter that receives `<tool>: <text>`. */
export function firstStringParameter(tool: ToolDefinition): string {
  const params = tool.parameters;
  const props = params.properties && typeof params.properties === "object" ? (params.properties as Record<string, unknown>) : {};
  const isString = (name: string) => {
    const p = props[name];
    return p && typeof p === "object" && (p as { type?: unknown }).type === "string";
  };
  const required = Array.isArray(params.required) ? params.required.filter((r): r is string => typeof r === "string") : [];
  return required.find(isString) ?? Object.keys(props).find(isString) ?? required[0] ?? Object.keys(props)[0] ?? "input";
}
