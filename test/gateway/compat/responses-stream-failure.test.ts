// A streamed response whose provider stream breaks after it started: the
// client gets the deltas that came, then response.failed with an error;
// the stored response is that failed one (retrievable, with the same output
// so far), and a continuation of it is possible only from what was stored.
import t from "tap";
import OpenAI from "openai";
import { startCompatHarness } from "./openai-harness.ts";

t.setTimeout(60_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client();

t.test("a stream cut mid-way ends in response.failed and is stored failed", async (t) => {
  h.fakes.openai.faults.queue.push({ kind: "cut" });
  h.fakes.openai.faults.eventDelayMs = 20;
  t.teardown(() => void (h.fakes.openai.faults.eventDelayMs = 0));
  const stream = await client.responses.create({ model: "gpt-4.1-mini", input: "one two three four five six seven eight", stream: true });
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const e of stream) events.push(e);
  const last = events.at(-1)!;
  t.equal(last.type, "response.failed", `ended: ${events.map((e) => e.type).join(", ")}`);
  if (last.type !== "response.failed") return;
  t.equal(last.response.status, "failed");
  t.match(last.response.error, { code: "server_error", message: /\S/ });
  t.same(events.map((e) => e.sequence_number), events.map((_, i) => i));
  t.ok(events.some((e) => e.type === "response.output_text.delta"), "the deltas before the cut reached the client");
  const stored = await client.responses.retrieve(last.response.id);
  t.equal(stored.status, "failed", "stored once, as failed");
  t.same(stored.error, last.response.error);
});
