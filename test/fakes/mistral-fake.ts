// Fake Mistral (la Plateforme): POST /v1/chat/completions (JSON, SSE) and
// /v1/embeddings with a Bearer key, in Mistral's wire format: OpenAI's
// shape, but tool-call ids of exactly 9 letters or digits (and a 400 for any
// other id sent back), a tool call streamed whole in one chunk, usage in the
// last chunk unasked, finish_reason length/model_length/tool_calls, and 422
// for any request field Mistral does not know (stream_options,
// max_completion_tokens, encoding_format…), as its API does.
import { createHash } from "node:crypto";
import { fakeModel, truncateWords } from "./fake-model.ts";
import { fakeVector } from "./openai-fake.ts";
import { sendJson, sendSse, startFake, wordDeltas, words, type FakeContext, type FakeServer } from "./fake-server.ts";

type Msg = {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; type?: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
};

const chatFields = new Set(["model", "messages", "temperature", "top_p", "max_tokens", "stream", "stop", "random_seed", "response_format", "tools", "tool_choice", "presence_penalty", "frequency_penalty", "n", "prediction", "parallel_tool_calls", "safe_prompt", "prompt_mode"]);
const embedFields = new Set(["model", "input", "output_dimension", "output_dtype"]);

const errorBody = (status: number, message: string) => ({ object: "error", message, type: status === 429 ? "rate_limited" : "invalid_request_error", param: null, code: null });

export function startMistralFake(opts: { apiKey: string }): Promise<FakeServer> {
  return startFake(async (ctx) => {
    if (ctx.req.headers.authorization !== `Bearer ${opts.apiKey}`) return sendJson(ctx, 401, { message: "Unauthorized", request_id: "fake" });
    const body = ctx.req.body as Record<string, unknown> | undefined;
    const known = ctx.req.path === "/v1/chat/completions" ? chatFields : ctx.req.path === "/v1/embeddings" ? embedFields : undefined;
    if (!known || ctx.req.method !== "POST") return sendJson(ctx, 404, { detail: "Not Found" });
    const extra = Object.keys(body ?? {}).filter((k) => !known.has(k));
    if (extra.length > 0) {
      return sendJson(ctx, 422, {
        object: "error",
        message: { detail: extra.map((k) => ({ type: "extra_forbidden", loc: ["body", k], msg: "Extra inputs are not permitted", input: body?.[k] })) },
        type: "invalid_request_error", param: null, code: null,
      });
    }
    return ctx.req.path === "/v1/embeddings" ? embeddings(ctx) : chat(ctx);
  }, errorBody);
}

const textOf = (content: unknown): string =>
  typeof content === "string" ? content : Array.isArray(content) ? content.map((p: { text?: string }) => p.text ?? "").join(" ") : "";

async function chat(ctx: FakeContext): Promise<void> {
  const body = ctx.req.body as { model?: string; messages?: Msg[]; tools?: { function: { name: string } }[]; stream?: boolean; max_tokens?: number; tool_choice?: unknown };
  if (!body?.model || !Array.isArray(body.messages) || body.messages.length === 0) return sendJson(ctx, 400, errorBody(400, "model and messages are required"));
  if (body.tool_choice !== undefined && typeof body.tool_choice === "string" && !["auto", "none", "any", "required"].includes(body.tool_choice)) {
    return sendJson(ctx, 400, errorBody(400, `tool_choice ${body.tool_choice} is not one of auto, none, any, required`));
  }
  const calls = new Set<string>();
  let lastUser = "";
  let toolResults: string[] = [];
  for (const m of body.messages) {
    for (const id of [...(m.tool_calls ?? []).map((c) => c.id), ...(m.role === "tool" ? [m.tool_call_id ?? ""] : [])]) {
      if (!/^[A-Za-z0-9]{9}$/.test(id)) return sendJson(ctx, 400, { ...errorBody(400, `Tool call id was ${id} but must be a-z, A-Z, 0-9, with a length of 9.`), type: "invalid_request_message_error", code: "3280" });
    }
    if (m.role === "assistant") for (const c of m.tool_calls ?? []) calls.add(c.id);
    else if (m.role === "tool") {
      if (!calls.has(m.tool_call_id!)) return sendJson(ctx, 400, errorBody(400, "Unexpected tool call id"));
      toolResults.push(textOf(m.content));
    } else if (m.role === "user") {
      lastUser = textOf(m.content);
      toolResults = [];
    }
  }
  const answer = fakeModel({ tools: (body.tools ?? []).map((t) => t.function.name), lastUser, toolResults });
  const promptTokens = body.messages.reduce((n, m) => n + words(textOf(m.content)) + 3, 0);
  const digest = createHash("sha1").update(JSON.stringify(body.messages)).digest("hex");
  const id = digest.slice(0, 32);
  const created = 1_700_000_000;
  const head = { id, created, model: body.model };
  const usageOf = (completion: number) => ({ prompt_tokens: promptTokens, total_tokens: promptTokens + completion, completion_tokens: completion });

  if ("toolCall" in answer) {
    // 9 letters and digits, like D681PevKs.
    const call = { id: Buffer.from(digest, "hex").toString("base64").replace(/[^A-Za-z0-9]/g, "").slice(0, 9), type: "function", function: { name: answer.toolCall.name, arguments: JSON.stringify(answer.toolCall.args) }, index: 0 };
    if (!body.stream) {
      return sendJson(ctx, 200, { ...head, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "", tool_calls: [call], prefix: false }, finish_reason: "tool_calls" }], usage: usageOf(14) });
    }
    return sendSse(ctx, [
      `data: ${JSON.stringify({ ...head, object: "chat.completion.chunk", choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] })}`,
      `data: ${JSON.stringify({ ...head, object: "chat.completion.chunk", choices: [{ index: 0, delta: { tool_calls: [call] }, finish_reason: "tool_calls" }], usage: usageOf(14) })}`,
      "data: [DONE]",
    ]);
  }
  const { text, truncated } = truncateWords(answer.text, body.max_tokens);
  const finish = truncated ? "length" : "stop";
  if (!body.stream) {
    return sendJson(ctx, 200, { ...head, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: text, tool_calls: null, prefix: false }, finish_reason: finish }], usage: usageOf(words(text)) });
  }
  const deltas = wordDeltas(text);
  const chunk = (delta: unknown, finishReason: string | null, usage?: unknown) =>
    `data: ${JSON.stringify({ ...head, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finishReason }], ...(usage ? { usage } : {}) })}`;
  return sendSse(ctx, [
    chunk({ role: "assistant", content: "" }, null),
    ...deltas.slice(0, -1).map((d) => chunk({ content: d }, null)),
    // Mistral's last chunk carries the last words, the finish_reason and the usage together.
    chunk({ content: deltas.at(-1) ?? "" }, finish, usageOf(words(text))),
    "data: [DONE]",
  ]);
}

function embeddings(ctx: FakeContext): void {
  const body = ctx.req.body as { model?: string; input?: unknown };
  const inputs = typeof body?.input === "string" ? [body.input] : body?.input;
  if (body?.model !== "mistral-embed" || !Array.isArray(inputs) || inputs.some((i) => typeof i !== "string")) {
    return sendJson(ctx, 400, errorBody(400, "model mistral-embed and input are required"));
  }
  const tokens = (inputs as string[]).reduce((n, t) => n + words(t), 0);
  sendJson(ctx, 200, {
    id: "embd-fake",
    object: "list",
    data: (inputs as string[]).map((t, index) => ({ object: "embedding", embedding: fakeVector(t, 1024), index })),
    model: "mistral-embed",
    usage: { prompt_tokens: tokens, total_tokens: tokens, completion_tokens: 0 },
  });
}
