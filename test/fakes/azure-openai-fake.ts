// Fake Azure OpenAI resource: POST /openai/deployments/{deployment}/chat/completions
// and /embeddings with ?api-version=… and an `api-key` header, answered in
// OpenAI's wire format (the OpenAI fake's handlers) as the deployed model,
// plus Azure's own parts: a first stream chunk carrying only
// prompt_filter_results, and Azure's errors — 401 for a wrong key, 404
// "Resource not found" without a known api-version, 404 DeploymentNotFound
// for a deployment the resource does not have.
import { sendJson, startFake, type FakeServer } from "./fake-server.ts";
import { chat, embeddings } from "./openai-fake.ts";

export interface AzureFakeOptions {
  apiKey: string;
  /** Deployment name → the model it runs. */
  deployments: Record<string, string>;
  /** api-version values the resource accepts. */
  apiVersions?: string[];
}

const errorBody = (status: number, message: string, code = String(status)) => ({ error: { code, message } });

export function startAzureOpenAIFake(opts: AzureFakeOptions): Promise<FakeServer> {
  const versions = opts.apiVersions ?? ["2024-10-21", "2024-06-01", "2025-01-01-preview"];
  return startFake(async (ctx) => {
    if (ctx.req.headers["api-key"] !== opts.apiKey) {
      return sendJson(ctx, 401, errorBody(401, "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."));
    }
    const url = new URL(ctx.req.path, "http://fake");
    const m = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/.exec(url.pathname);
    const version = url.searchParams.get("api-version");
    if (!m || ctx.req.method !== "POST" || version === null || !versions.includes(version)) {
      return sendJson(ctx, 404, errorBody(404, "Resource not found"));
    }
    const model = opts.deployments[decodeURIComponent(m[1]!)];
    if (model === undefined) {
      return sendJson(ctx, 404, errorBody(404, "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.", "DeploymentNotFound"));
    }
    if (m[2] === "embeddings") {
      (ctx.req.body as { model?: string }).model = model;
      return embeddings(ctx);
    }
    const filters = [{ prompt_index: 0, content_filter_results: { hate: { filtered: false, severity: "safe" }, self_harm: { filtered: false, severity: "safe" } } }];
    const prelude = `data: ${JSON.stringify({ choices: [], created: 0, id: "", model: "", object: "", prompt_filter_results: filters })}`;
    return chat(ctx, { prelude: [prelude], model });
  }, (status, message) => errorBody(status, message));
}
