// Fake Anthropic server: POST /v1/messages (JSON, and SSE: message_start,
// content_block_start/delta/stop with text_delta and input_json_delta, ping,
// message_delta, message_stop). Checks what Anthropic checks: x-api-key,
// anthropic-version, max_tokens, alternating turns starting with user,
// tool_result blocks first in the user turn answering the previous tool_use.
import { fakeModel, truncateWords } from "./fake-model.ts";
import { fragments, sendJson, sendSse, startFake, wordDeltas, words, type FakeContext, type FakeServer } from "./fake-server.ts";

type Block = { type: string; text?: string; id?: string; name?: string; input?: unknown; tool_use_id?: string; content?: unknown; source?: unknown };
type Turn = { role: string; content: string | Block[] };

const errorBody = (status: number, message: string) => ({
  type: "error",
  error: { type: status === 429 ? "rate_limit_error" : status === 529 ? "overloaded_error" : status >= 500 ? "api_error" : "invalid_request_error", message },
});

export function startAnthropicFake(opts: { apiKey?: string } = {}): Promise<FakeServer> {
  return startFake(async (ctx) => {
    if (opts.apiKey && ctx.req.headers["x-api-key"] !== opts.apiKey) return sendJson(ctx, 401, errorBody(401, "invalid x-api-key"));
    if (!ctx.req.headers["anthropic-version"]) return sendJson(ctx, 400, errorBody(400, "anthropic-version header is required"));
    if (ctx.req.path === "/v1/messages") return messages(ctx);
    sendJson(ctx, 404, errorBody(404, `no route ${ctx.req.path}`));
  }, errorBody);
}

const sse = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}`;

async function messages(ctx: FakeContext): Promise<void> {
  const body = ctx.req.body as { model?: string; max_tokens?: number; messages?: Turn[]; system?: unknown; tools?: { name: string; input_schema?: unknown }[]; stream?: boolean };
  if (!body?.model || typeof body.max_tokens !== "number") return sendJson(ctx, 400, errorBody(400, "model and max_tokens: Field required"));
  if (!Array.isArray(body.messages) || body.messages.length === 0) return sendJson(ctx, 400, errorBody(400, "messages: at least one message is required"));
  if (body.system !== undefined && typeof body.system !== "string") return sendJson(ctx, 400, errorBody(400, "system must be a string"));
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
  const inputTokens = body.messages.reduce((n, t) => n + words(JSON.stringify(t.content)), 0);
  const id = `msg_fake${inputTokens}`;
  if ("toolCall" in answer) {
    const toolUse = { type: "tool_use", id: `toolu_${id.slice(-6)}${body.messages.length}`, name: answer.toolCall.name, input: answer.toolCall.args };
    if (!body.stream) {
      return sendJson(ctx, 200, {
        id, type: "message", role: "assistant", model: body.model,
        content: [{ type: "text", text: "Let me check." }, toolUse],
        stop_reason: "tool_use", stop_sequence: null, usage: { input_tokens: inputTokens, output_tokens: 15 },
      });
    }
    return sendSse(ctx, [
      sse("message_start", { message: { id, type: "message", role: "assistant", model: body.model, content: [], stop_reason: null, usage: { input_tokens: inputTokens, output_tokens: 1 } } }),
      sse("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
      sse("ping", {}),
      sse("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Let me check." } }),
      sse("content_block_stop", { index: 0 }),
      sse("content_block_start", { index: 1, content_block: { type: "tool_use", id: toolUse.id, name: toolUse.name, input: {} } }),
      sse("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: "" } }),
      ...fragments(JSON.stringify(toolUse.input), 5).map((f) => sse("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: f } })),
      sse("content_block_stop", { index: 1 }),
      sse("message_delta", { delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 15 } }),
      sse("message_stop", {}),
    ]);
  }
  const { text, truncated } = truncateWords(answer.text, body.max_tokens);
  const stop = truncated ? "max_tokens" : "end_turn";
  if (!body.stream) {
    return sendJson(ctx, 200, {
      id, type: "message", role: "assistant", model: body.model, content: [{ type: "text", text }],
      stop_reason: stop, stop_sequence: null, usage: { input_tokens: inputTokens, output_tokens: words(text) },
    });
  }
  return sendSse(ctx, [
    sse("message_start", { message: { id, type: "message", role: "assistant", model: body.model, content: [], stop_reason: null, usage: { input_tokens: inputTokens, output_tokens: 1 } } }),
    sse("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
    sse("ping", {}),
    ...wordDeltas(text).map((d) => sse("content_block_delta", { index: 0, delta: { type: "text_delta", text: d } })),
    sse("content_block_stop", { index: 0 }),
    sse("message_delta", { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: words(text) } }),
    sse("message_stop", {}),
  ]);
}
