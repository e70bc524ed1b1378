// The same rules as every other model call, on /openai/v1/responses: the
// chat scope (and vision for an input_image), a hard budget refusing before
// any provider call (JSON and stream alike), usage billed per response in
// the durable ledger, and 400s naming the field for what Troupe cannot
// serve.
import t from "tap";
import OpenAI from "openai";
import { projectWithLiveKey } from "../../support/billing.ts";
import { field } from "../../support/troupe.ts";
import { startCompatHarness } from "./openai-harness.ts";

t.setTimeout(60_000);
const h = await startCompatHarness({ durableUsage: true });
t.teardown(() => h.stop());
const model = "gpt-4.1-mini";

async function refused(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const outcome = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (outcome instanceof OpenAI.APIError) return outcome;
  throw new Error(`expected a refusal, got ${String(outcome)}`);
}

async function keyFor(body: Record<string, unknown>): Promise<string> {
  const res = await h.troupe.request("POST", `/v1/environments/${h.user.developmentEnvId}/api-keys`, { token: h.user.token, body: { name: "responses", ...body } });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
  return String(field(res.body, "key"));
}

t.test("scopes: chat for every route, vision for an input_image", async (t) => {
  const embeddingsOnly = h.client(await keyFor({ scopes: ["embeddings"] }));
  const before = h.fakes.openai.requests.length;
  t.equal((await refused(embeddingsOnly.responses.create({ model, input: "hi" }))).status, 403);
  t.equal((await refused(embeddingsOnly.responses.retrieve("resp_01ARZ3NDEKTSV4RRFFQ69G5FAV"))).status, 403);
  const chatOnly = h.client(await keyFor({ scopes: ["chat"] }));
  const image = { role: "user" as const, content: [{ type: "input_image" as const, image_url: "https://example.com/cat.png", detail: "auto" as const }] };
  const e = await refused(chatOnly.responses.create({ model, input: [image] }));
  t.equal(e.status, 403);
  t.match(e.message, /vision/);
  t.equal(h.fakes.openai.requests.length, before, "refused before any provider call");
});

t.test("a hard budget: refused before any provider call, JSON and stream alike", async (t) => {
  const p = await projectWithLiveKey(h.troupe, h.user.token, h.user.orgId, "responses-budget");
  const put = await h.troupe.request("PUT", `/v1/projects/${p.projectId}/budget`, { token: h.user.token, body: { monthly_limit_usd: 0.000001, hard_limit: true } });
  t.equal(put.status, 200, put.text);
  const client = new OpenAI({ baseURL: h.baseURL, apiKey: p.liveKey, maxRetries: 0 });
  // Admitted while nothing is spent; it spends past the limit.
  await client.responses.create({ model, input: "hello there" });
  const before = h.fakes.openai.requests.length;
  const e = await refused(client.responses.create({ model, input: "again", max_output_tokens: 1000 }));
  t.equal(e.status, 429);
  t.match(e.error, { type: "insufficient_quota" });
  const s = await refused(client.responses.create({ model, input: "again", max_output_tokens: 1000, stream: true }));
  t.equal(s.status, 429, "a stream is refused before it starts");
  t.equal(h.fakes.openai.requests.length, before, "the fake saw no request");
});

t.test("400s naming the field", async (t) => {
  const client = h.client();
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ["a hosted tool", { tools: [{ type: "file_search", vector_store_ids: ["vs_1"] }] }, /tools/],
    ["a background response not stored", { background: true, store: false }, /store/],
    ["a prompt template", { prompt: { id: "pmpt_1" } }, /prompt/],
    ["an unknown previous response", { previous_response_id: "resp_01ARZ3NDEKTSV4RRFFQ69G5FAV" }, /previous_response_id|not found/],
    ["a file by id", { input: [{ role: "user", content: [{ type: "input_file", file_id: "file_1" }] }] }, /input/],
    ["arguments that are not JSON", { input: [{ type: "function_call", call_id: "c1", name: "f", arguments: "{oops" }, { type: "function_call_output", call_id: "c1", output: "x" }] }, /arguments/],
  ];
  for (const [name, body, param] of cases) {
    const e = await refused(client.responses.create({ model, input: "hi", ...body } as never));
    t.equal(e.status, 400, name);
    t.match(`${e.message} ${JSON.stringify(e.error)}`, param, `${name}: names the field`);
  }
});

t.test("a text file is read into the prompt; json_schema goes to the provider as its JSON format", async (t) => {
  const client = h.client();
  const file = `data:text/plain;base64,${Buffer.from("the secret word is plover").toString("base64")}`;
  await client.responses.create({ model, input: [{ role: "user", content: [{ type: "input_file", filename: "notes.txt", file_data: file }, { type: "input_text", text: "what is it?" }] }] });
  t.ok(JSON.stringify(h.fakes.openai.requests.at(-1)!.body).includes("the secret word is plover"), "the file's text was sent");
  const schema = { type: "object", properties: { word: { type: "string" } }, required: ["word"], additionalProperties: false };
  await client.responses.create({ model, input: "answer in JSON", text: { format: { type: "json_schema", name: "answer", schema, strict: true } } });
  t.match(h.fakes.openai.requests.at(-1)!.body, { response_format: { type: "json_schema", json_schema: { name: "answer", schema } } });
});
