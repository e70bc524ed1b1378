// The official `openai` SDK, unmodified in its default mode, against
// /openai/v1/responses: plain and streamed responses, a function tool round
// trip over previous_response_id (the history rebuilt from stored items and
// sent to the provider), store: false, retrieve, delete, input_items paging
// — through an OpenAI, an Anthropic and a Gemini model on the fakes and the
// simulated provider.
import t from "tap";
import OpenAI from "openai";
import { modelsByProvider, startCompatHarness } from "./openai-harness.ts";

t.setTimeout(90_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client();

const weather = { type: "function" as const, name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { input: { type: "string" } }, required: ["input"] }, strict: false };
const models = { ...modelsByProvider, simulated: "simulated-chat" } as const;
/** What the SDK's output_text says (it adds that field to created responses, not to those inside stream events). */
const textOf = (r: OpenAI.Responses.Response) => r.output.flatMap((i) => (i.type === "message" ? i.content.map((p) => (p.type === "output_text" ? p.text : "")) : [])).join("");
/** The HTTP status a call was refused with (the SDK's APIError), or "resolved". */
const refusal = (call: Promise<unknown>) => call.then(() => "resolved" as const, (e: unknown) => (e instanceof OpenAI.APIError ? e.status : String(e)));
const fakeOf = (provider: string) => (provider in modelsByProvider ? h.fakes[provider as keyof typeof modelsByProvider] : undefined);

for (const [provider, model] of Object.entries(models)) {
  const fake = fakeOf(provider);

  t.test(`${provider} (${model}): plain response in OpenAI's shape, stored and billed once`, async (t) => {
    const { data: r, request_id } = await client.responses.create({ model, input: "hello there", instructions: "be brief", metadata: { case: "plain" } }).withResponse();
    t.match(r.id, /^resp_[0-9A-Z]{26}$/);
    t.equal(r.object, "response");
    t.equal(r.status, "completed");
    t.equal(r.model, model);
    t.equal(r.instructions, "be brief");
    t.same(r.metadata, { case: "plain" });
    if (fake) t.equal(r.output_text, "Echo: hello there", "the SDK's output_text");
    else t.ok(r.output_text.length > 0, "the simulated provider answered");
    t.equal(r.output.length, 1);
    t.match(r.output[0], { type: "message", role: "assistant", status: "completed", id: /^msg_/ });
    t.match(r.usage, { input_tokens: Number, output_tokens: Number, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } });
    t.equal(r.usage!.total_tokens, r.usage!.input_tokens + r.usage!.output_tokens);
    t.match(h.usage.filter((u) => u.request_id === request_id), [{ category: "chat", model, input_tokens: r.usage!.input_tokens, output_tokens: r.usage!.output_tokens }], "metered once");
    const again = await client.responses.retrieve(r.id);
    t.same(again, r, "retrieve answers the stored response");
  });

  t.test(`${provider} (${model}): streamed events with sequence numbers; the stored response is the streamed one`, async (t) => {
    const stream = await client.responses.create({ model, input: "hello stream", stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    t.same(events.map((e) => e.sequence_number), events.map((_, i) => i), "sequence_number counts from 0");
    t.equal(events[0]!.type, "response.created");
    t.equal(events[1]!.type, "response.in_progress");
    const last = events.at(-1)!;
    t.equal(last.type, "response.completed");
    if (last.type !== "response.completed") return;
    const deltas = events.flatMap((e) => (e.type === "response.output_text.delta" ? [e.delta] : []));
    t.ok(deltas.length >= 1, "text came as deltas");
    t.equal(deltas.join(""), textOf(last.response), "deltas concatenate to the text");
    if (fake) t.equal(textOf(last.response), "Echo: hello stream");
    t.same(
      events.map((e) => e.type).filter((type) => /output_item|content_part|output_text\.done/.test(type)),
      ["response.output_item.added", "response.content_part.added", "response.output_text.done", "response.content_part.done", "response.output_item.done"],
    );
    const stored = await client.responses.retrieve(last.response.id);
    t.equal(stored.status, "completed");
    t.same(stored.output, last.response.output, "stored once at the end, with the ids the client saw");
  });

  for (const streamed of [false, true]) {
    t.test(`${provider} (${model}): function tool round trip over previous_response_id, ${streamed ? "streamed" : "plain"}`, async (t) => {
      // required: the simulated model calls a tool only when asked to (the fakes call the first one whenever tools are declared).
      const first = await client.responses.create({ model, input: "Weather in Paris?", tools: [weather], tool_choice: "required" });
      const call = first.output.find((i) => i.type === "function_call");
      if (!call || call.type !== "function_call") return t.fail(`no function call: ${JSON.stringify(first.output)}`);
      t.equal(call.name, "get_weather");
      t.match(call.id, /^fc_/);
      t.same(JSON.parse(call.arguments), fake ? { input: "Weather in Paris?", n: 1 } : JSON.parse(call.arguments));
      const before = fake?.requests.length ?? 0;
      const input: OpenAI.Responses.ResponseInput = [{ type: "function_call_output", call_id: call.call_id, output: "sunny, 21C" }];
      let text: string;
      let id: string;
      if (streamed) {
        const stream = await client.responses.create({ model, previous_response_id: first.id, input, tools: [weather], stream: true });
        let done: OpenAI.Responses.Response | undefined;
        for await (const e of stream) if (e.type === "response.completed") done = e.response;
        text = done ? textOf(done) : "";
        id = done?.id ?? "";
      } else {
        const second = await client.responses.create({ model, previous_response_id: first.id, input, tools: [weather] });
        t.equal(second.previous_response_id, first.id);
        text = second.output_text;
        id = second.id;
      }
      if (fake) {
        // Gemini's fake wraps a function response as {"content": …}: its wire format.
        t.match(text, /^Tool said: .*sunny, 21C/, "the provider got the tool result after its call");
        t.equal(fake.requests.length, before + 1);
        const sent = JSON.stringify(fake.requests.at(-1)!.body);
        t.ok(sent.includes("Weather in Paris?"), "the first turn's user text was sent again from the store");
        // Gemini's wire format names a function call by its name, not an id.
        t.ok(sent.includes(provider === "gemini" ? '"functionCall"' : call.call_id), "and the stored function call");
      } else t.ok(text.length > 0);
      const items = await client.responses.inputItems.list(id);
      t.match(items.data, [{ type: "function_call_output", call_id: call.call_id, output: "sunny, 21C" }], "only this response's own input is its input");
    });
  }
}

t.test("store: false stores nothing: retrieve and continuing are refused", async (t) => {
  const r = await client.responses.create({ model: models.openai, input: "forget me", store: false });
  t.equal((r as unknown as { store: boolean }).store, false);
  t.equal(r.output_text, "Echo: forget me");
  t.equal(await refusal(client.responses.retrieve(r.id)), 404);
  t.equal(await refusal(client.responses.create({ model: models.openai, input: "and?", previous_response_id: r.id })), 400);
  const streamed = await client.responses.create({ model: models.openai, input: "forget me too", store: false, stream: true });
  let id = "";
  for await (const e of streamed) if (e.type === "response.completed") id = e.response.id;
  t.match(id, /^resp_/);
  t.equal(await refusal(client.responses.retrieve(id)), 404);
});

t.test("delete: the response is gone (404 to retrieve, input_items, a second delete)", async (t) => {
  const r = await client.responses.create({ model: models.anthropic, input: "short-lived" });
  const deleted = await client.responses.delete(r.id);
  t.same(deleted, { id: r.id, object: "response", deleted: true });
  t.equal(await refusal(client.responses.retrieve(r.id)), 404);
  t.equal(await refusal(client.responses.inputItems.list(r.id)), 404);
  t.equal(await refusal(client.responses.delete(r.id)), 404);
  t.equal(await refusal(client.responses.retrieve("resp_nonsense")), 404);
});

t.test("input_items: paged as OpenAI pages them (after, limit, order, first_id, last_id, has_more)", async (t) => {
  const input: OpenAI.Responses.ResponseInput = [
    { role: "user", content: "one" },
    { role: "assistant", content: "two" },
    { role: "user", content: [{ type: "input_text", text: "three" }] },
  ];
  const r = await client.responses.create({ model: models.gemini, input });
  const page = await client.responses.inputItems.list(r.id, { limit: 2, order: "asc" });
  t.equal(page.data.length, 2);
  t.equal(page.has_more, true);
  t.match(page.data, [{ type: "message", role: "user" }, { type: "message", role: "assistant" }]);
  const all: string[] = [];
  for await (const item of client.responses.inputItems.list(r.id, { limit: 1, order: "asc" })) all.push(String(item.id));
  t.equal(all.length, 3, "the SDK's auto-pagination follows after/last_id");
  t.equal(new Set(all).size, 3, "each item has its own id");
  const desc = await client.responses.inputItems.list(r.id);
  t.same(desc.data.map((i) => i.id), [...all].reverse(), "newest first by default");
  t.equal(desc.has_more, false);
});

t.test("input_tokens counts what a create would send, history included", async (t) => {
  const first = await client.responses.create({ model: models.openai, input: "a fairly long first message with several words in it" });
  const alone = await client.responses.inputTokens.count({ model: models.openai, input: "next" });
  const chained = await client.responses.inputTokens.count({ model: models.openai, input: "next", previous_response_id: first.id });
  t.equal(alone.object, "response.input_tokens");
  t.ok(chained.input_tokens > alone.input_tokens + 5, "the chain's items count");
});

t.test("ignored fields are accepted and named in troupe-ignored-params; unknown ones are a 400 naming them", async (t) => {
  const { response } = await client.responses.create({ model: models.openai, input: "hi", service_tier: "auto", prompt_cache_key: "k", truncation: "auto" }).withResponse();
  t.equal(response.headers.get("troupe-ignored-params"), "truncation, prompt_cache_key, service_tier");
  const bad = await client.responses.create({ model: models.openai, input: "hi", tools: [{ type: "web_search" }] } as never).catch((e: unknown) => e);
  t.equal(bad instanceof OpenAI.APIError && bad.status, 400);
  t.match((bad as Error).message, /tools/);
});
