// The official `openai` SDK against /openai/v1/embeddings (its default
// base64 encoding, which it decodes, and float) and /openai/v1/models (the
// whole catalogue, every provider's ids, and the troupe/<strategy> names).
import t from "tap";
import OpenAI from "openai";
import { startCompatHarness } from "./openai-harness.ts";

t.setTimeout(60_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client();
const lastBody = () => h.fakes.openai.requests.at(-1)?.body as { input?: string[] };

t.test("embeddings: the SDK's default (base64 on the wire) decodes to Troupe's floats", async (t) => {
  const raw = await h.troupe.request("POST", "/openai/v1/embeddings", { token: h.user.testKey, body: { model: "text-embedding-3-small", input: ["alpha", "beta"], encoding_format: "float" } });
  t.equal(raw.status, 200, raw.text);
  const floats = (raw.body as { data: { embedding: number[] }[] }).data.map((d) => d.embedding);
  const r = await client.embeddings.create({ model: "text-embedding-3-small", input: ["alpha", "beta"] });
  t.equal(r.object, "list");
  t.equal(r.model, "text-embedding-3-small");
  t.equal(r.data.length, 2);
  t.match(r.data[1], { object: "embedding", index: 1 });
  t.equal(r.data[0]!.embedding.length, 1536);
  // float32 on the wire: equal to the float answer within float32 precision.
  t.ok(r.data.every((d, i) => d.embedding.every((x, j) => Math.abs(x - floats[i]![j]!) < 1e-6)), "the base64 vectors are the float ones");
  t.match(r.usage, { prompt_tokens: Number, total_tokens: Number });
  t.ok(r.usage.prompt_tokens > 0);
  t.same(lastBody().input, ["alpha", "beta"]);
});

t.test("embeddings: the wire answer for base64 is little-endian float32", async (t) => {
  const res = await h.troupe.request("POST", "/openai/v1/embeddings", { token: h.user.testKey, body: { model: "text-embedding-3-small", input: "gamma", encoding_format: "base64" } });
  const b64 = (res.body as { data: { embedding: string }[] }).data[0]!.embedding;
  t.type(b64, "string");
  const bytes = Buffer.from(b64, "base64");
  t.equal(bytes.length, 1536 * 4);
  const float = await client.embeddings.create({ model: "text-embedding-3-small", input: "gamma", encoding_format: "float" });
  t.ok(Math.abs(bytes.readFloatLE(4) - float.data[0]!.embedding[1]!) < 1e-6);
});

t.test("embeddings: float, a string input, dimensions, another provider", async (t) => {
  const r = await client.embeddings.create({ model: "text-embedding-3-small", input: "one text", encoding_format: "float", dimensions: 256 });
  t.equal(r.data.length, 1);
  t.equal(r.data[0]!.embedding.length, 256);
  t.type(r.data[0]!.embedding[0], "number");
  const cohere = await client.embeddings.create({ model: "embed-v4.0", input: ["x"], encoding_format: "float" });
  t.equal(cohere.model, "embed-v4.0");
  t.ok(cohere.data[0]!.embedding.length > 0);
  const auto = await client.embeddings.create({ model: "troupe/auto", input: ["x"] });
  t.not(auto.model, "troupe/auto");
  const wrong = await client.embeddings.create({ model: "gpt-4.1-mini", input: "x" }).catch((e: unknown) => e);
  t.type(wrong, OpenAI.BadRequestError, "a chat model cannot embed");
  t.equal((wrong as InstanceType<typeof OpenAI.BadRequestError>).param, "model");
});

t.test("models: the whole catalogue in OpenAI's list shape", async (t) => {
  const ids: string[] = [];
  for await (const m of client.models.list()) {
    t.match(m, { id: String, object: "model", created: Number, owned_by: String });
    ids.push(m.id);
  }
  const catalogue = h.troupe.services.router.catalogue.models;
  t.equal(ids.length, catalogue.length + 3, "every catalogue model and the three routing names");
  for (const id of ["gpt-4.1-mini", "claude-haiku-4-5", "gemini-2.5-flash", "text-embedding-3-small", "tts-1", "gpt-image-1", "local/llama-3.1-8b", "troupe/auto"]) t.ok(ids.includes(id), id);
  const one = await client.models.retrieve("claude-haiku-4-5");
  t.same(one, { id: "claude-haiku-4-5", object: "model", created: 0, owned_by: "anthropic" });
  const slashed = await client.models.retrieve("local/llama-3.1-8b");
  t.equal(slashed.owned_by, "local", "an id with a slash, percent-encoded by the SDK");
});
