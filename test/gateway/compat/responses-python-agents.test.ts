// More Python agent clients in their default mode against /openai/v1/responses,
// unmodified but for base URL and key: an `openai-agents` handoff (agent A
// hands off to agent B, B answers; plain and streamed), pydantic-ai's
// OpenAIResponsesModel (a function tool; structured output in its default
// tool mode and with NativeOutput) and `litellm.responses()` (plain and
// streamed, model "openai/<id>" with api_base). Through an OpenAI, an
// Anthropic and a Gemini model on the fakes and the simulated provider. The
// scripts in ./python print what the clients returned; this file asserts on it.
import t from "tap";
import { field } from "../../support/troupe.ts";
import { modelsByProvider, startCompatHarness } from "./openai-harness.ts";
import { runPython, withPythonSdk } from "./python-sdk.ts";

t.setTimeout(300_000);
const models = { ...modelsByProvider, simulated: "simulated-chat" } as const;
const chatCalls = (h: { usage: { category: string }[] }, since: number) => h.usage.slice(since).filter((u) => u.category === "chat").length;

await withPythonSdk(t, startCompatHarness, async (python, h) => {
  const base = { base_url: h.baseURL, api_key: h.user.testKey };

  t.test("openai-agents: a handoff", async (t) => {
    const since = h.usage.length;
    const out = await runPython(python, "openai_agents_handoff.py", { ...base, models: Object.values(models), required: ["simulated-chat"] }, 120_000);
    for (const [provider, model] of Object.entries(models)) {
      const simulated = provider === "simulated";
      t.test(`${provider} (${model})`, async (t) => {
        const r = field(out, model);
        t.equal(field(r, "handoffs"), 2, "the SDK ran the handoff once per run");
        t.equal(field(r, "last_agent"), "b", "agent B answered");
        t.equal(field(r, "streamed_last_agent"), "b", "agent B answered the streamed run");
        // The Anthropic fake says "Let me check." before its tool call: A's message may come first.
        t.same((field(r, "items") as string[]).slice(-3), ["handoff_call_item", "handoff_output_item", "message_output_item"]);
        t.match(field(r, "response_ids"), [/^resp_/, /^resp_/], "two Responses API responses: A's handoff, B's answer");
        // B's turn carried A's handoff call and its output (the fakes answer from a tool's output).
        if (!simulated) t.match(field(r, "answer"), /^Tool said: .*"assistant":\s*"b"/);
        else t.match(field(r, "answer"), /\S/);
        const deltas = field(r, "deltas") as string[];
        t.ok(deltas.length >= 1, "streamed deltas");
        t.ok(deltas.join("").endsWith(String(field(r, "streamed"))), "B's answer arrived as it streamed");
      });
    }
    t.equal(chatCalls(h, since), 4 * Object.keys(models).length, "two calls per run, each billed");
  });

  t.test("pydantic-ai OpenAIResponsesModel: a tool and structured output", async (t) => {
    const toolModels = Object.values(modelsByProvider);
    const out = await runPython(python, "pydantic_ai_responses.py", { ...base, tool_models: toolModels, structured_models: ["simulated-chat", "simulated-chat-large"] }, 120_000);
    for (const model of toolModels) {
      t.test(`${model}: a function tool round trip`, async (t) => {
        t.same(field(out, "tool", model, "tool_inputs"), ["Weather in Paris?"], "pydantic-ai ran the tool once");
        t.match(field(out, "tool", model, "output"), /^Tool said: .*sunny, 21C/);
        const parts = field(out, "tool", model, "parts") as string[];
        t.ok(parts.indexOf("tool-call") < parts.indexOf("tool-return") && parts.at(-1) === "text", `a call, its return, then text: ${parts.join(", ")}`);
        t.match(field(out, "tool", model, "response_ids"), [/^resp_/, /^resp_/]);
      });
    }
    for (const model of ["simulated-chat", "simulated-chat-large"]) {
      t.test(`${model}: structured output validates in pydantic`, async (t) => {
        for (const mode of ["tool", "native"]) {
          t.equal(field(out, "structured", model, mode, "type"), "Person", `${mode}: pydantic made a Person of the answer`);
          t.match(field(out, "structured", model, mode, "output"), { name: String, age: Number, role: /^(engineer|designer|manager)$/, skills: Array, address: { city: String, zip: /^\d{5}$/ } });
        }
      });
    }
  });

  t.test("litellm.responses(): plain and streamed", async (t) => {
    const out = await runPython(python, "litellm_responses.py", { ...base, models: Object.values(models) }, 120_000);
    for (const [provider, model] of Object.entries(models)) {
      const simulated = provider === "simulated";
      t.test(`${provider} (${model})`, async (t) => {
        t.match(field(out, model, "plain"), { id: /^resp_/, status: "completed", text: simulated ? /\S/ : "Echo: hello there", input_tokens: Number, output_tokens: Number });
        const types = field(out, model, "stream_types") as string[];
        t.equal(types[0], "response.created");
        t.equal(types.at(-1), "response.completed");
        const deltas = field(out, model, "deltas") as string[];
        t.ok(deltas.length >= 1, "text deltas");
        if (!simulated) t.equal(deltas.join(""), "Echo: hello stream");
        t.match(field(out, model, "completed_id"), /^resp_/);
      });
    }
  });
});
