// A handoff with `@openai/agents` (JS) in its default mode, the Responses
// API, against an embedded Troupe's /openai/v1 over real sockets: agent A
// (the triage agent) has only a handoff to agent B; the model calls
// A's transfer_to_b tool, the SDK switches agents and B's turn carries the
// handoff's function_call and its output back, and B answers. Through an
// OpenAI, an Anthropic and a Gemini model on the fakes and the simulated
// provider, plain and streamed.
import { Agent, handoff, OpenAIProvider, Runner } from "@openai/agents";
import OpenAI from "openai";
import t from "tap";
import { modelsByProvider, startCompatHarness } from "./openai-harness.ts";

// No tracing export to OpenAI's servers: the machine has no internet and a client must not try.
process.env.OPENAI_AGENTS_DISABLE_TRACING = "1";
t.setTimeout(120_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());

const models = { ...modelsByProvider, simulated: "simulated-chat" } as const;
const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient: new OpenAI({ baseURL: h.baseURL, apiKey: h.user.testKey, maxRetries: 0 }) }), tracingDisabled: true });

function agents(model: string, simulated: boolean) {
  const b = new Agent({ name: "b", instructions: "You are agent B. Answer the user.", model });
  let handedOff = 0;
  const toB = handoff(b, { onHandoff: () => void handedOff++ });
  // The simulated model chooses a tool only when told it must; the fakes call the first one declared.
  const a = new Agent({ name: "a", instructions: "Hand every question to agent B.", model, handoffs: [toB], modelSettings: { toolChoice: simulated ? "required" : "auto" } });
  return { a, b, handed: () => handedOff };
}

for (const [provider, model] of Object.entries(models)) {
  const simulated = provider === "simulated";
  for (const streamed of [false, true]) {
    t.test(`${provider} (${model}): @openai/agents handoff A → B, ${streamed ? "streamed" : "plain"}`, async (t) => {
      const { a, b, handed } = agents(model, simulated);
      const since = h.usage.length;
      const result = streamed ? await runner.run(a, "Who answers this?", { stream: true }) : await runner.run(a, "Who answers this?");
      if ("toTextStream" in result) {
        const pieces: string[] = [];
        for await (const piece of result.toTextStream()) pieces.push(piece);
        await result.completed;
        // The Anthropic fake says "Let me check." before its tool call: A's text streams first.
        t.ok(pieces.join("").endsWith(String(result.finalOutput)), "B's answer arrived as it streamed");
      }
      t.equal(handed(), 1, "the SDK ran the handoff once");
      t.equal(result.lastAgent?.name, b.name, "agent B gave the final answer");
      const kinds = result.newItems.map((i) => i.type);
      t.ok(kinds.includes("handoff_call_item") && kinds.includes("handoff_output_item"), `a handoff call and its output: ${kinds.join(", ")}`);
      // B's turn saw A's handoff call and its output (the fakes answer from a tool's output).
      if (!simulated) t.match(String(result.finalOutput), /^Tool said: .*"assistant":\s*"b"/);
      else t.ok(String(result.finalOutput).length > 0);
      t.equal(result.rawResponses.length, 2, "two model calls: A's handoff, then B's answer");
      for (const r of result.rawResponses) t.match(r.responseId, /^resp_/, "each a Responses API response");
      t.equal(h.usage.slice(since).filter((u) => u.category === "chat").length, 2, "Troupe served and billed both");
    });
  }
}
