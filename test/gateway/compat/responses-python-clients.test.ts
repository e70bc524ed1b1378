// The Python clients in their default mode against /openai/v1/responses:
// the official `openai` SDK's responses.* (plain, streamed, the stream
// helper, a function tool round trip over previous_response_id,
// input_items, retrieve, delete) and `openai-agents` (a run, a function
// tool, a streamed run), through an OpenAI, an Anthropic and a Gemini model
// on the fakes and the simulated provider. The scripts in ./python print
// what the SDKs returned; this file asserts on it.
import t from "tap";
import { field } from "../../support/troupe.ts";
import { modelsByProvider, startCompatHarness } from "./openai-harness.ts";
import { runPython, withPythonSdk } from "./python-sdk.ts";

t.setTimeout(240_000);
const models = { ...modelsByProvider, simulated: "simulated-chat" } as const;

await withPythonSdk(t, startCompatHarness, async (python, h) => {
  const input = { base_url: h.baseURL, api_key: h.user.testKey, models: Object.values(models) };

  t.test("openai: responses.*", async (t) => {
    const out = await runPython(python, "openai_responses.py", input, 120_000);
    for (const [provider, model] of Object.entries(models)) {
      const simulated = provider === "simulated";
      t.test(`${provider} (${model})`, async (t) => {
        const r = field(out, model);
        t.match(field(r, "plain"), { id: /^resp_/, status: "completed", output_text: simulated ? /\S/ : "Echo: hello there", usage: { input_tokens: Number, output_tokens: Number } });
        const events = field(r, "stream_events") as string[];
        t.equal(events[0], "response.created");
        t.equal(events.at(-1), "response.completed");
        t.ok(events.includes("response.output_text.delta"));
        t.match(field(r, "helper_text"), simulated ? /\S/ : "Echo: hello helper", "the SDK's stream helper assembled the response");
        t.match(field(r, "call"), { name: "get_weather", id: /^fc_/ });
        t.match(field(r, "second"), { output_text: simulated ? /\S/ : /^Tool said: .*sunny, 21C/, previous_response_id: /^resp_/ });
        t.same(field(r, "items"), ["function_call_output"]);
        t.match(field(r, "retrieved_id"), /^resp_/);
        t.equal(field(r, "after_delete"), 404);
      });
    }
  });

  t.test("openai-agents: default mode", async (t) => {
    const out = await runPython(python, "openai_agents_responses.py", input, 120_000);
    for (const [provider, model] of Object.entries(models)) {
      const simulated = provider === "simulated";
      t.test(`${provider} (${model})`, async (t) => {
        const r = field(out, model);
        t.match(field(r, "plain"), simulated ? /\S/ : "Echo: hello agents");
        t.match(field(r, "response_ids"), [/^resp_/], "a Responses API response");
        t.equal(field(r, "tool_runs"), 1, "the agent ran the tool once");
        if (!simulated) {
          t.equal(field(r, "tool_input"), "Weather in Paris?");
          t.match(field(r, "tooled"), /^Tool said: .*sunny, 21C/);
        }
        const deltas = field(r, "deltas") as string[];
        t.ok(deltas.length >= 1, "streamed deltas");
        t.equal(deltas.join(""), field(r, "streamed"));
      });
    }
  });
});
