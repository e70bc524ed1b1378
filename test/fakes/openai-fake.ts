// Fake OpenAI server: POST /v1/chat/completions (JSON, and SSE with
// stream_options.include_usage: usage in a last chunk with choices []),
// tool calls with streamed argument fragments; POST /v1/embeddings. Checks
// the request the way OpenAI does (auth, tool messages answering calls,
// reasoning_effort only on reasoning models). Usage reports a prompt-cache
// read (prompt_tokens_details.cached_tokens) when the conversation before
// the last message was sent before, as OpenAI's automatic caching does, and
// reasoning tokens (completion_tokens_details) for a reasoning_effort.
import { createHash } from "node:crypto";
import { jsonInstance } from "../../providers/simulated/json-instance.ts";
import { fakeModel, truncateWords } from "./fake-model.ts";
import { fragments, sendJson, sendSse, startFake, wordDeltas, words, type FakeContext, type FakeServer } from "./fake-server.ts";

type Msg = {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
};

export interface OpenAIFakeOptions {
  apiKey?: string;
  /** Path prefix, "/v1" like api.openai.com. */
  prefix?: string;
}

const errorBody = (status: number, message: string) => ({
  error: { message, type: status === 429 ? "rate_limit_exceeded" : "server_error", code: null },
});

export function startOpenAIFake(opts: OpenAIFakeOptions = {}): Promise<FakeServer> {
  const prefix = opts.prefix ?? "/v1";
  return startFake(async (ctx) => {
    if (opts.apiKey && ctx.req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      return sendJson(ctx, 401, errorBody(401, "Incorrect API key provided"));
    }
    if (ctx.req.path === `${prefix}/chat/completions`) return chat(ctx);
    if (ctx.req.path === `${prefix}/embeddings`) return embeddings(ctx);
    sendJson(ctx, 404, errorBody(404, `no route ${ctx.req.path}`));
  }, errorBody);
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((p: { type?: string; text?: string; image_url?: { url: string } }) =>
        p.type === "text" ? (p.text ?? "") : p.type === "image_url" ? `[image ${p.image_url?.url.slice(0, 40)}]` : "",
      )
      .join(" ");
  }
  return "";
}

/**
 * POST …/chat/completions, OpenAI's way. Exported for the Azure OpenAI fake,
 * whose wire format this is; `prelude` are frames a stream starts with
 * (Azure's prompt_filter_results chunk), `model` the model answering.
 */
export async function chat(ctx: FakeContext, extras: { prelude?: string[]; model?: string } = {}): Promise<void> {
  const body = ctx.req.body as {
    model?: string;
    messages?: Msg[];
    tools?: { type: string; function: { name: string } }[];
    stream?: boolean;
    stream_options?: { include_usage?: boolean };
    max_tokens?: number;
    max_completion_tokens?: number;
    reasoning_effort?: string;
    response_format?: { type: string; json_schema?: { schema?: unknown } };
  };
  if (extras.model && body) body.model = extras.model;
  if (body?.reasoning_effort !== undefined && !/^(o\d|gpt-5)/.test(body.model ?? "")) {
    return sendJson(ctx, 400, errorBody(400, "Unsupported parameter: 'reasoning_effort' is not supported with this model."));
  }
  if (!body?.model || !Array.isArray(body.messages) || body.messages.length === 0) {
    return sendJson(ctx, 400, errorBody(400, "model and messages are required"));
  }
  const calls = new Set<string>();
  let lastUser = "";
  let toolResults: string[] = [];
  for (const m of body.messages) {
    if (m.role === "assistant") {
      for (const c of m.tool_calls ?? []) {
        if (c.type !== "function" || typeof c.function?.arguments !== "string") {
          return sendJson(ctx, 400, errorBody(400, "tool_calls[].function.arguments must be a string"));
        }
        calls.add(c.id);
      }
    } else if (m.role === "tool") {
      if (!m.tool_call_id || !calls.has(m.tool_call_id)) {
        return sendJson(ctx, 400, errorBody(400, "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"));
      }
      toolResults.push(textOf(m.content));
    } else if (m.role === "user") {
      lastUser = textOf(m.content);
      toolResults = [];
    }
  }
  const answer = fakeModel({ tools: (body.tools ?? []).map((t) => t.function.name), lastUser, toolResults });
  const max = body.max_completion_tokens ?? body.max_tokens;
  const promptTokens = body.messages.reduce((n, m) => n + words(textOf(m.content)) + 3, 0);
  const id = `chatcmpl-${createHash("sha1").update(JSON.stringify(body.messages)).digest("hex").slice(0, 12)}`;
  const created = 1_700_000_000;
  const cached = cachedPrefixTokens(body.messages);
  const thinking = reasoningTokens[body.reasoning_effort ?? ""] ?? 0;
  const usageOf = (completion: number) => ({
    prompt_tokens: promptTokens,
    completion_tokens: completion + thinking,
    total_tokens: promptTokens + completion + thinking,
    prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: thinking, audio_tokens: 0 },
  });

  if ("toolCall" in answer) {
    const call = { id: `call_${id.slice(-8)}`, name: answer.toolCall.name, args: JSON.stringify(answer.toolCall.args) };
    const usage = usageOf(12);
    if (!body.stream) {
      return sendJson(ctx, 200, {
        id, object: "chat.completion", created, model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content: null, tool_calls: [{ id: call.id, type: "function", function: { name: call.name, arguments: call.args } }] }, finish_reason: "tool_calls" }],
        usage,
      });
    }
    const chunk = (delta: unknown, finish: string | null) =>
      `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }] })}`;
    const frames = [
      ...(extras.prelude ?? []),
      chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }, null),
      ...fragments(call.args).map((f) => chunk({ tool_calls: [{ index: 0, function: { arguments: f } }] }, null)),
      chunk({}, "tool_calls"),
    ];
    if (body.stream_options?.include_usage) {
      frames.push(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, choices: [], usage })}`);
    }
    frames.push("data: [DONE]");
    return sendSse(ctx, frames);
  }

  // A JSON answer as OpenAI's structured outputs give one: an instance of the schema (the simulated provider's generator).
  const format = body.response_format;
  const answered =
    format?.type === "json_schema" ? JSON.stringify(jsonInstance(format.json_schema?.schema ?? { type: "object" }, lastUser)) : format?.type === "json_object" ? JSON.stringify({ answer: answer.text }) : answer.text;
  const { text, truncated } = format && format.type !== "text" ? { text: answered, truncated: false } : truncateWords(answered, max);
  const finish = truncated ? "length" : "stop";
  const usage = usageOf(words(text));
  if (!body.stream) {
    return sendJson(ctx, 200, {
      id, object: "chat.completion", created, model: body.model,
      choices: [{ index: 0, message: { role: "assistant", content: text, refusal: null }, logprobs: null, finish_reason: finish }],
      usage,
    });
  }
  const chunk = (delta: unknown, finishReason: string | null) =>
    `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] })}`;
  const frames = [...(extras.prelude ?? []), chunk({ role: "assistant", content: "" }, null), ...wordDeltas(text).map((d) => chunk({ content: d }, null)), chunk({}, finish)];
  if (body.stream_options?.include_usage) {
    frames.push(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, choices: [], usage })}`);
  }
  frames.push("data: [DONE]");
  return sendSse(ctx, frames);
}

/** Thinking tokens per reasoning_effort (a reasoning model spends them before answering). */
const reasoningTokens: Record<string, number> = { minimal: 0, low: 16, medium: 64, high: 256 };

/** Conversations seen (all messages but the last), by hash: what this fake "cached". */
const seenPrefixes = new Set<string>();
/** The smallest prefix the provider caches. */
export const promptCacheMinimumTokens = 1024;

/** The prompt tokens of the messages before the last when that prefix was sent before, else 0. */
function cachedPrefixTokens(messages: Msg[]): number {
  const prefix = messages.slice(0, -1);
  if (prefix.length === 0) return 0;
  const key = createHash("sha1").update(JSON.stringify(prefix)).digest("hex");
  const seen = seenPrefixes.has(key);
  seenPrefixes.add(key);
  const tokens = prefix.reduce((n, m) => n + words(textOf(m.content)) + 3, 0);
  // As OpenAI: only a prompt of 1,024 tokens or more is cached (so short test prompts always cost the same).
  return seen && tokens >= promptCacheMinimumTokens ? tokens : 0;
}

/** Deterministic unit vector per text. */
export function fakeVector(text: string, dims: number): number[] {
  const v: number[] = [];
  let seed = createHash("sha256").update(text).digest();
  while (v.length < dims) {
    for (let i = 0; i + 1 < seed.length && v.length < dims; i += 2) v.push(seed.readInt16BE(i) / 32768);
    seed = createHash("sha256").update(seed).digest();
  }
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  return v.map((x) => x / norm);
}

/** POST …/embeddings, OpenAI's way (Azure's too). */
export function embeddings(ctx: FakeContext): void {
  const body = ctx.req.body as { model?: string; input?: unknown; dimensions?: number; encoding_format?: string };
  const inputs = typeof body?.input === "string" ? [body.input] : body?.input;
  if (!body?.model || !Array.isArray(inputs) || inputs.some((i) => typeof i !== "string")) {
    return sendJson(ctx, 400, errorBody(400, "model and input are required"));
  }
  const dims = body.dimensions ?? (body.model === "text-embedding-3-large" ? 3072 : 1536);
  sendJson(ctx, 200, {
    object: "list",
    data: (inputs as string[]).map((t, index) => ({ object: "embedding", index, embedding: fakeVector(t, dims) })),
    model: body.model,
    usage: { prompt_tokens: (inputs as string[]).reduce((n, t) => n + words(t), 0), total_tokens: 0 },
  });
}
