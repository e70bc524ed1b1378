// pydantic-ai (PyPI, in the SDK venv), unmodified but for the OpenAI
// provider's base_url and api_key, against an embedded Troupe's /openai/v1
// on the simulated models: an Agent with a pydantic output_type, in its
// default output mode (a final_result tool call whose arguments pydantic
// validates) and with NativeOutput (response_format json_schema, the JSON
// answer validated). The script is python/pydantic_ai_structured.py.
import t from "tap";
import { field } from "../../support/troupe.ts";
import { startCompatHarness } from "./openai-harness.ts";
import { runPython, withPythonSdk } from "./python-sdk.ts";

t.setTimeout(180_000);
await withPythonSdk(t, startCompatHarness, async (python, h) => {
  for (const model of ["simulated-chat", "simulated-chat-large"]) {
    t.test(`${model}: structured output validates in pydantic, deterministically`, async (t) => {
      const before = h.usage.length;
      const out = await runPython(python, "pydantic_ai_structured.py", { base_url: h.baseURL, api_key: h.user.testKey, model });
      for (const mode of ["tool", "native"]) {
        t.equal(field(out, mode, "type"), "Person", `${mode}: pydantic made a Person of the answer`);
        t.match(field(out, mode, "output"), { name: String, age: Number, role: /^(engineer|designer|manager)$/, skills: Array, address: { city: String, zip: /^\d{5}$/ } });
        t.same(field(out, mode, "again"), field(out, mode, "output"), `${mode}: the same request, the same instance`);
      }
      t.ok(h.usage.slice(before).every((u) => u.model === model), "every call answered by the named simulated model");
    });
  }
});
