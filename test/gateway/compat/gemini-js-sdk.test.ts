// The official @google/genai SDK, unmodified but for apiKey and
// httpOptions.baseUrl = <troupe>/gemini, against an embedded Troupe over
// real sockets, the provider fakes behind it: generateContent, the stream,
// a function call round trip, embedContent and countTokens, each on a
// Gemini, a Claude and a GPT model (embeddings on an embedding model), and
// a bad key raised as the SDK's ApiError with Google's status.
import { ApiError, GoogleGenAI, type Content } from "@google/genai";
import t from "tap";
import { embeddingModel, models, startGeminiHarness } from "./gemini-harness.ts";

t.setTimeout(120_000);
const h = await startGeminiHarness();
t.teardown(() => h.stop());

const client = (apiKey = h.liveKey, apiVersion?: string) => new GoogleGenAI({ apiKey, httpOptions: apiVersion ? { baseUrl: `${h.url}/gemini`, apiVersion } : { baseUrl: `${h.url}/gemini` } });
const weather = { name: "get_weather", description: "The weather in a city", parametersJsonSchema: { type: "object", properties: { input: { type: "string" } }, required: ["input"] } };

for (const [provider, model] of Object.entries(models)) {
  t.test(`${provider} (${model})`, async (t) => {
    const ai = client();
    const plain = await ai.models.generateContent({ model, contents: "hello there" });
    t.equal(plain.text, "Echo: hello there");
    t.equal(plain.modelVersion, model);
    t.equal(plain.candidates?.[0]?.finishReason, "STOP");
    t.ok((plain.usageMetadata?.candidatesTokenCount ?? 0) > 0, "usage counted");

    const fragments: string[] = [];
    for await (const chunk of await ai.models.generateContentStream({ model, contents: "hello stream" })) if (chunk.text) fragments.push(chunk.text);
    t.ok(fragments.length > 1, `several chunks: ${JSON.stringify(fragments)}`);
    t.equal(fragments.join(""), "Echo: hello stream");

    const config = { tools: [{ functionDeclarations: [weather] }] };
    const ask: Content = { role: "user", parts: [{ text: "What is the weather in Paris?" }] };
    const first = await ai.models.generateContent({ model, contents: [ask], config });
    const call = first.functionCalls?.[0];
    t.match(call, { name: "get_weather", args: { input: "What is the weather in Paris?" } }, "the SDK read the functionCall part");
    const modelTurn = first.candidates?.[0]?.content;
    if (!call || !modelTurn) throw new Error("no function call");
    const answer = await ai.models.generateContent({
      model,
      config,
      contents: [ask, modelTurn, { role: "user", parts: [{ functionResponse: { id: call.id, name: "get_weather", response: { result: "sunny, 24 °C" } } }] }],
    });
    t.match(answer.text, /sunny, 24 °C/, "answered from the function's response");

    const count = await ai.models.countTokens({ model, contents: "hello there" });
    t.ok((count.totalTokens ?? 0) > 0, `countTokens: ${count.totalTokens}`);
  });
}

t.test("embedContent, one text and several", async (t) => {
  const ai = client();
  const one = await ai.models.embedContent({ model: embeddingModel, contents: "hello" });
  t.equal(one.embeddings?.length, 1);
  t.equal(one.embeddings?.[0]?.values?.length, 1536, "the model's own dimensions");
  const several = await ai.models.embedContent({ model: embeddingModel, contents: ["a", "b", "c"], config: { outputDimensionality: 64 } });
  t.same(several.embeddings?.map((e) => e.values?.length), [64, 64, 64], "outputDimensionality sent on");
});

t.test("v1beta as asked, the model list, and errors as the SDK's ApiError", async (t) => {
  const beta = await client(h.liveKey, "v1beta").models.generateContent({ model: models.gemini, contents: "hello beta" });
  t.equal(beta.text, "Echo: hello beta");
  const listed: string[] = [];
  for await (const m of await client().models.list()) if (m.name) listed.push(m.name);
  for (const model of [...Object.values(models), embeddingModel]) t.ok(listed.includes(`models/${model}`), `${model} listed`);
  const got = await client().models.get({ model: models.anthropic });
  t.equal(got.name, `models/${models.anthropic}`);

  const failure = async (call: Promise<unknown>): Promise<ApiError> => {
    try {
      await call;
    } catch (error) {
      if (error instanceof ApiError) return error;
      throw error;
    }
    throw new Error("the call did not fail");
  };
  const bad = await failure(client("tr_live_not-a-key").models.generateContent({ model: models.gemini, contents: "x" }));
  t.equal(bad.status, 401);
  t.match(bad.message, /UNAUTHENTICATED/);
  t.equal((await failure(client().models.generateContent({ model: "no-such-model", contents: "x" }))).status, 404);
  const refused = await failure(client().models.generateContent({ model: models.gemini, contents: "x", config: { candidateCount: 2 } }));
  t.equal(refused.status, 400);
  t.match(refused.message, /generationConfig\.candidateCount/);
});
