// POST /v1/translations end to end.
import t from "tap";
import { startAiHarness } from "./ai-harness.ts";

const h = await startAiHarness();
t.teardown(() => h.stop());
const post = (body: unknown) => h.troupe.request("POST", "/v1/translations", { token: h.key, body });

t.test("simulated translation follows the documented convention", async (t) => {
  const r = await post({ text: "Good morning", target_language: "French", model: "simulated-chat" });
  t.equal(r.status, 200, r.text);
  t.same(r.body, { text: "[French] Good morning", source_language: null, target_language: "French", model: "simulated-chat", provider: "simulated" });
});

t.test("a real provider gets the instruction as a system prompt", async (t) => {
  const before = h.usage.length;
  const r = await post({ text: "Hello", target_language: "German", source_language: "English", model: "claude-haiku-4-5", routing_strategy: "manual" });
  t.equal(r.status, 200);
  t.match(r.body, { source_language: "English", target_language: "German", provider: "anthropic" });
  const body = h.fakes.anthropic.requests.at(-1)!.body as { system: string; temperature: number };
  t.equal(body.system, "Translate the user's text from English into German. Reply with the translation only.");
  t.equal(body.temperature, 0);
  t.match(h.usage.slice(before), [{ category: "translation", provider: "anthropic" }]);
});

t.test("validation", async (t) => {
  t.equal((await post({ text: "x" })).status, 400);
  t.equal((await post({ text: "", target_language: "fr" })).status, 400);
  t.equal((await post({ text: "x", target_language: "fr", model: "simulated-embed" })).status, 400);
});
