// The exact cache on the /gemini mount over real sockets (the Gemini
// harness: an embedded Troupe and the provider fakes): generateContent is
// stored once, then answered from the cache by generateContent and by
// streamGenerateContent in both of Google's stream forms (a JSON array of
// chunks, and SSE with alt=sse), chunked like a live stream, with no second
// provider call.
import t from "tap";
import { eventually, projectWithLiveKey } from "../../support/billing.ts";
import { request } from "../../support/troupe.ts";
import { embeddingModel, models, startGeminiHarness } from "../compat/gemini-harness.ts";

t.setTimeout(120_000);
const h = await startGeminiHarness();
t.teardown(() => h.stop());
const project = await projectWithLiveKey(h, h.session, h.orgId, "gemini-cache");
const on = await h.request("PATCH", `/v1/projects/${project.projectId}/cache`, { token: h.session, body: { enabled: true } });
if (on.status !== 200) throw new Error(`cache settings: ${on.status} ${on.text}`);

const question = { contents: [{ role: "user", parts: [{ text: "Name a prime number above ten." }] }] };
const call = (method: string) => request(h.url, "POST", `/gemini/v1beta/models/${models.gemini}:${method}`, { body: question, headers: { "x-goog-api-key": project.liveKey } });
type Chunk = { candidates: { content: { parts: { text?: string }[] }; finishReason?: string }[]; usageMetadata?: { totalTokenCount?: number } };
const textOf = (chunk: Chunk | undefined) => chunk?.candidates[0]?.content.parts.map((p) => p.text ?? "").join("") ?? "";

const before = h.providerCalls();
const miss = await call("generateContent");
const stored = textOf(JSON.parse(miss.text) as Chunk);

t.test("generateContent is stored on a miss and answered from the cache after", async (t) => {
  t.equal(miss.status, 200, miss.text.slice(0, 300));
  t.equal(miss.headers.get("troupe-cache"), "miss");
  t.equal(miss.headers.get("troupe-cache-match"), null, "a miss names no match");
  t.ok(stored.length > 0, `the answer: ${stored}`);
  const hit = await eventually(() => call("generateContent"), (r) => r.headers.get("troupe-cache") === "hit");
  t.equal(hit.headers.get("troupe-cache"), "hit");
  t.equal(hit.headers.get("troupe-cache-match"), "exact", "generateContent hit");
  t.equal(textOf(JSON.parse(hit.text) as Chunk), stored, "the same text");
  t.match(JSON.parse(hit.text), { candidates: [{ finishReason: "STOP" }], usageMetadata: { totalTokenCount: Number } });
});

t.test("streamGenerateContent (Google's JSON array) replays the stored answer chunk by chunk", async (t) => {
  const res = await call("streamGenerateContent");
  t.equal(res.status, 200, res.text.slice(0, 300));
  t.equal(res.headers.get("troupe-cache"), "hit");
  t.equal(res.headers.get("troupe-cache-match"), "exact", "streamGenerateContent (JSON array) hit");
  t.match(res.headers.get("content-type"), /^application\/json/);
  const chunks = JSON.parse(res.text) as Chunk[];
  t.ok(chunks.length > 1, `several chunks (${chunks.length})`);
  t.equal(chunks.map(textOf).join(""), stored, "the stored text, chunk by chunk");
  t.match(chunks.at(-1), { candidates: [{ finishReason: "STOP" }], usageMetadata: { totalTokenCount: Number } }, "the last chunk finishes, with the usage");
});

t.test("streamGenerateContent?alt=sse replays it as SSE", async (t) => {
  const res = await request(h.url, "POST", `/gemini/v1beta/models/${models.gemini}:streamGenerateContent?alt=sse`, { body: question, headers: { "x-goog-api-key": project.liveKey } });
  t.equal(res.status, 200, res.text.slice(0, 300));
  t.equal(res.headers.get("troupe-cache"), "hit");
  t.equal(res.headers.get("troupe-cache-match"), "exact", "streamGenerateContent?alt=sse hit");
  t.match(res.headers.get("content-type"), /^text\/event-stream/);
  const chunks = res.text
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => JSON.parse(l.slice(6)) as Chunk);
  t.ok(chunks.length > 1, `several events (${chunks.length})`);
  t.equal(chunks.map(textOf).join(""), stored);
  t.equal(h.providerCalls() - before, 1, "one provider call in all: the first miss");
});

t.test("embedContent is cached too, and says the match was exact", async (t) => {
  const embed = () => request(h.url, "POST", `/gemini/v1beta/models/${embeddingModel}:embedContent`, { body: { content: { parts: [{ text: "cache this vector" }] } }, headers: { "x-goog-api-key": project.liveKey } });
  const first = await embed();
  t.equal(first.status, 200, first.text.slice(0, 300));
  t.equal(first.headers.get("troupe-cache"), "miss");
  t.equal(first.headers.get("troupe-cache-match"), null);
  const again = await eventually(embed, (r) => r.headers.get("troupe-cache") === "hit");
  t.equal(again.headers.get("troupe-cache-match"), "exact", "embedContent hit");
  t.same(JSON.parse(again.text), JSON.parse(first.text), "the same vector");
});
