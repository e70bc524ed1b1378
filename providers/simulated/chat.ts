// Simulated chat: deterministic answers derived from the conversation
// (conventions in script.ts), honest token counts (tokens.ts), optional
// latency before the first token and a token rate for streaming.
import type { ChatMessage, ChatRequest } from "../chat-request.ts";
import type { ChatCallOptions, ChatExtras, ChatResult, StreamEvent, ToolCall } from "../types.ts";
import { sleep } from "../deadline.ts";
import { countChatInputTokens, countTokens, tokenPieces } from "../tokens.ts";
import { fnv1a, loremWords } from "./hash.ts";
import { parseScript, requiredArguments, type Step } from "./script.ts";
import { structuredAnswer } from "./structured.ts";
import { simulatedCacheCounts } from "./prompt-cache.ts";

export const translationPrompt = /^Translate the user's text (?:from (.+?) )?into (.+?)\. Reply with the translation only\.$/;

interface Planned {
  content: string;
  toolCalls: ToolCall[];
}

/** What the model answers; with response_format, a final answer is JSON (structured.ts), tool calls stay as they are. */
export function planAnswer(req: ChatRequest): Planned {
  const plan = planText(req);
  if (!req.response_format || plan.toolCalls.length > 0) return plan;
  return { content: structuredAnswer(req.response_format, plan.content, req.messages), toolCalls: [] };
}

function planText(req: ChatRequest): Planned {
  const messages = req.messages;
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === "user") {
      lastUser = i;
      break;
    }
  }
  const user: ChatMessage | undefined = messages[lastUser];
  const userText = user?.content ?? "";
  const system = messages.find((m) => m.role === "system")?.content ?? "";

  const translation = translationPrompt.exec(system);
  if (translation) return { content: `[${translation[2]}] ${userText}`, toolCalls: [] };
  if (user?.images && user.images.length > 0) {
    const what = user.images.map((img) => ("url" in img ? img.url : `${img.media_type} image of ${img.base64.length} base64 chars`));
    return { content: `Simulated description of ${what.join(", ")} for: ${userText}`, toolCalls: [] };
  }

  const tools = req.tools ?? [];
  const allowTools = req.tool_choice !== "none" && tools.length > 0;
  const steps: Step[] = allowTools ? parseScript(userText, tools) : [{ kind: "reply" }];
  const after = messages.slice(lastUser + 1);
  const turnsDone = after.filter((m) => m.role === "assistant" && m.tool_calls && m.tool_calls.length > 0).length;
  let toolSteps = 0;
  while (toolSteps < steps.length && steps[toolSteps]!.kind === "call") toolSteps++;

  if (turnsDone < toolSteps) {
    const step = steps[turnsDone] as Extract<Step, { kind: "call" }>;
    return { content: "", toolCalls: [toolCall(userText, turnsDone, step.tool, step.args)] };
  }
  const forced = req.tool_choice;
  if (allowTools && turnsDone === 0 && forced != null && forced !== "auto") {
    // The caller demands a tool call and the script has none: call it with its required arguments.
    const name = typeof forced === "object" ? forced.name : tools[0]!.name;
    const tool = tools.find((t) => t.name === name);
    return { content: "", toolCalls: [toolCall(userText, 0, name, tool ? requiredArguments(tool, userText) : {})] };
  }
  const final: Step = steps[toolSteps] ?? (toolSteps > 0 ? { kind: "answer" } : { kind: "reply" });
  const results = after.filter((m) => m.role === "tool");
  return { content: finalText(final, userText, results, after), toolCalls: [] };
}

function toolCall(userText: string, turn: number, name: string, args: Record<string, unknown>): ToolCall {
  return { id: `call_sim_${turn}_${fnv1a(`${turn}:${name}:${userText}`).toString(16).padStart(8, "0")}`, name, arguments: args };
}

function finalText(step: Step, userText: string, results: ChatMessage[], after: ChatMessage[]): string {
  switch (step.kind) {
    case "say":
      return step.text;
    case "lorem":
      return loremWords(userText, step.words);
    case "answer": {
      if (results.length === 0) return `Simulated reply to: ${userText}`;
      const names = new Map<string, string>();
      for (const m of after) for (const c of m.tool_calls ?? []) names.set(c.id, c.name);
      return results.map((r) => `${names.get(r.tool_call_id ?? "") ?? "tool"} returned ${r.content}`).join("; ");
    }
    default:
      return results.length > 0
        ? `Based on ${results.map((r) => r.content).join("; ")}: ${userText}`
        : `Simulated reply to: ${userText}`;
  }
}

/** Applies max_tokens: the answer is cut to that many tokens, finish_reason "length". */
function limit(content: string, maxTokens: number | null | undefined): { content: string; truncated: boolean } {
  if (maxTokens == null || countTokens(content) <= maxTokens) return { content, truncated: false };
  return { content: tokenPieces(content).slice(0, maxTokens).join(""), truncated: true };
}

export interface SimulatedTiming {
  latencyMs: number;
  /** 0: no generation delay, the answer comes at once. */
  tokensPerSecond: number;
}

export async function simulatedChat(provider: string, timing: SimulatedTiming, req: ChatRequest, opts: ChatCallOptions): Promise<ChatResult> {
  const signal = opts.signal;
  const plan = planAnswer(req);
  const { content, truncated } = limit(plan.content, req.max_tokens);
  const outputTokens = countTokens(content) + (plan.toolCalls.length > 0 ? countTokens(JSON.stringify(plan.toolCalls)) : 0);
  const generationMs = timing.tokensPerSecond > 0 ? (outputTokens * 1000) / timing.tokensPerSecond : 0;
  await sleep(timing.latencyMs + generationMs, signal);
  return {
    content,
    finish_reason: plan.toolCalls.length > 0 ? "tool_calls" : truncated ? "length" : "stop",
    model: opts.upstreamModel,
    provider,
    input_tokens: countChatInputTokens(req.messages, req.tools),
    output_tokens: outputTokens,
    tool_calls: plan.toolCalls.length > 0 ? plan.toolCalls : null,
    ...withCacheCounts(req),
  };
}

export async function* simulatedChatStream(
  provider: string,
  timing: SimulatedTiming,
  req: ChatRequest,
  opts: ChatCallOptions,
): AsyncGenerator<StreamEvent> {
  const signal = opts.signal;
  const plan = planAnswer(req);
  const { content, truncated } = limit(plan.content, req.max_tokens);
  await sleep(timing.latencyMs, signal);
  const pieces = content === "" ? [] : tokenPieces(content);
  if (timing.tokensPerSecond <= 0) {
    if (content !== "") yield { delta: content };
  } else {
    // Paced against the start time, so timer slack never accumulates; pieces
    // that are already due go out together.
    const intervalMs = 1000 / timing.tokensPerSecond;
    const start = performance.now();
    let i = 0;
    while (i < pieces.length) {
      const dueAt = start + i * intervalMs;
      const wait = dueAt - performance.now();
      if (wait > 1) await sleep(wait, signal);
      let delta = "";
      const now = performance.now();
      do delta += pieces[i++];
      while (i < pieces.length && start + i * intervalMs <= now);
      yield { delta };
    }
  }
  for (const call of plan.toolCalls) yield { tool_call: call };
  yield {
    finish_reason: plan.toolCalls.length > 0 ? "tool_calls" : truncated ? "length" : "stop",
    input_tokens: countChatInputTokens(req.messages, req.tools),
    output_tokens: countTokens(content) + (plan.toolCalls.length > 0 ? countTokens(JSON.stringify(plan.toolCalls)) : 0),
    model: opts.upstreamModel,
    provider,
    ...withCacheCounts(req),
  };
}

/** `extras` with the prompt-cache counts, when the request has any (prompt-cache.ts). */
function withCacheCounts(req: ChatRequest): { extras?: ChatExtras } {
  const counts = simulatedCacheCounts(req);
  return counts ? { extras: counts } : {};
}
