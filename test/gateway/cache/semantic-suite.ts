// The semantic cache's shared suite, run on each vector index backend
// (semantic.test.ts: embedded; semantic-elasticsearch.test.ts), with a real
// data store and the simulated provider's embedding (what the gateway's tests
// route to): what hits, what never does (another conversation, a tool
// message, another organization or environment), what is never stored
// (tool-call answers), and that forgetting, a project's clear and
// organization deletion take the vectors out of the index (searched
// afterwards, not just missed).
import type { Test } from "tap";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Clock } from "../../../core/clock.ts";
import type { ChatRequest } from "../../../providers/chat-request.ts";
import type { ChatResult } from "../../../providers/types.ts";
import { simulatedEmbeddingDimensions, simulatedVector } from "../../../providers/simulated/embed.ts";
import { EmbeddedDataStore } from "../../../tenancy/embedded-data-store.ts";
import type { VectorIndex } from "../../../vectors/vector-index.ts";
import type { KeyOwner } from "../../../gateway/cache/cache-key.ts";
import { SIMULATED_EMBED_THRESHOLD } from "../../../gateway/cache/semantic-defaults.ts";
import { SemanticCache, vectorScope, type SemanticProbe, type SemanticSettings } from "../../../gateway/cache/semantic.ts";

const MODEL = "simulated-embed";
const settings: SemanticSettings = { threshold: SIMULATED_EMBED_THRESHOLD, embeddingModel: MODEL };
let offsetMs = 0;
const clock: Clock = { now: () => Date.UTC(2030, 0, 15, 12) + offsetMs };
const owner = (organization_id = "org-a", environment_id = "env-1", project_id = "proj-1"): KeyOwner => ({ organization_id, project_id, environment_id, live: false });
const ask = (text: string, earlier: ChatRequest["messages"] = [], extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: "gpt-4.1-mini",
  messages: [{ role: "system", content: "Answer briefly." }, ...earlier, { role: "user", content: text }],
  ...extra,
});
const answer = (content: string, tool_calls: ChatResult["tool_calls"] = null) => ({
  kind: "chat" as const,
  result: { content, finish_reason: tool_calls ? "tool_calls" : "stop", tool_calls, input_tokens: 5, output_tokens: 3, model: "gpt-4.1-mini", provider: "openai" } satisfies ChatResult,
});

/** Makes an open, empty index of the simulated model's shape on one backend; closing and removing it is the harness's. */
export interface SemanticSuiteHarness {
  openIndex(t: Test, shape: { model: string; dimensions: number }): Promise<VectorIndex>;
}

async function setup(t: Test, harness: SemanticSuiteHarness) {
  const dir = await mkdtemp(join(tmpdir(), "troupe-semantic-"));
  const index = await harness.openIndex(t, { model: MODEL, dimensions: simulatedEmbeddingDimensions });
  const store = new EmbeddedDataStore(dir, clock);
  const embedded: string[] = [];
  const opened: string[] = [];
  const cache = new SemanticCache({
    store,
    clock,
    openIndex: async (model) => {
      opened.push(model);
      if (model !== MODEL) throw new Error(`no index for ${model}`);
      return index;
    },
    embed: async (model, text) => {
      embedded.push(text);
      return { vector: simulatedVector(text), usage: { model, provider: "simulated", input_tokens: text.split(" ").length } };
    },
  });
  // The exact cache's entries, as far as the semantic cache can tell.
  const entries = new Set<string>();
  t.teardown(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  const lookup = (o: KeyOwner, req: ChatRequest) => cache.lookup(o, req, "text", settings, { entryExists: async (key) => entries.has(key) });
  /** A miss whose answer the exact cache stored under `key`, remembered semantically. */
  const storeMiss = async (o: KeyOwner, req: ChatRequest, key: string, a = answer("Paris.")) => {
    const probe = await lookup(o, req);
    if (!probe.eligible || probe.hit) throw new Error(`expected an eligible miss, got ${JSON.stringify(probe)}`);
    entries.add(key);
    return cache.remember(probe, key, a);
  };
  return { cache, index, store, embedded, opened, entries, lookup, storeMiss };
}

const hitOf = (probe: SemanticProbe) => (probe.eligible ? probe.hit : undefined);
/** Every vector of a scope that is still searchable in one context partition, by a query equal to the stored question. */
async function searchable(index: VectorIndex, o: KeyOwner, text: string): Promise<number> {
  const results = await index.search(vectorScope(o), simulatedVector(text), 100);
  return results.filter((r) => r.metadata["kind"] !== "sc1:removed").length;
}

/** The semantic cache's behaviour, the same on every vector index backend. */
export async function semanticCacheSuite(t: Test, harness: SemanticSuiteHarness): Promise<void> {
  t.test("a paraphrase in the same context hits, naming the model; a question sharing most words misses", async (t) => {
    const { lookup, storeMiss, embedded } = await setup(t, harness);
    const billed: number[] = [];
    t.equal(await storeMiss(owner(), ask("What is the capital of France?"), "key-france"), true);
    const hit = hitOf(await lookup(owner(), ask("what is the capital of france")));
    t.match(hit, { key: "key-france", embeddingModel: MODEL });
    t.ok(hit && hit.similarity >= SIMULATED_EMBED_THRESHOLD && hit.similarity <= 1 + 1e-9);
    t.equal(hitOf(await lookup(owner(), ask("What is the capital of Germany?"))), undefined, "another entity, five words of six shared: a miss");
    t.equal(embedded.length, 3, "each lookup embeds the last user message once (store reused the miss's vector)");
    // What a lookup embeds is billed: the caller is told.
    const { cache } = await setup(t, harness);
    await cache.lookup(owner(), ask("hello there"), "text", settings, { entryExists: async () => true, onUsage: (u) => billed.push(u.input_tokens) });
    t.same(billed, [2]);
  });

  t.test("the same last message in two conversations never answers across them", async (t) => {
    const { lookup, storeMiss } = await setup(t, harness);
    const convA: ChatRequest["messages"] = [{ role: "user", content: "I am planning a trip to Italy." }, { role: "assistant", content: "Lovely!" }];
    const convB: ChatRequest["messages"] = [{ role: "user", content: "I am planning a trip to Japan." }, { role: "assistant", content: "Lovely!" }];
    await storeMiss(owner(), ask("What should I pack?", convA), "key-a");
    t.equal(hitOf(await lookup(owner(), ask("What should I pack?", convB))), undefined, "other earlier turns: never a hit");
    t.equal(hitOf(await lookup(owner(), ask("What should I pack?"))), undefined, "no earlier turns: never a hit");
    t.equal(hitOf(await lookup(owner(), ask("What should I pack?", convA, { temperature: 0.2 })))?.key, undefined, "another parameter: never a hit");
    t.equal(hitOf(await lookup(owner(), ask("what should i pack", convA)))?.key, "key-a", "the same conversation: a hit");
  });

  t.test("never semantic: a tool message, an image, structured output; a tool-call answer is not stored", async (t) => {
    const { lookup, storeMiss, embedded, cache } = await setup(t, harness);
    const withTool = ask("And in Celsius?", [
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "weather", arguments: {} }] },
      { role: "tool", content: "20F", tool_call_id: "c1" },
    ]);
    t.same(await lookup(owner(), withTool), { eligible: false, reason: "tool_message" });
    t.same(await lookup(owner(), ask("Describe it.", [], {})).then((p) => p.eligible), true);
    const image = ask("Describe it.");
    image.messages[image.messages.length - 1]!.images = [{ url: "https://example.test/a.png" }];
    t.same(await lookup(owner(), image), { eligible: false, reason: "images" });
    t.same(await lookup(owner(), ask("Extract the city.", [], { response_format: { type: "json_object" } })), { eligible: false, reason: "structured_output" });
    t.equal(embedded.length, 1, "nothing embedded for what is never semantic");

    const probe = await lookup(owner(), ask("What is the weather in Paris?"));
    t.equal(await cache.remember(probe, "key-tool", answer("", [{ id: "c2", name: "weather", arguments: {} }])), false, "a tool-call answer is not stored");
    t.equal(hitOf(await lookup(owner(), ask("what is the weather in paris"))), undefined);
    t.equal(await storeMiss(owner(), ask("What is the weather in Paris?"), "key-text"), true);
  });

  t.test("another organization or environment never hits", async (t) => {
    const { lookup, storeMiss } = await setup(t, harness);
    await storeMiss(owner("org-a", "env-1"), ask("Who wrote Hamlet?"), "key-hamlet");
    t.equal(hitOf(await lookup(owner("org-b", "env-1"), ask("Who wrote Hamlet?"))), undefined, "another organization");
    t.equal(hitOf(await lookup(owner("org-a", "env-2"), ask("Who wrote Hamlet?"))), undefined, "another environment");
    t.equal(hitOf(await lookup(owner("org-a", "env-1", "proj-2"), ask("Who wrote Hamlet?"))), undefined, "another project");
    t.equal(hitOf(await lookup(owner("org-a", "env-1"), ask("who wrote hamlet")))?.key, "key-hamlet");
  });

  t.test("an entry gone from the exact cache is not served, and its vector leaves the searchable partitions", async (t) => {
    const { lookup, storeMiss, entries, index, cache } = await setup(t, harness);
    await storeMiss(owner(), ask("How tall is Everest?"), "key-everest");
    entries.delete("key-everest");
    t.equal(hitOf(await lookup(owner(), ask("how tall is everest"))), undefined, "expired without a word: a miss");
    // Within a minute of being stored the entry may just not be written yet: the vector stays.
    await new Promise((r) => setTimeout(r, 1500));
    t.equal(await searchable(index, owner(), "How tall is Everest?"), 1, "a young vector is not moved out");
    offsetMs += 61_000;
    t.equal(hitOf(await lookup(owner(), ask("how tall is everest"))), undefined);
    // Moved off the lookup's path: wait for it (Elasticsearch refreshes in about a second).
    for (let i = 0; i < 100 && (await searchable(index, owner(), "How tall is Everest?")) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    t.equal(await searchable(index, owner(), "How tall is Everest?"), 0, "the stale vector was moved out");

    await storeMiss(owner(), ask("How deep is the Mariana Trench?"), "key-trench");
    await cache.forget(owner(), "key-trench");
    t.equal(await searchable(index, owner(), "How deep is the Mariana Trench?"), 0, "forget (eviction hook) moves it out");
    t.equal(hitOf(await lookup(owner(), ask("how deep is the mariana trench"))), undefined);
  });

  t.test("a project's clear and organization deletion delete the vectors", async (t) => {
    const { storeMiss, index, cache, lookup } = await setup(t, harness);
    await storeMiss(owner("org-a", "env-1", "proj-1"), ask("What is an atom?"), "k1");
    await storeMiss(owner("org-a", "env-2", "proj-1"), ask("What is a molecule?"), "k2");
    await storeMiss(owner("org-a", "env-1", "proj-2"), ask("What is a cell?"), "k3");
    await storeMiss(owner("org-b", "env-1", "proj-9"), ask("What is an atom?"), "k4");
    t.equal(await cache.clearProject("org-a", "proj-1"), 2, "both environments' vectors of the project");
    t.equal((await index.search(vectorScope(owner("org-a", "env-1", "proj-1")), simulatedVector("What is an atom?"), 100)).length, 0, "nothing of the project is left");
    t.equal(await searchable(index, owner("org-a", "env-1", "proj-2"), "What is a cell?"), 1, "the other project keeps its vector");
    t.equal(hitOf(await lookup(owner("org-a", "env-1", "proj-2"), ask("what is a cell")))?.key, "k3");

    t.equal(await cache.deleteOrganization("org-a"), 1);
    t.equal((await index.search(vectorScope(owner("org-a", "env-1", "proj-2")), simulatedVector("What is a cell?"), 100)).length, 0);
    t.equal(await searchable(index, owner("org-b", "env-1", "proj-9"), "What is an atom?"), 1, "another organization's vectors stay");
    t.equal(await cache.deleteOrganization("org-a"), 0, "deleting again finds nothing");
    // A vector stored after a clear is registered again (and so deletable again).
    await storeMiss(owner("org-a", "env-1", "proj-1"), ask("What is a proton?"), "k5");
    t.equal(await cache.deleteOrganization("org-a"), 1);
  });
}
