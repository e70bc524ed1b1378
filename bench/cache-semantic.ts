// `npm run bench:cache-semantic`: what the semantic cache adds to a request
// after an exact miss, on an embedded index holding N entries of one
// project, all in ONE context (the worst case: single-turn questions with
// the same model and system prompt, so every lookup reads a partition of N).
// Prints the lookup's p50/p99 (embed + search + the exact-entry check) and
// the search's alone, over --queries lookups sent one after another, half of
// them paraphrases of stored questions (hits), half new questions (misses).
//
// The embedding here is the simulated model in process (microseconds); with
// a real model the lookup adds that model's embedding call (a network round
// trip to the provider) on top of these figures.
//
//   node bench/cache-semantic.ts [--n 100000] [--queries 500] [--batch 1000]
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { isoTime, systemClock } from "../core/clock.ts";
import type { ChatRequest } from "../providers/chat-request.ts";
import { simulatedEmbeddingDimensions, simulatedVector } from "../providers/simulated/embed.ts";
import { EmbeddedDataStore } from "../tenancy/embedded-data-store.ts";
import { EmbeddedVectorIndex } from "../vectors/embedded-vector-index.ts";
import { defaultVectorLimits, type VectorRecord } from "../vectors/vector-index.ts";
import type { KeyOwner } from "../gateway/cache/cache-key.ts";
import { SemanticCache, partitionKind, recordId, vectorScope } from "../gateway/cache/semantic.ts";
import { semanticContext } from "../gateway/cache/semantic-context.ts";
import { SIMULATED_EMBED_THRESHOLD } from "../gateway/cache/semantic-defaults.ts";
import { percentile, fmt } from "../load/stats.ts";

const { values: args } = parseArgs({
  options: {
    n: { type: "string", default: "100000" },
    queries: { type: "string", default: "500" },
    batch: { type: "string", default: "1000" },
  },
});
const n = Number(args.n);
const queries = Number(args.queries);
const batch = Number(args.batch);
const MODEL = "simulated-embed";

// Questions from a small vocabulary, so stored vectors share words as real traffic does.
const subjects = ["capital", "population", "weather", "history", "currency", "language", "area", "president", "climate", "economy", "food", "music", "sport", "river", "mountain"];
const places = Array.from({ length: 400 }, (_, i) => `place${i}`);
const asks = ["What is the", "Tell me the", "Explain the", "Describe the", "Give me the"];
const question = (i: number) => `${asks[i % asks.length]} ${subjects[Math.floor(i / asks.length) % subjects.length]} of ${places[Math.floor(i / (asks.length * subjects.length)) % places.length]} in year ${Math.floor(i / 30_000) + 1990}`;
const request = (text: string): ChatRequest => ({ model: "gpt-4.1-mini", messages: [{ role: "system", content: "Answer briefly." }, { role: "user", content: text }] });

const dir = await mkdtemp(join(tmpdir(), "troupe-bench-semantic-"));
const index = new EmbeddedVectorIndex({
  directory: join(dir, "vectors"),
  model: MODEL,
  dimensions: simulatedEmbeddingDimensions,
  limits: { ...defaultVectorLimits, quotaPerOrganization: Math.max(defaultVectorLimits.quotaPerOrganization, n) },
});
await index.open();
const store = new EmbeddedDataStore(dir, systemClock);
const owner: KeyOwner = { organization_id: "org-bench", project_id: "proj-bench", environment_id: "env-bench", live: false };
const split = semanticContext(owner, request("x"), "text");
if (!split.eligible) throw new Error("the bench request is not semantically cacheable");
const kind = partitionKind(split.context.digest);

const startedMs = performance.now();
for (let from = 0; from < n; from += batch) {
  const records: VectorRecord[] = [];
  for (let i = from; i < Math.min(n, from + batch); i++) {
    const key = `key-${i}`;
    records.push({ id: recordId(owner, key), organization_id: vectorScope(owner), content: "", metadata: { kind, key }, model: MODEL, vector: simulatedVector(question(i)), created_at: isoTime(Date.now()) });
  }
  await index.add(records);
}
const addedSeconds = (performance.now() - startedMs) / 1000;
await index.graphsSettled();
const settledSeconds = (performance.now() - startedMs) / 1000;

let embedMs = 0;
const cache = new SemanticCache({
  store,
  clock: systemClock,
  openIndex: async () => index,
  embed: async (model, text) => {
    const t0 = performance.now();
    const vector = simulatedVector(text);
    embedMs += performance.now() - t0;
    return { vector, usage: { model, provider: "simulated", input_tokens: 1 } };
  },
});
const lookups: number[] = [];
const searches: number[] = [];
let hits = 0;
for (let q = 0; q < queries; q++) {
  // Even: a stored question respelled (lower case, no capital) — a hit; odd: a question never stored.
  const text = q % 2 === 0 ? question((q * 7919) % n).toLowerCase() : `How do I repair bicycle number ${q} quickly`;
  const t0 = performance.now();
  const probe = await cache.lookup(owner, request(text), "text", { threshold: SIMULATED_EMBED_THRESHOLD, embeddingModel: MODEL }, { entryExists: async () => true });
  lookups.push(performance.now() - t0);
  if (probe.eligible && probe.hit) hits++;
  const t1 = performance.now();
  await index.search(vectorScope(owner), simulatedVector(text), 4, { metadataKind: kind });
  searches.push(performance.now() - t1);
}
lookups.sort((a, b) => a - b);
searches.sort((a, b) => a - b);
console.log(`semantic cache lookup, embedded index, ${n} entries in one context (${simulatedEmbeddingDimensions} dims), ${queries} lookups`);
console.log(`  indexed in ${addedSeconds.toFixed(1)} s, graphs settled at ${settledSeconds.toFixed(1)} s`);
console.log(`  lookup (embed + search + entry check): p50 ${fmt(percentile(lookups, 50), 3)} ms  p99 ${fmt(percentile(lookups, 99), 3)} ms`);
console.log(`  search alone:                          p50 ${fmt(percentile(searches, 50), 3)} ms  p99 ${fmt(percentile(searches, 99), 3)} ms`);
console.log(`  simulated embedding: ${fmt(embedMs / queries, 3)} ms per lookup; hits ${hits}/${queries} (expected ${Math.ceil(queries / 2)})`);
await index.close();
await store.close();
await rm(dir, { recursive: true, force: true });
