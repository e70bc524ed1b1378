// The /gemini mount over raw HTTP against an embedded Troupe and the
// provider fakes: each field rule (translated and sent on, accepted and
// listed in troupe-ignored-params, refused by name, unknown and refused),
// errors in Google's shape, the key as x-goog-api-key, ?key= and Bearer (two
// that differ refused, ?key= redacted from the request log), a function
// call round trip, embeddings and countTokens, on both API versions.
import t from "tap";
import { projectWithLiveKey } from "../../support/billing.ts";
import { field, str } from "../../support/troupe.ts";
import { embeddingModel, models, startGeminiHarness } from "./gemini-harness.ts";
import { parseResponse, raw } from "../raw-http.ts";

t.setTimeout(120_000);
const h = await startGeminiHarness();
t.teardown(() => h.stop());

const hello = { contents: [{ role: "user", parts: [{ text: "hello there" }] }] };
const lastBody = (fake: { requests: { body: unknown }[] }): unknown => fake.requests.at(-1)?.body;

t.test("generateContent on a Gemini, a Claude and a GPT model, on v1 and v1beta", async (t) => {
  for (const version of ["v1", "v1beta"]) {
    for (const model of Object.values(models)) {
      const res = await h.call("POST", `/${version}/models/${model}:generateContent`, hello);
      t.equal(res.status, 200, `${version} ${model}: ${res.text.slice(0, 300)}`);
      t.match(res.body, {
        candidates: [{ content: { role: "model", parts: [{ text: "Echo: hello there" }] }, finishReason: "STOP", index: 0 }],
        usageMetadata: { promptTokenCount: Number, candidatesTokenCount: Number, totalTokenCount: Number },
        modelVersion: model,
        responseId: String,
      });
      const usage = field(res.body, "usageMetadata") as Record<string, number>;
      t.equal(usage["totalTokenCount"], (usage["promptTokenCount"] ?? 0) + (usage["candidatesTokenCount"] ?? 0));
    }
  }
});

t.test("streamGenerateContent without alt=sse answers Google's default, one streamed JSON array of chunks; alt=sse answers SSE", async (t) => {
  for (const model of Object.values(models)) {
    const res = await h.call("POST", `/v1beta/models/${model}:streamGenerateContent`, hello);
    t.equal(res.status, 200, res.text.slice(0, 300));
    t.match(res.headers.get("content-type"), /^application\/json/, `${model}: JSON, not SSE`);
    t.match(res.text, /^\[\{/, "an array from the first byte");
    const chunks = JSON.parse(res.text) as { candidates: { content: { parts: { text?: string }[] }; finishReason?: string }[]; usageMetadata?: unknown }[];
    t.ok(chunks.length > 1, `${model}: several chunks (${chunks.length})`);
    t.equal(chunks.map((c) => c.candidates[0]?.content.parts.map((p) => p.text ?? "").join("")).join(""), "Echo: hello there", `${model}: the text, chunk by chunk`);
    t.match(chunks.at(-1), { candidates: [{ finishReason: "STOP" }], usageMetadata: { totalTokenCount: Number } }, "the last chunk finishes, with the usage");
  }
  const sse = await h.call("POST", `/v1beta/models/${models.gemini}:streamGenerateContent?alt=sse`, hello);
  t.match(sse.headers.get("content-type"), /^text\/event-stream/);
  t.match(sse.text, /^data: \{/);
});

t.test("a supported field is translated and sent on", async (t) => {
  const body = {
    ...hello,
    systemInstruction: { parts: [{ text: "be brief" }] },
    generationConfig: { maxOutputTokens: 1, temperature: 0.5, topP: 0.9, stopSequences: ["END"], seed: 7 },
  };
  const res = await h.call("POST", `/v1/models/${models.openai}:generateContent`, body);
  t.equal(res.status, 200, res.text);
  t.equal(field(res.body, "candidates", 0, "finishReason"), "MAX_TOKENS", "maxOutputTokens 1 cut the answer");
  t.equal(field(res.body, "candidates", 0, "content", "parts", 0, "text"), "Echo:");
  const sent = lastBody(h.fakes.openai) as Record<string, unknown>;
  t.match(sent, { temperature: 0.5, top_p: 0.9, stop: ["END"], seed: 7 }, "OpenAI got the sampling fields");
  t.match(field(sent, "messages", 0), { role: "system", content: "be brief" }, "systemInstruction became the system message");

  const schema = { type: "OBJECT", properties: { city: { type: "STRING" } }, required: ["city"], propertyOrdering: ["city"] };
  const json = await h.call("POST", `/v1/models/${models.openai}:generateContent`, { ...hello, generationConfig: { responseMimeType: "application/json", responseSchema: schema } });
  t.equal(json.status, 200, json.text);
  t.match(field(lastBody(h.fakes.openai), "response_format"), { type: "json_schema", json_schema: { schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }, "responseSchema became a JSON Schema response_format");
});

t.test("field names in snake_case are read too, as Google's proto JSON reads them", async (t) => {
  const res = await h.call("POST", `/v1/models/${models.openai}:generateContent`, { ...hello, system_instruction: { parts: [{ text: "terse" }] }, generation_config: { max_output_tokens: 1 } });
  t.equal(res.status, 200, res.text);
  t.equal(field(res.body, "candidates", 0, "finishReason"), "MAX_TOKENS");
  t.match(field(lastBody(h.fakes.openai), "messages", 0), { role: "system", content: "terse" });
  const twice = await h.call("POST", `/v1/models/${models.openai}:generateContent`, { ...hello, generationConfig: { maxOutputTokens: 1, max_output_tokens: 2 } });
  t.match(twice.body, { error: { code: 400, message: /body\.generationConfig\.maxOutputTokens: given twice/ } });
  const key = await h.request("POST", `/v1/environments/${h.productionEnvId}/api-keys`, { token: h.session, body: { name: "chat-only", live: true, scopes: ["chat"] } });
  const image = { contents: [{ role: "user", parts: [{ text: "what is this?" }, { inline_data: { mime_type: "image/png", data: "iVBORw0KGgo=" } }] }] };
  const refused = await h.call("POST", `/v1/models/${models.gemini}:generateContent`, image, { "x-goog-api-key": str(key.body, "key") });
  t.equal(refused.status, 403, `an image in snake_case still needs the vision scope: ${refused.text}`);
  t.match(refused.body, { error: { status: "PERMISSION_DENIED", message: /"vision"/ } });
});

t.test("thinking: thinkingConfig sent on, thought parts with their signature, sent back; cached and thought token counts", async (t) => {
  const think = { thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } };
  for (const model of [models.gemini, models.anthropic]) {
    const res = await h.call("POST", `/v1/models/${model}:generateContent`, { ...hello, generationConfig: think });
    t.equal(res.status, 200, res.text);
    const parts = field(res.body, "candidates", 0, "content", "parts") as { thought?: boolean; thoughtSignature?: string; text?: string }[];
    const thought = parts.find((p) => p.thought === true);
    t.match(thought, { thought: true, thoughtSignature: String }, `${model}: a thought part, signed`);
    t.equal(parts.at(-1)?.text, "Echo: hello there", "the answer after it");
    // The SDKs send the model turn back as answered: the provider must accept its own signature.
    const again = await h.call("POST", `/v1/models/${model}:generateContent`, { contents: [...hello.contents, field(res.body, "candidates", 0, "content"), { role: "user", parts: [{ text: "and again" }] }], generationConfig: think });
    t.equal(again.status, 200, `${model}: the signed thought went back and was accepted: ${again.text}`);
    const hidden = await h.call("POST", `/v1/models/${model}:generateContent`, { ...hello, generationConfig: { thinkingConfig: { thinkingBudget: 1024 } } });
    t.notOk((field(hidden.body, "candidates", 0, "content", "parts") as { thought?: boolean }[]).some((p) => p.thought), `${model}: no thought parts unless includeThoughts`);
  }
  const gemini = await h.call("POST", `/v1/models/${models.gemini}:generateContent`, { ...hello, generationConfig: think });
  t.ok(Number(field(gemini.body, "usageMetadata", "thoughtsTokenCount")) > 0, "thoughtsTokenCount from the provider's reasoning tokens");
  t.match(field(lastBody(h.fakes.gemini), "generationConfig", "thinkingConfig"), { thinkingBudget: 1024 }, "the budget went to Gemini");
  const off = await h.call("POST", `/v1/models/${models.gemini}:generateContent`, { ...hello, generationConfig: { thinkingConfig: { thinkingBudget: 0 } } });
  t.equal(off.status, 200);

  // A prefix of 1,024 tokens or more: the fake caches as Gemini's implicit caching does.
  const long = { role: "user", parts: [{ text: `hello about ${"lighthouses ".repeat(1100)}` }] };
  const conversation = { contents: [long, { role: "model", parts: [{ text: "Echo: hello there" }] }, { role: "user", parts: [{ text: "once more" }] }] };
  await h.call("POST", `/v1/models/${models.gemini}:generateContent`, conversation);
  const cached = await h.call("POST", `/v1/models/${models.gemini}:generateContent`, conversation);
  t.ok(Number(field(cached.body, "usageMetadata", "cachedContentTokenCount")) > 0, `cachedContentTokenCount from the provider's cached tokens: ${cached.text}`);

  const streamed = await h.call("POST", `/v1beta/models/${models.anthropic}:streamGenerateContent?alt=sse`, { ...hello, generationConfig: think });
  t.match(streamed.text, /"thought":true/, "thinking streams as thought parts");
  t.match(streamed.text, /"thoughtSignature":"[^"]+"/, "with its signature");
});

t.test("an ignored field is accepted, not sent, and listed in troupe-ignored-params", async (t) => {
  const body = { ...hello, safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }], labels: { team: "a" }, generationConfig: { topK: 3 } };
  const res = await h.call("POST", `/v1/models/${models.gemini}:generateContent`, body);
  t.equal(res.status, 200, res.text);
  t.equal(res.headers.get("troupe-ignored-params"), "safetySettings, labels, generationConfig.topK");
  const sent = lastBody(h.fakes.gemini) as Record<string, unknown>;
  t.notOk("safetySettings" in sent, "safetySettings were not sent to Gemini");
  const plain = await h.call("POST", `/v1/models/${models.gemini}:generateContent`, hello);
  t.equal(plain.headers.get("troupe-ignored-params"), null, "no header when nothing was ignored");
  const streamed = await h.call("POST", `/v1/models/${models.gemini}:streamGenerateContent?alt=sse`, body);
  t.equal(streamed.headers.get("troupe-ignored-params"), "safetySettings, labels, generationConfig.topK", "the stream says so too");
});

t.test("presencePenalty and frequencyPenalty reach a GPT model as OpenAI's penalties; named for Gemini and Claude models, not sent", async (t) => {
  const body = { ...hello, generationConfig: { presencePenalty: 0.5, frequencyPenalty: -0.5 } };
  const gpt = await h.call("POST", `/v1/models/${models.openai}:generateContent`, body);
  t.equal(gpt.status, 200, gpt.text);
  t.match(lastBody(h.fakes.openai), { presence_penalty: 0.5, frequency_penalty: -0.5 }, "OpenAI got them");
  t.equal(gpt.headers.get("troupe-ignored-params"), null, "sent on: not named");
  for (const [model, fake] of [[models.gemini, h.fakes.gemini], [models.anthropic, h.fakes.anthropic]] as const) {
    for (const stream of [false, true]) {
      const res = await h.call("POST", `/v1beta/models/${model}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`, body);
      t.equal(res.status, 200, res.text.slice(0, 200));
      t.equal(res.headers.get("troupe-ignored-params"), "generationConfig.presencePenalty, generationConfig.frequencyPenalty", `${model}${stream ? " (stream)" : ""}: named`);
      t.notMatch(JSON.stringify(lastBody(fake)), /enalty/, `${model}: not sent`);
    }
  }
});

t.test("an answer-changing field no model honours is refused by name, before any provider call", async (t) => {
  const calls = h.providerCalls();
  const cases: [Record<string, unknown>, string][] = [
    [{ ...hello, generationConfig: { candidateCount: 2 } }, "body.generationConfig.candidateCount"],
    [{ ...hello, generationConfig: { responseLogprobs: true } }, "body.generationConfig.responseLogprobs"],
    [{ ...hello, generationConfig: { responseModalities: ["AUDIO"] } }, "body.generationConfig.responseModalities"],
    [{ ...hello, tools: [{ googleSearch: {} }] }, "body.tools.googleSearch"],
    [{ ...hello, cachedContent: "cachedContents/abc" }, "body.cachedContent"],
    [{ contents: [{ role: "user", parts: [{ inlineData: { mimeType: "audio/wav", data: "AAAA" } }] }] }, "body.contents.0.parts.0.inlineData.mimeType"],
  ];
  for (const [body, path] of cases) {
    const res = await h.call("POST", `/v1/models/${models.gemini}:generateContent`, body);
    t.equal(res.status, 400, `${path}: ${res.text}`);
    t.equal(field(res.body, "error", "status"), "INVALID_ARGUMENT");
    t.equal(field(res.body, "error", "code"), 400);
    t.ok(str(res.body, "error", "message").includes(path), `the message names ${path}: ${str(res.body, "error", "message")}`);
  }
  const one = await h.call("POST", `/v1/models/${models.gemini}:generateContent`, { ...hello, generationConfig: { candidateCount: 1 } });
  t.equal(one.status, 200, "candidateCount 1 is served");
  t.equal(h.providerCalls() - calls, 1, "only the served call reached a provider");
});

t.test("a field Gemini's API does not have is refused by name", async (t) => {
  for (const [body, name] of [
    [{ ...hello, temperature: 1 }, "temperature"],
    [{ ...hello, generationConfig: { maxTokens: 5 } }, "maxTokens"],
    [{ contents: [{ role: "user", parts: [{ text: "x", image: "y" }] }] }, "image"],
  ] as const) {
    const res = await h.call("POST", `/v1/models/${models.gemini}:generateContent`, body);
    t.equal(res.status, 400, res.text);
    t.match(res.body, { error: { code: 400, status: "INVALID_ARGUMENT", message: new RegExp(`unknown field\\(s\\): ${name}`) } });
  }
});

t.test("errors in Google's shape", async (t) => {
  const none = await h.call("POST", `/v1/models/${models.gemini}:generateContent`, hello, {});
  t.equal(none.status, 401);
  t.match(none.body, { error: { code: 401, status: "UNAUTHENTICATED", message: /x-goog-api-key.*\?key=/ } });
  const unknown = await h.call("POST", "/v1/models/no-such-model:generateContent", hello);
  t.equal(unknown.status, 404);
  t.match(unknown.body, { error: { code: 404, status: "NOT_FOUND", message: /models\/no-such-model/ } });
  const method = await h.call("POST", `/v1/models/${models.gemini}:predict`, hello);
  t.match(method.body, { error: { code: 404, status: "NOT_FOUND", message: /method predict/ } });
  const model = await h.call("GET", "/v1beta/models/no-such-model");
  t.match(model.body, { error: { code: 404, status: "NOT_FOUND" } });
  const wrongKind = await h.call("POST", `/v1/models/${embeddingModel}:generateContent`, hello);
  t.match(wrongKind.body, { error: { code: 400, status: "INVALID_ARGUMENT" } }, "an embedding model cannot generate");

  const key = await h.request("POST", `/v1/environments/${h.productionEnvId}/api-keys`, { token: h.session, body: { name: "images", live: true, scopes: ["images"] } });
  const imagesOnly = str(key.body, "key");
  const scoped = await h.call("POST", `/v1/models/${models.gemini}:generateContent`, hello, { "x-goog-api-key": imagesOnly });
  t.equal(scoped.status, 403, scoped.text);
  t.match(scoped.body, { error: { code: 403, status: "PERMISSION_DENIED", message: /"chat"/ } });
  const embedScoped = await h.call("POST", `/v1/models/${embeddingModel}:embedContent`, { content: { parts: [{ text: "x" }] } }, { "x-goog-api-key": imagesOnly });
  t.match(embedScoped.body, { error: { code: 403, message: /"embeddings"/ } }, "embedding needs the embeddings scope");
  const chatKey = await h.request("POST", `/v1/environments/${h.productionEnvId}/api-keys`, { token: h.session, body: { name: "chat", live: true, scopes: ["chat"] } });
  const chatOnly = str(chatKey.body, "key");
  t.equal((await h.call("POST", `/v1/models/${models.gemini}:countTokens`, hello, { "x-goog-api-key": chatOnly })).status, 200, "a chat key counts tokens");
  t.equal((await h.call("POST", `/v1/models/${embeddingModel}:embedContent`, { content: { parts: [{ text: "x" }] } }, { "x-goog-api-key": chatOnly })).status, 403, "but does not embed");
});

t.test("unrouted paths and wrong methods under /gemini answer in Google's shape", async (t) => {
  const missing = await h.call("POST", "/v1/tunedModels/x:generateContent", hello);
  t.equal(missing.status, 404, missing.text);
  t.match(missing.body, { error: { code: 404, status: "NOT_FOUND", message: /Unknown request URL: POST \/gemini\/v1\/tunedModels/ } });
  const method = await h.call("DELETE", `/v1/models/${models.gemini}`);
  t.equal(method.status, 405, method.text);
  t.match(method.body, { error: { code: 405, message: String, status: String } });
});

t.test("the key as x-goog-api-key, ?key= or Bearer; two different ones refused", async (t) => {
  const path = `/gemini/v1/models/${models.gemini}:countTokens`;
  const ok = async (url: string, headers: Record<string, string>) => (await h.request("POST", url, { body: hello, headers })).status;
  t.equal(await ok(path, { "x-goog-api-key": h.liveKey }), 200, "x-goog-api-key");
  t.equal(await ok(`${path}?key=${h.liveKey}`, {}), 200, "?key=");
  t.equal(await ok(path, { authorization: `Bearer ${h.liveKey}` }), 200, "Bearer");
  t.equal(await ok(`${path}?key=${h.liveKey}`, { "x-goog-api-key": h.liveKey }), 200, "the same key twice agrees");
  const other = await h.request("POST", `${path}?key=tr_live_notthesamekey`, { body: hello, headers: { "x-goog-api-key": h.liveKey } });
  t.equal(other.status, 401, other.text);
  t.match(other.body, { error: { status: "UNAUTHENTICATED", message: /carry different credentials/ } });
  const twice = await h.request("POST", `${path}?key=${h.liveKey}&key=${h.liveKey}`, { body: hello });
  t.equal(twice.status, 400, twice.text);
  t.match(twice.body, { error: { status: "INVALID_ARGUMENT", message: /more than one key query parameter/ } });
  t.equal((await h.request("GET", `/openai/v1/models?key=${h.liveKey}`)).status, 401, "?key= is a credential on /gemini only");

  const headers = [`x-goog-api-key: ${h.liveKey}`, `x-goog-api-key: ${h.liveKey}`];
  const res = await raw(h.port, `GET /gemini/v1/models HTTP/1.1\r\nhost: x\r\n${headers.map((x) => `${x}\r\n`).join("")}\r\n`);
  const answer = parseResponse(res.text);
  t.equal(answer.status, 400, res.text.slice(0, 200));
  t.match(JSON.parse(answer.body), { error: { status: "INVALID_ARGUMENT", message: /more than one x-goog-api-key header/ } }, "in Google's shape");
});

t.test("a ?key= credential never reaches the request log", async (t) => {
  const secret = h.liveKey;
  const res = await h.request("POST", `/gemini/v1beta/models/${models.gemini}:countTokens?key=${secret}`, { body: hello, headers: { "x-request-id": "gemini-key-log" } });
  t.equal(res.status, 200);
  let line: Record<string, unknown> | undefined;
  for (let i = 0; i < 50 && !line; i++) {
    line = h.logLines().find((l) => l["msg"] === "request" && l["request_id"] === "gemini-key-log");
    if (!line) await new Promise((r) => setTimeout(r, 10));
  }
  t.equal(line?.["route"], "/gemini/v1beta/models/:model");
  t.equal(line?.["query"], "key=[redacted]");
  t.notOk(h.logLines().some((l) => JSON.stringify(l).includes(secret)), "the key appears in no log line");
});

t.test("a function call round trip, plain and streamed", async (t) => {
  const tools = [{ functionDeclarations: [{ name: "get_weather", description: "weather", parameters: { type: "OBJECT", properties: { input: { type: "STRING" } } } }] }];
  const ask = { contents: [{ role: "user", parts: [{ text: "What is the weather in Paris?" }] }], tools };
  for (const model of Object.values(models)) {
    const first = await h.call("POST", `/v1/models/${model}:generateContent`, ask);
    t.equal(first.status, 200, first.text);
    const parts = field(first.body, "candidates", 0, "content", "parts") as { functionCall?: unknown }[];
    const call = parts.find((p) => p.functionCall !== undefined)?.functionCall;
    t.match(call, { name: "get_weather", args: { input: "What is the weather in Paris?" } }, model);
    // As the SDKs send it back: the model turn as answered, a functionResponse without an id.
    const second = await h.call("POST", `/v1/models/${model}:generateContent`, {
      tools,
      contents: [...ask.contents, field(first.body, "candidates", 0, "content"), { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { result: "sunny, 24 °C" } } }] }],
    });
    t.equal(second.status, 200, second.text);
    t.match(field(second.body, "candidates", 0, "content", "parts", 0, "text"), /sunny, 24 °C/, `${model}: answered from the function's response`);
    const streamed = await h.call("POST", `/v1beta/models/${model}:streamGenerateContent?alt=sse`, ask);
    t.match(streamed.text, /"functionCall":\{"id":"[^"]+","name":"get_weather","args":\{"input":"What is the weather in Paris\?"/, `${model}: streamed as a functionCall part`);
  }
  const orphan = await h.call("POST", `/v1/models/${models.gemini}:generateContent`, { tools, contents: [{ role: "user", parts: [{ functionResponse: { name: "get_weather", response: {} } }] }] });
  t.match(orphan.body, { error: { code: 400, message: /body\.contents\.0\.parts\.0\.functionResponse/ } }, "a response to no call is refused by name");
});

t.test("embedContent, batchEmbedContents and countTokens", async (t) => {
  const one = await h.call("POST", `/v1/models/${embeddingModel}:embedContent`, { content: { parts: [{ text: "hello" }] }, outputDimensionality: 256 });
  t.equal(one.status, 200, one.text.slice(0, 200));
  t.equal((field(one.body, "embedding", "values") as number[]).length, 256, "outputDimensionality became the dimensions");
  const batch = await h.call("POST", `/v1beta/models/${embeddingModel}:batchEmbedContents`, { requests: ["a", "b", "c"].map((text) => ({ model: `models/${embeddingModel}`, content: { parts: [{ text }] } })) });
  t.equal(batch.status, 200, batch.text.slice(0, 200));
  t.equal((field(batch.body, "embeddings") as unknown[]).length, 3);
  const notEmbedding = await h.call("POST", `/v1/models/${models.gemini}:embedContent`, { content: { parts: [{ text: "x" }] } });
  t.equal(notEmbedding.status, 400, "a chat model does not embed");
  const count = await h.call("POST", `/v1/models/${models.anthropic}:countTokens`, hello);
  t.equal(count.status, 200);
  t.ok(Number(field(count.body, "totalTokens")) > 0);
  const longer = await h.call("POST", `/v1/models/${models.anthropic}:countTokens`, { generateContentRequest: { contents: [{ role: "user", parts: [{ text: "hello there, a much longer question with many more words" }] }] } });
  t.ok(Number(field(longer.body, "totalTokens")) > Number(field(count.body, "totalTokens")), "a longer request counts more");
});

t.test("GET models lists every text and embedding model with the methods served", async (t) => {
  const res = await h.call("GET", "/v1beta/models");
  t.equal(res.status, 200);
  const list = field(res.body, "models") as { name: string; supportedGenerationMethods: string[] }[];
  for (const model of Object.values(models)) t.match(list.find((m) => m.name === `models/${model}`), { supportedGenerationMethods: ["generateContent", "streamGenerateContent", "countTokens"] }, model);
  t.match(list.find((m) => m.name === `models/${embeddingModel}`), { supportedGenerationMethods: ["embedContent", "batchEmbedContents"] });
  t.notOk(list.some((m) => m.name === "models/tts-1"), "no speech model");
  const one = await h.call("GET", `/v1/models/${models.anthropic}`);
  t.match(one.body, { name: `models/${models.anthropic}`, baseModelId: models.anthropic });
});

t.test("the OpenAPI document lists the mount's routes under their own tag", async (t) => {
  const doc = (await h.request("GET", "/v1/openapi.json")).body as { paths: Record<string, Record<string, { tags?: string[] }>> };
  for (const version of ["v1", "v1beta"]) {
    t.same(doc.paths[`/gemini/${version}/models/{model}`]?.["post"]?.tags, ["Gemini-compatible"], `${version} POST models/{model}`);
    t.same(doc.paths[`/gemini/${version}/models`]?.["get"]?.tags, ["Gemini-compatible"], `${version} GET models`);
    t.same(doc.paths[`/gemini/${version}/models/{model}`]?.["get"]?.tags, ["Gemini-compatible"], `${version} GET models/{model}`);
  }
});

t.test("a project past its hard budget is refused before any provider call, as Google's RESOURCE_EXHAUSTED", async (t) => {
  const broke = await projectWithLiveKey(h, h.session, h.orgId, "gemini-broke");
  const put = await h.request("PUT", `/v1/projects/${broke.projectId}/budget`, { token: h.session, body: { monthly_limit_usd: 0.000001, hard_limit: true } });
  t.equal(put.status, 200, put.text);
  const headers = { "x-goog-api-key": broke.liveKey };
  t.equal((await h.call("POST", `/v1/models/${models.gemini}:generateContent`, hello, headers)).status, 200, "the first call is admitted (nothing spent yet)");
  const calls = h.providerCalls();
  const refused = await h.call("POST", `/v1/models/${models.gemini}:generateContent`, hello, headers);
  t.equal(refused.status, 429, refused.text);
  t.match(refused.body, { error: { code: 429, status: "RESOURCE_EXHAUSTED" } });
  const embedRefused = await h.call("POST", `/v1/models/${embeddingModel}:embedContent`, { content: { parts: [{ text: "x" }] } }, headers);
  t.equal(embedRefused.status, 429, "embeddings are reserved against the budget too");
  t.equal(h.providerCalls(), calls, "no provider was called");
});
