// POST /v1/embeddings end to end: simulated, OpenAI and Cohere wire formats, routing, validation, usage.
import t from "tap";
import { field } from "../../support/troupe.ts";
import { startAiHarness } from "./ai-harness.ts";

const h = await startAiHarness();
t.teardown(() => h.stop());
const post = (body: unknown) => h.troupe.request("POST", "/v1/embeddings", { token: h.key, body });

t.test("each provider answers in the spec's shape", async (t) => {
  for (const [model, provider, dims] of [
    ["simulated-embed", "simulated", 256],
    ["text-embedding-3-small", "openai", 1536],
    ["embed-v4.0", "cohere", 1536],
  ] as const) {
    const r = await post({ model, routing_strategy: "manual", input: ["first text", "second text"] });
    t.equal(r.status, 200, r.text);
    t.match(r.body, { model, provider, dimensions: dims });
    const e = field(r.body, "embeddings") as number[][];
    t.equal(e.length, 2);
    t.equal(e[0]!.length, dims);
  }
  t.equal((h.fakes.cohere.requests.at(-1)!.body as { input_type: string }).input_type, "search_document");
});

t.test("a single string, dimensions, usage", async (t) => {
  const before = h.usage.length;
  const r = await post({ model: "text-embedding-3-small", input: "hello", dimensions: 64 });
  t.equal(r.status, 200);
  t.equal(field(r.body, "dimensions"), 64);
  t.match(h.usage.slice(before), [{ category: "embeddings", model: "text-embedding-3-small", provider: "openai", input_tokens: 1 }]);
});

t.test("auto with model null picks a real provider; fallback on failure", async (t) => {
  const r = await post({ input: ["x"] });
  t.equal(field(r.body, "model"), "text-embedding-3-small");
  h.fakes.openai.faults.queue.push({ kind: "status", status: 500 });
  const fb = await post({ model: "text-embedding-3-small", input: ["x"] });
  t.equal(fb.status, 200);
  t.equal(field(fb.body, "provider"), "cohere", "same tier on another provider");
});

t.test("validation", async (t) => {
  for (const body of [{ input: [] }, { input: [""] }, {}, { input: ["x"], model: "gpt-4.1-mini" }, { input: ["x"], model: "embed-english-v3.0", dimensions: 64 }, { input: ["x"], extra: 1 }]) {
    const r = await post(body);
    t.equal(r.status, 400, JSON.stringify(body));
  }
});
