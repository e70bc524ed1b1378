// Fake Gemini server: POST /v1beta/models/{m}:generateContent and
// :streamGenerateContent?alt=sse (data-only SSE, no terminator, finishReason
// STOP also for function calls, usageMetadata). Checks x-goog-api-key, roles
// user/model, functionResponse parts naming a function called before, a
// thoughtSignature sent back being one it issued. With
// generationConfig.thinkingConfig asking to think it reports
// thoughtsTokenCount and signs its first part; a conversation whose
// contents before the last were sent before reports cachedContentTokenCount
// (Gemini's implicit caching).
import { createHash } from "node:crypto";
import { fakeModel, truncateWords } from "./fake-model.ts";
import { sendJson, sendSse, startFake, wordDeltas, words, type FakeContext, type FakeServer } from "./fake-server.ts";

type Part = { thoughtSignature?: string; text?: string; functionCall?: { name: string; args?: unknown }; functionResponse?: { name: string; response: unknown }; inline_data?: unknown; file_data?: unknown };
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
    generationConfig?: { maxOutputTokens?: number; thinkingConfig?: { thinkingBudget?: number; thinkingLevel?: string } };
  };
  if (!Array.isArray(body?.contents) || body.contents.length === 0) return sendJson(ctx, 400, errorBody(400, "contents is required"));
  const called = new Set<string>();
  let lastUser = "";
  let toolResults: string[] = [];
  for (const [i, c] of body.contents.entries()) {
    if (c.role !== "user" && c.role !== "model") return sendJson(ctx, 400, errorBody(400, `contents[${i}].role must be user or model`));
    if (c.role === "model") {
      for (const p of c.parts) if (p.functionCall) called.add(p.functionCall.name);
      const unknown = c.parts.find((p) => p.thoughtSignature !== undefined && !issuedSignatures.has(p.thoughtSignature));
      if (unknown) return sendJson(ctx, 400, errorBody(400, `contents[${i}]: invalid thoughtSignature`));
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
  const thinking = thoughtsOf(body.generationConfig?.thinkingConfig);
  const cachedContentTokenCount = cachedPrefixTokens(body.contents);
  const usage = (out: number) => ({
    promptTokenCount,
    candidatesTokenCount: out,
    totalTokenCount: promptTokenCount + out + thinking,
    ...(thinking > 0 ? { thoughtsTokenCount: thinking } : {}),
    ...(cachedContentTokenCount > 0 ? { cachedContentTokenCount } : {}),
  });
  const signature = thinking > 0 ? issue(body.contents) : undefined;
  const signed = (part: Part): Part => (signature ? { ...part, thoughtSignature: signature } : part);
  if ("toolCall" in answer) {
    const response = {
      candidates: [{ content: { role: "model", parts: [signed({ functionCall: { name: answer.toolCall.name, args: answer.toolCall.args } })] }, finishReason: "STOP", index: 0 }],
      usageMetadata: usage(8),
      modelVersion: model,
    };
    return stream ? sendSse(ctx, [`data: ${JSON.stringify(response)}`]) : sendJson(ctx, 200, response);
  }
  const { text, truncated } = truncateWords(answer.text, body.generationConfig?.maxOutputTokens);
  const finishReason = truncated ? "MAX_TOKENS" : "STOP";
  if (!stream) {
    return sendJson(ctx, 200, {
      candidates: [{ content: { role: "model", parts: [signed({ text })] }, finishReason, index: 0 }],
      usageMetadata: usage(words(text)),
      modelVersion: model,
    });
  }
  const deltas = wordDeltas(text);
  return sendSse(
    ctx,
    deltas.map((d, i) => {
      const last = i === deltas.length - 1;
      const candidate: Record<string, unknown> = { content: { role: "model", parts: [i === 0 ? signed({ text: d }) : { text: d }] }, index: 0 };
      if (last) candidate.finishReason = finishReason;
      return `data: ${JSON.stringify({ candidates: [candidate], usageMetadata: usage(last ? words(text) : i + 1), modelVersion: model })}`;
    }),
  );
}

/** Thinking tokens for a thinkingConfig: budget 0 is off; a budget spends up to 48; a level, 24 (low) or 96 (high). */
function thoughtsOf(config: { thinkingBudget?: number; thinkingLevel?: string } | undefined): number {
  if (!config) return 0;
  if (config.thinkingLevel) return config.thinkingLevel === "high" ? 96 : 24;
  return Math.min(config.thinkingBudget ?? 0, 48);
}

const issuedSignatures = new Set<string>();

function issue(contents: Content[]): string {
  const signature = `sig-${createHash("sha1").update(JSON.stringify(contents)).digest("base64url").slice(0, 16)}`;
  issuedSignatures.add(signature);
  return signature;
}

const seenPrefixes = new Set<string>();
/** The smallest prefix the provider caches. */
export const promptCacheMinimumTokens = 1024;

/** The prompt tokens of the contents before the last when that prefix was sent before (counted as promptTokenCount is), else 0. */
function cachedPrefixTokens(contents: Content[]): number {
  const prefix = contents.slice(0, -1);
  if (prefix.length === 0) return 0;
  const key = createHash("sha1").update(JSON.stringify(prefix)).digest("hex");
  const seen = seenPrefixes.has(key);
  seenPrefixes.add(key);
  const tokens = prefix.reduce((n, c) => n + words(JSON.stringify(c.parts)), 0);
  // As Gemini's implicit caching: only from 1,024 tokens on (so short test prompts always cost the same).
  return seen && tokens >= promptCacheMinimumTokens ? tokens : 0;
}
