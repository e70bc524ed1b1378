// Python clients of /openai/v1's chat completions, unmodified in their
// default configuration, through the venv of test/gateway/compat/python
// (scripts/python-sdks.sh): litellm as a client (completion, stream, a tool
// round trip with `name` on the tool message, embeddings) and openai-agents
// in chat-completions mode with default model settings (a run with a
// function tool), against an embedded Troupe and the provider fakes. In CI a
// missing venv fails loudly (withPythonSdk).
import t from "tap";
import { field } from "../../support/troupe.ts";
import { modelsByProvider, startCompatHarness } from "./openai-harness.ts";
import { runPython, withPythonSdk } from "./python-sdk.ts";

t.setTimeout(240_000);
await withPythonSdk(t, startCompatHarness, async (python, h) => {
  const input = { base_url: h.baseURL, api_key: h.user.testKey };

  for (const model of [modelsByProvider.openai, modelsByProvider.gemini]) {
    t.test(`litellm: completion, stream, tools with name on the tool message, embedding (${model})`, async (t) => {
      const out = await runPython(python, "litellm_client.py", { ...input, model, embedding_model: "text-embedding-3-small" }, 120_000);
      t.match(field(out, "plain"), { content: "Echo: hello there", finish_reason: "stop" });
      t.ok(Number(field(out, "plain", "prompt_tokens")) > 0);
      t.equal(field(out, "stream"), "Echo: hello there");
      t.match(field(out, "tool_call"), { name: "get_weather", arguments: { input: String } });
      t.match(field(out, "after_tool"), { content: String, finish_reason: "stop" });
      t.same(field(out, "embeddings"), [1536, 1536]);
    });
  }

  t.test("openai-agents in chat-completions mode: a run with a function tool", async (t) => {
    const models = [modelsByProvider.openai, modelsByProvider.gemini];
    const out = await runPython(python, "openai_agents_chat.py", { ...input, models }, 120_000);
    for (const model of models) {
      t.equal(field(out, model, "tool_ran"), true, `${model}: the tool ran`);
      t.ok(String(field(out, model, "final_output")).length > 0, `${model}: a final answer`);
    }
  });
});
