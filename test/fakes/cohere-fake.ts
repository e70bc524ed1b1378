// Fake Cohere server: POST /v2/embed (input_type required, embedding_types,
// answer in embeddings.float, meta.billed_units).
import { fakeVector } from "./openai-fake.ts";
import { sendJson, startFake, words, type FakeServer } from "./fake-server.ts";

const errorBody = (_status: number, message: string) => ({ message });

export function startCohereFake(opts: { apiKey?: string } = {}): Promise<FakeServer> {
  return startFake((ctx) => {
    if (opts.apiKey && ctx.req.headers.authorization !== `Bearer ${opts.apiKey}`) return sendJson(ctx, 401, errorBody(401, "invalid api token"));
    if (ctx.req.path !== "/v2/embed") return sendJson(ctx, 404, errorBody(404, `no route ${ctx.req.path}`));
    const body = ctx.req.body as { model?: string; texts?: string[]; input_type?: string; embedding_types?: string[]; output_dimension?: number };
    if (!body?.model || !Array.isArray(body.texts)) return sendJson(ctx, 400, errorBody(400, "model and texts are required"));
    if (!body.input_type) return sendJson(ctx, 400, errorBody(400, "input_type is required for embed-v3.0 and newer models"));
    const dims = body.output_dimension ?? (body.model === "embed-english-v3.0" ? 1024 : 1536);
    sendJson(ctx, 200, {
      id: "embed-fake",
      embeddings: { float: body.texts.map((t) => fakeVector(`${body.input_type}:${t}`, dims)) },
      texts: body.texts,
      meta: { api_version: { version: "2" }, billed_units: { input_tokens: body.texts.reduce((n, t) => n + words(t), 0) } },
    });
  }, errorBody);
}
