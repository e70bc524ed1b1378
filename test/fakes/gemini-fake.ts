// Fake Gemini server: POST /v1beta/models/{m}:generateContent and
// :streamGenerateContent?alt=sse (data-only SSE, no terminator, finishReason
// STOP also for function calls, usageMetadata). Checks x-goog-api-key, roles
// user/model, functionResponse parts naming a function called before.
import { fakeModel, truncateWords } from "./fake-model.ts";
import { sendJson, sendSse, startFake, wordDeltas, words, type FakeContext, type FakeServer } from "./fake-server.ts";

type Part = { text?: string; functionCall?: { name: string; args?: unknown }; functionResponse?: { name: string; response: unknown }; inline_data?: unknown; file_data?: unknown };
type Content = { role?: string; parts: Part[] };

const errorBody = (status: number, message: string) => ({
  error: { code: status, message, status: status === 429 ? "RESOURCE_EXHAUSTED" : status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT" },
});

export function startGeminiFake(opts: { apiKey?: string } = {}): Promise<FakeServer> {
  return startFake(async (ctx) => {
    if (opts.apiKey && ctx.req.headers["x-goog-api-key"] !== opts.apiKey) return sendJson(ctx, 403, errorBody(403, "API key not valid"));
    const m = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)(\?alt=sse)?$/.exec(ctx.req.path);
    if (!m) return sendJson(ctx, 404, errorBody(404, `no route ${ctx.req.path}`));
    return generate(ctx, decodeURIComponent(m[1]!), m[2] === "streamGenerateContent");
  }, errorBody);
}

async function generate(ctx: FakeContext, model: string, stream: boolean): Promise<void> {
  const body = ctx.req.body as {
    contents?: Content[];
    tools?: { functionDeclarations?: { name: string }[] }[];
    generationConfig?: { maxOutputTokens?: number };
  };
  if (!Array.isArray(body?.contents) || body.contents.length === 0) return sendJson(ctx, 400, errorBody(400, "contents is required"));
  const called = new Set<string>();
  let lastUser = "";
  let toolResults: string[] = [];
  for (const [i, c] of body.contents.entries()) {
    if (c.role !== "user" && c.role !== "model") return sendJson(ctx, 400, errorBody(400, `contents[${i}].role must be user or model`));
    if (c.role === "model") {
      for (const p of c.parts) if (p.functionCall) called.add(p.functionCall.name);
      continue;
    }
    const results = c.parts.filter((p) => p.functionResponse);
    for (const r of results) {
      if (!called.has(r.functionResponse!.name)) return sendJson(ctx, 400, errorBody(400, `functionResponse ${r.functionResponse!.name} answers no functionCall`));
      if (typeof r.functionResponse!.response !== "object") return sendJson(ctx, 400, errorBody(400, "functionResponse.response must be an object"));
    }
    const text = c.parts.filter((p) => p.text !== undefined).map((p) => p.text).join(" ");
    const images = c.parts.filter((p) => p.inline_data || p.file_data).length;
    if (results.length > 0) toolResults = results.map((r) => JSON.stringify(r.functionResponse!.response));
    if (text !== "" || images > 0) {
      lastUser = images > 0 ? `${text} [${images} image]` : text;
      toolResults = results.map((r) => JSON.stringify(r.functionResponse!.response));
    }
  }
  const tools = (body.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name));
  const answer = fakeModel({ tools, lastUser, toolResults });
  const promptTokenCount = body.contents.reduce((n, c) => n + words(JSON.stringify(c.parts)), 0);
  const usage = (out: number) => ({ promptTokenCount, candidatesTokenCount: out, totalTokenCount: promptTokenCount + out });
  if ("toolCall" in answer) {
    const response = {
      candidates: [{ content: { role: "model", parts: [{ functionCall: { name: answer.toolCall.name, args: answer.toolCall.args } }] }, finishReason: "STOP", index: 0 }],
      usageMetadata: usage(8),
      modelVersion: model,
    };
    return stream ? sendSse(ctx, [`data: ${JSON.stringify(response)}`]) : sendJson(ctx, 200, response);
  }
  const { text, truncated } = truncateWords(answer.text, body.generationConfig?.maxOutputTokens);
  const finishReason = truncated ? "MAX_TOKENS" : "STOP";
  if (!stream) {
    return sendJson(ctx, 200, {
      candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason, index: 0 }],
      usageMetadata: usage(words(text)),
      modelVersion: model,
    });
  }
  const deltas = wordDeltas(text);
  return sendSse(
    ctx,
    deltas.map((d, i) => {
      const last = i === deltas.length - 1;
      const candidate: Record<string, unknown> = { content: { role: "model", parts: [{ text: d }] }, index: 0 };
      if (last) candidate.finishReason = finishReason;
      return `data: ${JSON.stringify({ candidates: [candidate], usageMetadata: usage(last ? words(text) : i + 1), modelVersion: model })}`;
    }),
  );
}
