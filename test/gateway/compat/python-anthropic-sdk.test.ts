// The official `anthropic` PyPI package (scripts/python-sdks.sh), unmodified
// but for base_url and api_key, against an embedded Troupe's /anthropic
// mount over real sockets, the provider fakes behind it: messages plain and
// streamed and tool-use round trips plain and streamed (input_json_delta),
// each through an OpenAI, an Anthropic and a Gemini model; count_tokens;
// 401, 403 (scope), 404 (model), 402 (hard budget) and 429 (rate limit),
// each caught in Python as the SDK's own exception class.
import t from "tap";
import { projectWithLiveKey } from "../../support/billing.ts";
import { field, str } from "../../support/troupe.ts";
import { models, startCompatHarness } from "./anthropic-harness.ts";
import { runPython, withPythonSdk } from "./python-sdk.ts";

t.setTimeout(180_000);
await withPythonSdk(t, startCompatHarness, async (python, h) => {

  const keyWith = async (body: Record<string, unknown>): Promise<string> => {
    const res = await h.troupe.request("POST", `/v1/environments/${h.productionEnvId}/api-keys`, { token: h.session, body: { name: "py", live: true, ...body } });
    if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
    return str(res.body, "key");
  };

  const broke = await projectWithLiveKey(h.troupe, h.session, h.orgId, "py-broke");
  const put = await h.troupe.request("PUT", `/v1/projects/${broke.projectId}/budget`, { token: h.session, body: { monthly_limit_usd: 0.000001, hard_limit: true } });
  if (put.status !== 200) throw new Error(`budget: ${put.status} ${put.text}`);
  const keys = { default: h.liveKey, images_only: await keyWith({ scopes: ["images"] }), one_per_minute: await keyWith({ rate_limit_per_minute: 1 }), hard_budget: broke.liveKey };
  const calls = h.providerCalls();
  const out = await runPython(python, "anthropic_messages.py", { base_url: `${h.troupe.url}/anthropic`, models: Object.values(models), keys });

  t.test("the 2.x SDK ran, and no refused call reached a provider", async (t) => {
    t.match(field(out, "sdk"), /^2\./);
    // Per model: plain, streamed, two calls in each tool round trip (18); then the budget's first call and the rate-limited key's first.
    t.equal(h.providerCalls() - calls, 20);
  });

  for (const [provider, model] of Object.entries(models)) {
    t.test(`${provider} (${model})`, async (t) => {
      const r = field(out, model);
      t.match(field(r, "plain"), { id: /^msg_/, type: "message", role: "assistant", model, text: "Echo: hello there", stop_reason: "end_turn", usage: { input_tokens: Number, output_tokens: Number } });
      t.ok(Number(field(r, "plain", "usage", "output_tokens")) > 0);
      t.match(field(r, "stream"), { text: "Echo: hello stream", stop_reason: "end_turn", model });
      const fragments = field(r, "stream", "fragments") as string[];
      t.ok(fragments.length > 1, "text in several deltas");
      t.equal(fragments.join(""), "Echo: hello stream");
      t.ok(Number(field(r, "stream", "output_tokens")) > 0, "message_delta carried the output tokens");
      for (const kind of ["tools_plain", "tools_stream"]) {
        t.match(field(r, kind), {
          stop_reason: "tool_use",
          uses: [{ id: String, name: "get_weather", input: { input: "What is the weather in Paris?" } }],
          answer: /sunny, 24 °C/,
          answer_stop_reason: "end_turn",
        }, kind);
        t.equal((field(r, kind, "uses") as unknown[]).length, 1, `${kind}: one tool_use block`);
      }
      const deltas = field(r, "tools_stream", "input_json_deltas") as string[];
      t.ok(deltas.length >= 1, "the streamed tool input came as input_json_delta");
      t.match(JSON.parse(deltas.join("")), { input: "What is the weather in Paris?" }, "the partial_json pieces join to the input");
    });
  }

  t.test("count_tokens", async (t) => {
    const short = Number(field(out, "count_tokens", "short"));
    t.ok(short > 0);
    t.ok(Number(field(out, "count_tokens", "long")) > short, "tools and a longer question count more");
  });

  t.test("refusals as the SDK's own exception classes", async (t) => {
    t.match(field(out, "unauthorized"), { class: "AuthenticationError", status: 401, body: { type: "error", error: { type: "authentication_error", message: String } }, request_id: /^req_/, is: { AuthenticationError: true } });
    t.match(field(out, "scope"), { class: "PermissionDeniedError", status: 403, body: { error: { type: "permission_error", message: /chat/ } }, is: { PermissionDeniedError: true } });
    t.match(field(out, "model"), { class: "NotFoundError", status: 404, body: { error: { type: "not_found_error", message: /claude-nonexistent-9/ } }, is: { NotFoundError: true } });
    t.match(field(out, "budget"), { class: "PaymentRequiredError", status: 402, body: { error: { type: "billing_error" } }, is: { PaymentRequiredError: true, APIStatusError: true } });
    t.match(field(out, "rate_limit"), { class: "RateLimitError", status: 429, body: { error: { type: "rate_limit_error" } }, retry_after: /^\d+$/, is: { RateLimitError: true } });
  });
});
