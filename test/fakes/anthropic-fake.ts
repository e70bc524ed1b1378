// Fake Anthropic server: POST /v1/messages (JSON, and SSE: message_start,
// content_block_start/delta/stop with text_delta and input_json_delta, ping,
// message_delta, message_stop). Checks what Anthropic checks: x-api-key,
// anthropic-version, max_tokens, alternating turns starting with user,
// tool_result blocks first in the user turn answering the previous tool_use.
// Asked to think (`thinking: {type: "enabled"}`), it answers a thinking
// block first (streamed as thinking_delta then signature_delta) signed over
// its text, and refuses a returned thinking block whose signature does not
// match, as Anthropic does; it refuses a temperature with thinking, and a
// budget not under max_tokens. cache_control breakpoints are a prompt cache:
// the first request with a prefix writes it (cache_creation_input_tokens),
// the next ones read it (cache_read_input_tokens), input_tokens the rest;
// a top-level cache_control (automatic caching) is a breakpoint on the last
// block. `thinking.display: "omitted"` answers the thinking block with an
// empty text and a signature the fake remembers, accepted back with the
// empty text, as Anthropic's omitted thinking is.
import { createHash } from "node:crypto";
import { fakeModel, truncateWords } from "./fake-model.ts";
import { fragments, sendJson, sendSse, startFake, wordDeltas, words, type FakeContext, type FakeServer } from "./fake-server.ts";

type Block = {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
  source?: unknown;
  thinking?: string;
  signature?: string;
  data?: string;
  cache_control?: unknown;
};

/** The fake's signature over a thinking block's text: what it checks when the block comes back. */
export const fakeThinkingSignature = (thinking: string): string => createHash("sha256").update(`fake-anthropic:${thinking}`).digest("base64");
type Turn = { role: string; content: string | Block[] };

const errorBody = (status: number, message: string) => ({
  type: "error",
  error: { type: status === 429 ? "rate_limit_error" : status === 529 ? "overloaded_error" : status >= 500 ? "api_error" : "invalid_request_error", message },
});

export function startAnthropicFake(opts: { apiKey?: string } = {}): Promise<FakeServer> {
  // Prompt-cache prefixes seen (by hash), for cache reads on later requests.
  const cached = new Set<string>();
  // Signatures of thinking answered without its text (display: omitted): valid when they come back empty.
  const omitted = new Set<string>();
  return startFake(async (ctx) => {
    if (opts.apiKey && ctx.req.headers["x-api-key"] !== opts.apiKey) return sendJson(ctx, 401, errorBody(401, "invalid x-api-key"));
    if (!ctx.req.headers["anthropic-version"]) return sendJson(ctx, 400, errorBody(400, "anthropic-version header is required"));
    if (ctx.req.path === "/v1/messages") return messages(ctx, cached, omitted);
    sendJson(ctx, 404, errorBody(404, `no route ${ctx.req.path}`));
  }, errorBody);
}

const sse = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}`;

type Body = {
  model?: string;
  max_tokens?: number;
  messages?: Turn[];
  system?: unknown;
  tools?: { name: string; input_schema?: unknown; cache_control?: unknown }[];
  stream?: boolean;
  temperature?: number;
  thinking?: { type?: string; budget_tokens?: number; display?: string };
  cache_control?: unknown;
};

/** The prompt's parts in Anthropic's cache order (tools, system, messages' blocks), each with its breakpoint. */
function promptParts(body: Body): { part: unknown; breakpoint: boolean }[] {
  const parts: { part: unknown; breakpoint: boolean }[] = [];
  for (const t of body.tools ?? []) parts.push({ part: t, breakpoint: t.cache_control != null });
  if (Array.isArray(body.system)) for (const b of body.system as Block[]) parts.push({ part: b.text, breakpoint: b.cache_control != null });
  else if (body.system !== undefined) parts.push({ part: body.system, breakpoint: false });
  for (const turn of body.messages ?? []) {
    const blocks: Block[] = typeof turn.content === "string" ? [{ type: "text", text: turn.content }] : turn.content;
    for (const b of blocks) parts.push({ part: [turn.role, b.type, b.text ?? b.content ?? b.input ?? b.thinking ?? ""], breakpoint: b.cache_control != null });
  }
  // Automatic caching: the breakpoint is on the last block.
  const last = parts[parts.length - 1];
  if (body.cache_control != null && last) last.breakpoint = true;
  return parts;
}

/** Tokens read from and written to the cache for the prompt up to its last breakpoint (words of its JSON, as the fake counts). */
function cacheUse(body: Body, cached: Set<string>): { read: number; write: number } {
  const parts = promptParts(body);
  const last = parts.map((p) => p.breakpoint).lastIndexOf(true);
  if (last === -1) return { read: 0, write: 0 };
  const prefix = JSON.stringify(parts.slice(0, last + 1).map((p) => p.part));
  const tokens = words(prefix);
  const key = createHash("sha256").update(prefix).digest("hex");
  if (cached.has(key)) return { read: tokens, write: 0 };
  cached.add(key);
  return { read: 0, write: tokens };
}

async function messages(ctx: FakeContext, cached: Set<string>, omitted: Set<string>): Promise<void> {
  const body = ctx.req.body as Body;
  if (!body?.model || typeof body.max_tokens !== "number") return sendJson(ctx, 400, errorBody(400, "model and max_tokens: Field required"));
  if (!Array.isArray(body.messages) || body.messages.length === 0) return sendJson(ctx, 400, errorBody(400, "messages: at least one message is required"));
  if (body.system !== undefined && typeof body.system !== "string" && !(Array.isArray(body.system) && (body.system as Block[]).every((b) => b.type === "text" && typeof b.text === "string"))) {
    return sendJson(ctx, 400, errorBody(400, "system: a string or a list of text blocks"));
  }
  const thinks = body.thinking?.type === "enabled";
  if (thinks) {
    const budget = body.thinking?.budget_tokens;
    if (typeof budget !== "number" || budget < 1024 || budget >= body.max_tokens) {
      return sendJson(ctx, 400, errorBody(400, "thinking.budget_tokens: must be at least 1024 and less than max_tokens"));
    }
    if (body.temperature !== undefined) return sendJson(ctx, 400, errorBody(400, "temperature may only be set to 1 when thinking is enabled"));
  } else if (body.thinking !== undefined && body.thinking.type !== "disabled") return sendJson(ctx, 400, errorBody(400, `thinking.type: unknown ${body.thinking.type}`));
  for (const t of body.tools ?? []) if (!t.input_schema) return sendJson(ctx, 400, errorBody(400, "tools.input_schema: Field required"));
  let lastUser = "";
  let toolResults: string[] = [];
  let previousToolUses = new Set<string>();
  let expected = "user";
  for (const [i, turn] of body.messages.entries()) {
    if (turn.role !== expected) return sendJson(ctx, 400, errorBody(400, `messages.${i}: roles must alternate between "user" and "assistant", starting with "user"`));
    expected = turn.role === "user" ? "assistant" : "user";
    const blocks: Block[] = typeof turn.content === "string" ? [{ type: "text", text: turn.content }] : turn.content;
    if (turn.role === "assistant") {
      for (const [j, b] of blocks.entries()) {
        if (b.type === "thinking" && b.signature !== fakeThinkingSignature(b.thinking ?? "") && !(b.thinking === "" && omitted.has(b.signature ?? ""))) {
          return sendJson(ctx, 400, errorBody(400, `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`));
        }
        if ((b.type === "thinking" || b.type === "redacted_thinking") && j > 0 && blocks[j - 1]!.type !== "thinking" && blocks[j - 1]!.type !== "redacted_thinking") {
          return sendJson(ctx, 400, errorBody(400, `messages.${i}.content.${j}: thinking blocks must come first in the assistant turn`));
        }
      }
      previousToolUses = new Set(blocks.filter((b) => b.type === "tool_use").map((b) => b.id ?? ""));
      continue;
    }
    let seenOther = false;
    const results: string[] = [];
    for (const b of blocks) {
      if (b.type === "tool_result") {
        if (seenOther) return sendJson(ctx, 400, errorBody(400, `messages.${i}: tool_result blocks must come first`));
        if (!previousToolUses.has(b.tool_use_id ?? "")) {
          return sendJson(ctx, 400, errorBody(400, `messages.${i}: unexpected tool_use_id found in tool_result blocks: ${b.tool_use_id}`));
        }
        results.push(typeof b.content === "string" ? b.content : JSON.stringify(b.content));
      } else seenOther = true;
    }
    const text = blocks.filter((b) => b.type === "text").map((b) => b.text ?? "").join(" ");
    const images = blocks.filter((b) => b.type === "image").length;
    if (results.length > 0) toolResults = results;
    if (text !== "" || images > 0) {
      lastUser = images > 0 ? `${text} [${images} image]` : text;
      toolResults = results;
    }
    previousToolUses = new Set();
  }
  const answer = fakeModel({ tools: (body.tools ?? []).map((t) => t.name), lastUser, toolResults });
  const allInput = body.messages.reduce((n, t) => n + words(JSON.stringify(t.content)), 0);
  const id = `msg_fake${allInput}`;
  const cache = cacheUse(body, cached);
  // Anthropic's input_tokens are the uncached rest; the cache counts come beside them.
  const inputTokens = Math.max(0, allInput - cache.read - cache.write);
  const cacheUsage = { cache_creation_input_tokens: cache.write, cache_read_input_tokens: cache.read };
  const thought = thinks ? `Thinking about: ${lastUser || toolResults.join(" ")}` : undefined;
  const omit = body.thinking?.display === "omitted";
  const signature = thought === undefined ? "" : omit ? `omitted-${fakeThinkingSignature(thought)}` : fakeThinkingSignature(thought);
  if (omit && thought !== undefined) omitted.add(signature);
  const thinkingBlock = thought === undefined ? [] : [{ type: "thinking", thinking: omit ? "" : thought, signature }];
  const thinkingFrames = (): string[] =>
    thought === undefined
      ? []
      : [
          sse("content_block_start", { index: 0, content_block: { type: "thinking", thinking: "", signature: "" } }),
          ...(omit ? [] : wordDeltas(thought)).map((d) => sse("content_block_delta", { index: 0, delta: { type: "thinking_delta", thinking: d } })),
          sse("content_block_delta", { index: 0, delta: { type: "signature_delta", signature } }),
          sse("content_block_stop", { index: 0 }),
        ];
  // Blocks after the thinking one move up an index.
  const at = (i: number): number => i + thinkingBlock.length;
  if ("toolCall" in answer) {
    const toolUse = { type: "tool_use", id: `toolu_${id.slice(-6)}${body.messages.length}`, name: answer.toolCall.name, input: answer.toolCall.args };
    if (!body.stream) {
      return sendJson(ctx, 200, {
        id, type: "message", role: "assistant", model: body.model,
        content: [...thinkingBlock, { type: "text", text: "Let me check." }, toolUse],
        stop_reason: "tool_use", stop_sequence: null, usage: { input_tokens: inputTokens, output_tokens: 15, ...cacheUsage },
      });
    }
    return sendSse(ctx, [
      sse("message_start", { message: { id, type: "message", role: "assistant", model: body.model, content: [], stop_reason: null, usage: { input_tokens: inputTokens, output_tokens: 1, ...cacheUsage } } }),
      ...thinkingFrames(),
      sse("content_block_start", { index: at(0), content_block: { type: "text", text: "" } }),
      sse("ping", {}),
      sse("content_block_delta", { index: at(0), delta: { type: "text_delta", text: "Let me check." } }),
      sse("content_block_stop", { index: at(0) }),
      sse("content_block_start", { index: at(1), content_block: { type: "tool_use", id: toolUse.id, name: toolUse.name, input: {} } }),
      sse("content_block_delta", { index: at(1), delta: { type: "input_json_delta", partial_json: "" } }),
      ...fragments(JSON.stringify(toolUse.input), 5).map((f) => sse("content_block_delta", { index: at(1), delta: { type: "input_json_delta", partial_json: f } })),
      sse("content_block_stop", { index: at(1) }),
      sse("message_delta", { delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 15 } }),
      sse("message_stop", {}),
    ]);
  }
  const { text, truncated } = truncateWords(answer.text, body.max_tokens);
  const stop = truncated ? "max_tokens" : "end_turn";
  if (!body.stream) {
    return sendJson(ctx, 200, {
      id, type: "message", role: "assistant", model: body.model, content: [...thinkingBlock, { type: "text", text }],
      stop_reason: stop, stop_sequence: null, usage: { input_tokens: inputTokens, output_tokens: words(text), ...cacheUsage },
    });
  }
  return sendSse(ctx, [
    sse("message_start", { message: { id, type: "message", role: "assistant", model: body.model, content: [], stop_reason: null, usage: { input_tokens: inputTokens, output_tokens: 1, ...cacheUsage } } }),
    ...thinkingFrames(),
    sse("content_block_start", { index: at(0), content_block: { type: "text", text: "" } }),
    sse("ping", {}),
    ...wordDeltas(text).map((d) => sse("content_block_delta", { index: at(0), delta: { type: "text_delta", text: d } })),
    sse("content_block_stop", { index: at(0) }),
    sse("message_delta", { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: words(text) } }),
    sse("message_stop", {}),
  ]);
}
