// GET /v1/models end to end: categories, availability, any key whatever its scopes.
import t from "tap";
import { field } from "../../support/troupe.ts";
import { startAiHarness } from "./ai-harness.ts";

const h = await startAiHarness();
t.teardown(() => h.stop());

type Listing = { id: string; provider: string; category: string; tier: string; available: boolean; capabilities: Record<string, unknown>; pricing: Record<string, unknown> };

t.test("lists the catalogue with availability; filters by category", async (t) => {
  const all = await h.troupe.request("GET", "/v1/models", { token: h.key });
  t.equal(all.status, 200);
  const data = field(all.body, "data") as Listing[];
  t.ok(data.length > 10);
  for (const m of data) t.match(m, { id: String, provider: String, category: String, tier: /^(small|medium|large)$/, available: Boolean, capabilities: Object, pricing: { unit: String } });
  t.ok(data.find((m) => m.id === "local/llama-3.1-8b")?.available, "openai-compatible endpoint models listed");
  const text = field((await h.troupe.request("GET", "/v1/models?category=text", { token: h.key })).body, "data") as Listing[];
  t.ok(text.every((m) => m.category === "text"));
  t.ok(text.some((m) => m.id === "claude-haiku-4-5" && m.available));
  const emb = field((await h.troupe.request("GET", "/v1/models?category=embedding", { token: h.key })).body, "data") as Listing[];
  t.same(emb.map((m) => m.id).sort(), ["azure/text-embedding-3-small", "embed-english-v3.0", "embed-v4.0", "mistral-embed", "simulated-embed", "text-embedding-3-large", "text-embedding-3-small"]);
  const image = field((await h.troupe.request("GET", "/v1/models?category=image", { token: h.key })).body, "data") as Listing[];
  t.same(image.map((m) => m.id), ["gpt-image-1", "dall-e-3", "stable-image-core", "flux-pro-1.1", "simulated-image"], "image models with their sizes and n");
  t.same(image.find((m) => m.id === "dall-e-3")?.capabilities, { sizes: ["1024x1024", "1792x1024", "1024x1792"], n_max: 4, images_per_call: 1 });
  const videoModels = field((await h.troupe.request("GET", "/v1/models?category=video", { token: h.key })).body, "data") as Listing[];
  t.same(videoModels.map((m) => [m.id, m.provider, m.available]), [["gen4_turbo", "runway", false], ["ray-2", "luma", false], ["simulated-video", "simulated", true]], "video models; no Runway/Luma key here");
  t.same(videoModels.find((m) => m.id === "ray-2")?.capabilities, { durations: [5, 9], image_input: "optional" });
  t.same(videoModels.find((m) => m.id === "gen4_turbo")?.pricing, { unit: "second", usd_per_unit: 0.05 });
  const bad = await h.troupe.request("GET", "/v1/models?category=smell", { token: h.key });
  t.equal(bad.status, 400);
  const empty = await h.troupe.request("GET", "/v1/models?category=", { token: h.key });
  t.equal(empty.status, 200, `an empty category is no filter: ${empty.text.slice(0, 200)}`);
  t.same(field(empty.body, "data"), data, "the same list as without the parameter");
});

t.test("category: a key scope's spelling names its category; a bad one is told the valid values", async (t) => {
  const ids = async (category: string) => {
    const r = await h.troupe.request("GET", `/v1/models?category=${category}`, { token: h.key });
    t.equal(r.status, 200, `${category}: ${r.text.slice(0, 200)}`);
    return (field(r.body, "data") as Listing[]).map((m) => `${m.id} ${m.category}`);
  };
  for (const [scope, category] of [
    ["images", "image"],
    ["embeddings", "embedding"],
    ["chat", "text"],
  ] as const) {
    t.same(await ids(scope), await ids(category), `${scope} lists the ${category} models`);
  }
  const bad = await h.troupe.request("GET", "/v1/models?category=smell", { token: h.key });
  t.equal(bad.status, 400);
  t.match(field(bad.body, "error", "details"), [
    { path: "query.category", message: /"smell" is not a category; categories: text, image, audio, video, embedding, vision, translation .*chat for text, images for image, embeddings for embedding/ },
  ]);
  const agents = await h.troupe.request("GET", "/v1/models?category=agents", { token: h.key });
  t.equal(agents.status, 400, "agents names no category");
  t.match(String(field(agents.body, "error", "message")), /agents is a key scope, not a category: agent turns run on text models \(category=text\)/);
});

t.test("an open breaker shows as unavailable", async (t) => {
  h.router.healthOf("anthropic").breaker.isolate();
  const text = field((await h.troupe.request("GET", "/v1/models?category=text", { token: h.key })).body, "data") as Listing[];
  t.equal(text.find((m) => m.id === "claude-haiku-4-5")?.available, false);
  t.equal(text.find((m) => m.id === "gpt-4.1-mini")?.available, true);
});

t.test("needs a credential", async (t) => {
  const r = await h.troupe.request("GET", "/v1/models");
  t.equal(r.status, 401);
});
