// A stored response streamed again (GET /openai/v1/responses/{id}?stream=true)
// through the official `openai` SDK, unmodified: the events are those a live
// stream of the same answer sent (deltas whole), numbered from 0, ending with
// the stored response; `starting_after` resumes after a sequence number; an
// input-items cursor naming no item of the response is a 404.
import t from "tap";
import OpenAI from "openai";
import { modelsByProvider, startCompatHarness } from "./openai-harness.ts";

t.setTimeout(60_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client();

const weather = { type: "function" as const, name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { input: { type: "string" } }, required: ["input"] }, strict: false };
type Event = OpenAI.Responses.ResponseStreamEvent;

async function collect(stream: AsyncIterable<Event>): Promise<Event[]> {
  const events: Event[] = [];
  for await (const e of stream) events.push(e);
  return events;
}

/** The event types with each run of deltas as one (a replay sends each item's text whole). */
function shape(events: Event[]): string[] {
  return events.map((e) => e.type).filter((type, i, all) => !(type.endsWith(".delta") && all[i - 1] === type));
}

const cases: [string, Pick<OpenAI.Responses.ResponseCreateParams, "tools" | "tool_choice">][] = [
  ["text", {}],
  ["a function call", { tools: [weather], tool_choice: "required" }],
];
for (const [label, extra] of cases) {
  t.test(`a stored response with ${label} streams again as the live stream did`, async (t) => {
    const live = await collect(await client.responses.create({ model: modelsByProvider.openai, input: "Weather in Paris?", stream: true, ...extra }));
    const last = live.at(-1)!;
    if (last.type !== "response.completed") return t.fail(`live stream ended with ${last.type}`);
    const again = await collect(await client.responses.retrieve(last.response.id, { stream: true }));
    t.same(again.map((e) => e.sequence_number), again.map((_, i) => i), "numbered from 0");
    t.same(shape(again), shape(live), "the same frames in the same order");
    const end = again.at(-1)!;
    t.equal(end.type, "response.completed");
    if (end.type === "response.completed") t.same(end.response, last.response, "ends with the stored response (the live stream's last)");
    const deltas = (events: Event[]) => events.flatMap((e) => (e.type === "response.output_text.delta" || e.type === "response.function_call_arguments.delta" ? [e.delta] : [])).join("");
    t.equal(deltas(again), deltas(live), "the deltas say what the live ones said");
    t.ok(deltas(again).length > 0, "something was said");

    const resumed = await collect(await client.responses.retrieve(last.response.id, { stream: true, starting_after: 2 }));
    t.same(resumed, again.slice(3), "starting_after: the events after that sequence number");
  });
}

t.test("an input-items cursor naming no item of the response is a 404 naming it", async (t) => {
  const r = await client.responses.create({ model: modelsByProvider.openai, input: "hello" });
  const page = await client.responses.inputItems.list(r.id);
  t.equal(page.data.length, 1);
  const missing = await client.responses.inputItems.list(r.id, { after: "msg_nothing" }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(missing instanceof OpenAI.NotFoundError, "404");
  if (missing instanceof OpenAI.APIError) t.match(missing.message, /after: no input item 'msg_nothing'/);
  const after = await client.responses.inputItems.list(r.id, { after: page.data[0]!.id });
  t.same(after.data, [], "after the last item: an empty page");
});
