// Refusals through the official `openai` PyPI package (scripts/python-sdks.sh),
// unmodified but for base_url and api_key, against an embedded Troupe's
// /openai/v1 with the usage ledger on (budgets need it): 401, 403 (scope),
// 404 (model), 429 (rate limit) and 429 insufficient_quota (hard budget),
// each caught in Python as the SDK's own exception class, the budget's
// before any provider call and not retried.
import t from "tap";
import { projectWithLiveKey } from "../../support/billing.ts";
import { field, str } from "../../support/troupe.ts";
import { startCompatHarness } from "./openai-harness.ts";
import { runPython, withPythonSdk } from "./python-sdk.ts";

t.setTimeout(120_000);
await withPythonSdk(t, () => startCompatHarness({ durableUsage: true }), async (python, h) => {

  const keyFor = async (body: Record<string, unknown>): Promise<string> => {
    const res = await h.troupe.request("POST", `/v1/environments/${h.user.developmentEnvId}/api-keys`, { token: h.user.token, body: { name: "py", ...body } });
    if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
    return str(res.body, "key");
  };

  t.test("each refusal is the SDK's own exception class with OpenAI's error body", async (t) => {
    const broke = await projectWithLiveKey(h.troupe, h.user.token, h.user.orgId, "py-budget");
    const put = await h.troupe.request("PUT", `/v1/projects/${broke.projectId}/budget`, { token: h.user.token, body: { monthly_limit_usd: 0.000001, hard_limit: true } });
    t.equal(put.status, 200, put.text);
    const keys = {
      default: h.user.testKey,
      embeddings_only: await keyFor({ scopes: ["embeddings"] }),
      two_per_minute: await keyFor({ rate_limit_per_minute: 2 }),
      hard_budget: broke.liveKey,
    };
    const before = h.fakes.openai.requests.length;
    const out = await runPython(python, "openai_errors.py", { base_url: h.baseURL, keys });
    // What reached OpenAI's fake: the scoped key's embedding, the rate-limited key's two calls, the budget's first.
    t.equal(h.fakes.openai.requests.length - before, 4, "no refused call reached the provider");

    t.match(field(out, "unauthorized"), {
      class: "AuthenticationError",
      status: 401,
      body: { message: String, type: "authentication_error", param: null, code: "invalid_api_key" },
      code: "invalid_api_key",
      request_id: /^req_/,
      is: { AuthenticationError: true, APIStatusError: true },
    });
    t.match(field(out, "scope"), { class: "PermissionDeniedError", status: 403, type: "permission_error", code: "insufficient_scope", is: { PermissionDeniedError: true } });
    t.equal(field(out, "scope_allowed"), 1, "the same key may embed");
    t.match(field(out, "model"), { class: "NotFoundError", status: 404, type: "invalid_request_error", param: "model", code: "model_not_found", is: { NotFoundError: true } });
    t.match(field(out, "rate_limit"), { class: "RateLimitError", status: 429, type: "requests", code: "rate_limit_exceeded", retry_after: /^\d+$/, is: { RateLimitError: true } });
    t.match(field(out, "budget"), { class: "RateLimitError", status: 429, type: "insufficient_quota", code: "insufficient_quota", should_retry: "false", is: { RateLimitError: true } });
    t.ok(Number(field(out, "budget", "elapsed_ms")) < 400, "with the SDK's retries on, x-should-retry: false stops them");
  });
});
