// The semantic step of a cached call over the exact cache's real embedded
// store and a real embedded vector index: a semantic hit returns the exact
// entry it points at and names itself in the headers; refresh serves nothing
// but keeps the vector; bypass and semantic-off do nothing (nothing
// embedded); an expired exact entry is never served semantically; a failing
// embedding provider is a miss, logged, never the call's failure.
import t, { type Test } from "tap";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../../core/log.ts";
import type { ChatRequest } from "../../../providers/chat-request.ts";
import type { ChatResult } from "../../../providers/types.ts";
import { simulatedEmbeddingDimensions, simulatedVector } from "../../../providers/simulated/embed.ts";
import { EmbeddedDataStore } from "../../../tenancy/embedded-data-store.ts";
import { EmbeddedVectorIndex } from "../../../vectors/embedded-vector-index.ts";
import { defaultVectorLimits } from "../../../vectors/vector-index.ts";
import type { EmbeddingUsage } from "../../../vectors/org-index.ts";
import { chatCacheKey, type KeyOwner } from "../../../gateway/cache/cache-key.ts";
import { EmbeddedCacheStore } from "../../../gateway/cache/embedded-cache-store.ts";
import { SemanticCache } from "../../../gateway/cache/semantic.ts";
import { SIMULATED_EMBED_THRESHOLD } from "../../../gateway/cache/semantic-defaults.ts";
import { announceSemanticHit, semanticStep, type SemanticCallRequest, type SemanticProjectSettings } from "../../../gateway/cache/semantic-step.ts";
import type { CacheMode } from "../../../gateway/cache/types.ts";

const MODEL = "simulated-embed";
const owner: KeyOwner = { organization_id: "org-a", project_id: "proj-1", environment_id: "env-1", live: false };
const on: SemanticProjectSettings = { semantic_enabled: true, semantic_threshold: SIMULATED_EMBED_THRESHOLD };
const ask = (text: string): ChatRequest => ({ model: "gpt-4.1-mini", messages: [{ role: "user", content: text }] });
const result = (content: string): ChatResult => ({ content, finish_reason: "stop", tool_calls: null, input_tokens: 4, output_tokens: 2, model: "gpt-4.1-mini", provider: "openai" });
const call = (mode: CacheMode = "use"): SemanticCallRequest => ({ owner, mode, state: { headers: undefined } });
const until = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 100 && !(await check()); i++) await new Promise((r) => setTimeout(r, 10));
};

async function setup(t: Test, options: { failEmbedding?: boolean; quota?: number } = {}) {
  const dir = await mkdtemp(join(tmpdir(), "troupe-semantic-step-"));
  let nowMs = Date.UTC(2030, 5, 1);
  const clock = { now: () => nowMs };
  const index = new EmbeddedVectorIndex({
    directory: join(dir, "vectors"),
    model: MODEL,
    dimensions: simulatedEmbeddingDimensions,
    kernel: "js",
    ...(options.quota === undefined ? {} : { limits: { ...defaultVectorLimits, quotaPerOrganization: options.quota } }),
  });
  await index.open();
  const data = new EmbeddedDataStore(dir, clock);
  const store = new EmbeddedCacheStore(dir, { orgQuotaBytes: 1_000_000, maxEntryBytes: 100_000 }, clock);
  const embedded: string[] = [];
  const warnings: string[] = [];
  const billed: EmbeddingUsage[] = [];
  const semantic = new SemanticCache({
    store: data,
    clock,
    openIndex: async () => index,
    embed: async (model, text) => {
      embedded.push(text);
      if (options.failEmbedding) throw new Error("provider down");
      return { vector: simulatedVector(text), usage: { model, provider: "simulated", input_tokens: 3 } };
    },
  });
  const log = createLogger("warn", {}, (line) => warnings.push(line));
  const deps = { semantic, store, defaultModel: MODEL, bill: (_r: SemanticCallRequest, usage: EmbeddingUsage) => billed.push(usage), log };
  t.teardown(async () => {
    await index.close();
    await data.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  /** A miss answered and stored by the exact cache, its vector kept by the step. */
  const answered = async (text: string, content: string) => {
    const outcome = await semanticStep(deps, call(), on, ask(text), "text");
    if (!outcome || outcome.entry) throw new Error(`expected a semantic miss for ${text}`);
    const key = chatCacheKey(owner, ask(text), "text");
    await store.put(key, { scope: owner, answer: { kind: "chat", result: result(content) }, stored_ms: nowMs, expires_ms: nowMs + 60_000 });
    outcome.keep(key, { kind: "chat", result: result(content) });
    await until(async () => (await index.search("org-a/proj-1", simulatedVector(text), 1)).length > 0);
    return key;
  };
  return { deps, index, store, embedded, warnings, billed, answered, advance: (ms: number) => (nowMs += ms) };
}

t.test("a paraphrase is served the exact entry, with the semantic headers; each lookup is billed", async (t) => {
  const { deps, answered, billed } = await setup(t);
  await answered("What is the capital of France?", "Paris.");
  const request = call();
  const outcome = await semanticStep(deps, request, on, ask("what is the capital of france"), "text");
  t.equal(outcome?.entry?.answer.kind === "chat" && outcome.entry.answer.result.content, "Paris.");
  t.same(request.state.headers, [["troupe-cache-embedding-model", MODEL]], "the match is the caller's to announce, once it serves it");
  if (outcome?.entry) announceSemanticHit(request, outcome.hit);
  t.same(request.state.headers, [
    ["troupe-cache-embedding-model", MODEL],
    ["troupe-cache-match", "semantic"],
    ["troupe-cache-similarity", "1.000"],
  ]);
  t.equal(billed.length, 2, "the miss's lookup and the hit's");
  const other = call();
  t.equal((await semanticStep(deps, other, on, ask("What is the capital of Germany?"), "text"))?.entry, undefined, "a question sharing words: a miss");
  t.same(other.state.headers, [["troupe-cache-embedding-model", MODEL]], "a miss still names the model its lookup was billed for");
  const named = call();
  await semanticStep(deps, named, { ...on, semantic_embedding_model: "simulated-embed" }, ask("hello"), "text");
  t.same(named.state.headers, [["troupe-cache-embedding-model", "simulated-embed"]]);
});

t.test("refresh serves nothing; bypass and semantic off embed nothing", async (t) => {
  const { deps, answered, embedded } = await setup(t);
  await answered("Who wrote Hamlet?", "Shakespeare.");
  const refreshed = await semanticStep(deps, call("refresh"), on, ask("who wrote hamlet"), "text");
  t.ok(refreshed && refreshed.entry === undefined && "keep" in refreshed, "refresh: a miss that keeps the new vector");
  const before = embedded.length;
  t.equal(await semanticStep(deps, call("bypass"), on, ask("who wrote hamlet"), "text"), undefined);
  t.equal(await semanticStep(deps, call(), { ...on, semantic_enabled: false }, ask("who wrote hamlet"), "text"), undefined);
  t.equal(embedded.length, before, "nothing embedded");
  const tool = ask("And then?");
  tool.messages.unshift({ role: "assistant", content: "", tool_calls: [{ id: "c", name: "f", arguments: {} }] }, { role: "tool", content: "x", tool_call_id: "c" });
  t.equal(await semanticStep(deps, call(), on, tool, "text"), undefined, "a tool message: the exact cache alone");
});

t.test("an expired exact entry is never served semantically", async (t) => {
  const { deps, answered, advance } = await setup(t);
  await answered("How tall is Everest?", "8,849 m.");
  advance(61_000);
  t.equal((await semanticStep(deps, call(), on, ask("how tall is everest"), "text"))?.entry, undefined);
});

t.test("a failing embedding provider is a logged miss, not a failed call", async (t) => {
  const { deps, warnings } = await setup(t, { failEmbedding: true });
  t.equal(await semanticStep(deps, call(), on, ask("Anything?"), "text"), undefined);
  t.match(warnings.join(""), /semantic cache lookup failed; answered as a miss.*provider down/);
});

t.test("past the project's vector quota an answer is cached exactly only: the vector is refused, logged, never the call's failure", async (t) => {
  const { deps, answered, warnings, store } = await setup(t, { quota: 1 });
  await answered("What is the capital of France?", "Paris.");
  const outcome = await semanticStep(deps, call(), on, ask("Who wrote Hamlet?"), "text");
  if (!outcome || outcome.entry) throw new Error("expected a miss");
  const key = chatCacheKey(owner, ask("Who wrote Hamlet?"), "text");
  await store.put(key, { scope: owner, answer: { kind: "chat", result: result("Shakespeare.") }, stored_ms: 0, expires_ms: Number.MAX_SAFE_INTEGER });
  outcome.keep(key, { kind: "chat", result: result("Shakespeare.") });
  await until(async () => warnings.some((w) => w.includes("storing a vector failed")));
  t.match(warnings.join(""), /semantic cache: storing a vector failed.*quota/);
  t.equal((await semanticStep(deps, call(), on, ask("who wrote hamlet"), "text"))?.entry, undefined, "no semantic hit for it");
  t.equal((await store.get(owner, key))?.answer.kind, "chat", "the exact entry is there");
});
