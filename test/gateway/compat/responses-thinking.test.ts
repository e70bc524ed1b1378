// Thinking across turns on a non-OpenAI model: a Gemini model that thinks
// signs its function call (thoughtSignature), and the Gemini fake refuses a
// next turn whose signature it did not issue. Through the Responses API the
// signature is a reasoning item's encrypted_content, sent back from the
// store (previous_response_id) and from a client that keeps its own items
// (store: false), so the tool round trip works.
import t from "tap";
import OpenAI from "openai";
import { startCompatHarness } from "./openai-harness.ts";

t.setTimeout(60_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client();
const model = "gemini-2.5-flash";
const weather = { type: "function" as const, name: "get_weather", description: "Weather", parameters: { type: "object", properties: { input: { type: "string" } }, required: ["input"] }, strict: false };
const sentSignatures = () => (JSON.stringify(h.fakes.gemini.requests.at(-1)!.body).match(/"thoughtSignature":"(sig-[^"]+)"/g) ?? []).length;

for (const store of [true, false]) {
  t.test(`a Gemini thought signature goes round as a reasoning item (${store ? "previous_response_id" : "store: false, items sent back"})`, async (t) => {
    const first = await client.responses.create({ model, input: "Weather in Paris?", tools: [weather], reasoning: { effort: "low" }, store });
    const reasoning = first.output.find((i) => i.type === "reasoning");
    const call = first.output.find((i) => i.type === "function_call");
    if (!reasoning || reasoning.type !== "reasoning" || !call || call.type !== "function_call") return t.fail(`output: ${JSON.stringify(first.output)}`);
    t.match(reasoning, { id: /^rs_/, encrypted_content: /\S/ });
    const output = { type: "function_call_output" as const, call_id: call.call_id, output: "sunny" };
    const second = store
      ? await client.responses.create({ model, previous_response_id: first.id, input: [output], tools: [weather], reasoning: { effort: "low" } })
      : await client.responses.create({ model, input: [{ role: "user", content: "Weather in Paris?" }, ...(first.output as OpenAI.Responses.ResponseInputItem[]), output], tools: [weather], reasoning: { effort: "low" }, store: false });
    t.equal(second.status, "completed", "the fake accepted the signature it issued");
    t.match(second.output_text, /Tool said: .*sunny/);
    t.ok(sentSignatures() >= 1, "the signature was sent back");
  });
}
