// The semantic cache installed, end to end (embedded stores): a whole Troupe
// over real sockets, chat at the OpenAI fake (whose request log counts
// provider calls), projects with semantic on. A respelled question is a
// semantic hit (its headers, no provider call; a stream replayed to the
// openai SDK); a question sharing words, a
// different conversation context and a request carrying a tool message are
// not; each lookup's embedding is in the caller's project's usage report
// (priced, with a real model at the fake) and the hit at 0 with cache "hit";
// a project's clear and the organization's deletion leave no vector in the
// cache's index, searched once the Troupe has stopped.
import OpenAI from "openai";
import t from "tap";
import { loadConfig } from "../../../gateway/config.ts";
import { createLogger } from "../../../core/log.ts";
import { SIMULATED_EMBED_THRESHOLD } from "../../../gateway/cache/semantic-defaults.ts";
import { semanticIndexOpener } from "../../../gateway/cache/semantic-index.ts";
import { vectorScope } from "../../../gateway/cache/semantic.ts";
import { createRouter } from "../../../providers/index.ts";
import { eventually, projectWithLiveKey, startFakeOpenAI } from "../../support/billing.ts";
import { midMonthClock } from "../../support/mid-month-clock.ts";
import { field, signup, startTestTroupe } from "../../support/troupe.ts";

const { fake, router } = await startFakeOpenAI();
const troupe = await startTestTroupe({}, { router: router(), clock: midMonthClock() });
let stopped = false;
t.teardown(async () => {
  if (!stopped) await troupe.stop();
  await fake.close();
});
const user = await signup(troupe, "semantic");
const project = await projectWithLiveKey(troupe, user.token, user.orgId, "semantic");
const chatCalls = () => fake.requests.filter((r) => r.path.endsWith("/chat/completions")).length;
const embeddingCalls = () => fake.requests.filter((r) => r.path.endsWith("/embeddings")).length;
const settingsPath = (projectId: string) => `/v1/projects/${projectId}/cache`;
const semanticOn = { enabled: true, semantic_enabled: true, semantic_threshold: SIMULATED_EMBED_THRESHOLD, semantic_embedding_model: "simulated-embed" };

type Message = { role: string; content: string; tool_call_id?: string };
const ask = (messages: Message[], key = project.liveKey) =>
  troupe.request("POST", "/v1/chat/completions", { token: key, body: { model: "gpt-4.1-mini", routing_strategy: "manual", messages, max_tokens: 200 } });
const question = (content: string, key = project.liveKey) => ask([{ role: "system", content: "Be brief." }, { role: "user", content }], key);
/** Answers and vectors are stored off the answer's path: given time before a lookup that should find them. */
const settle = () => new Promise((r) => setTimeout(r, 300));
type Answer = Awaited<ReturnType<typeof ask>>;
/**
 * Asks each respelling in turn until one is a hit; a new spelling each time,
 * so the hit can only be semantic (an earlier miss of a respelling stores an
 * answer too, under its own exact key). The provider calls its hit made are
 * counted: none.
 */
async function semanticHit(ask: (text: string) => Promise<Answer>, spellings: readonly string[]): Promise<{ hit: Answer | undefined; callsOfHit: number }> {
  for (const spelling of spellings) {
    await settle();
    const before = chatCalls();
    const answer = await ask(spelling);
    if (answer.headers.get("troupe-cache") === "hit") return { hit: answer, callsOfHit: chatCalls() - before };
  }
  return { hit: undefined, callsOfHit: -1 };
}

t.test("the embedding model is a catalogue embedding model: others are a 400 naming the field", async (t) => {
  for (const model of ["gpt-4.1-mini", "no-such-model"]) {
    const bad = await troupe.request("PATCH", settingsPath(project.projectId), { token: user.token, body: { semantic_embedding_model: model } });
    t.equal(bad.status, 400, model);
    t.match(bad.text, /semantic_embedding_model/);
  }
  const on = await troupe.request("PATCH", settingsPath(project.projectId), { token: user.token, body: semanticOn });
  t.equal(on.status, 200, on.text);
  t.same(on.body, { ...semanticOn, default_ttl_seconds: 3600, max_ttl_seconds: 604800 });
  const read = await troupe.request("GET", settingsPath(project.projectId), { token: user.token });
  t.equal(field(read.body, "semantic_embedding_model"), "simulated-embed");
});

t.test("a respelled question is a semantic hit; a question sharing words is not", async (t) => {
  const before = chatCalls();
  const first = await question("What is the capital of France?");
  t.equal(first.status, 200, first.text);
  t.equal(first.headers.get("troupe-cache"), "miss");
  t.equal(first.headers.get("troupe-cache-embedding-model"), "simulated-embed", "the lookup's model, on a miss too");
  const { hit, callsOfHit } = await semanticHit(question, ["what is the capital of france ?", "What is the capital of France?!", "what is the capital of France"]);
  if (!hit) return t.fail("no respelling was served from the cache");
  t.equal(hit.headers.get("troupe-cache-match"), "semantic");
  t.ok(Number(hit.headers.get("troupe-cache-similarity")) >= SIMULATED_EMBED_THRESHOLD, `similarity ${hit.headers.get("troupe-cache-similarity")}`);
  t.equal(hit.headers.get("troupe-cache-embedding-model"), "simulated-embed");
  t.ok(hit.headers.get("troupe-cache-age") !== null);
  // The fake echoes the question: the hit's answer is the first's (or, had the first vector been slow, an earlier respelling's).
  t.match(field(hit.body, "content"), /^Echo: what is the capital of france/i, "a stored answer to the same question");
  t.equal(callsOfHit, 0, "no provider call for the hit");

  await settle();
  const calls = chatCalls();
  const other = await question("What is the capital of Germany?");
  t.equal(other.headers.get("troupe-cache"), "miss", "another entity on the same frame is answered live");
  t.equal(other.headers.get("troupe-cache-match"), null);
  t.equal(chatCalls() - calls, 1);
  t.ok(chatCalls() - before >= 2);
});

t.test("a respelled stream is replayed from the stored answer, parsed by the openai SDK", async (t) => {
  const client = new OpenAI({ baseURL: `${troupe.url}/openai/v1`, apiKey: project.liveKey, maxRetries: 0 });
  const first = await client.chat.completions.create({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "Name the largest ocean." }], max_tokens: 200 }).withResponse();
  t.equal(first.response.headers.get("troupe-cache"), "miss");
  const stored = first.data.choices[0]?.message.content ?? "";
  for (const spelling of ["name the largest ocean", "Name the largest ocean ?", "name the largest ocean!", "NAME the largest ocean."]) {
    await settle();
    const before = chatCalls();
    const streamed = await client.chat.completions.create({ model: "gpt-4.1-mini", messages: [{ role: "user", content: spelling }], max_tokens: 200, stream: true }).withResponse();
    let text = "";
    for await (const chunk of streamed.data) text += chunk.choices[0]?.delta.content ?? "";
    if (streamed.response.headers.get("troupe-cache") !== "hit") continue;
    t.equal(streamed.response.headers.get("troupe-cache-match"), "semantic", "the SSE head says how it matched");
    t.equal(text, stored, "the stored answer, replayed as a stream");
    t.equal(chatCalls() - before, 0, "no provider call");
    return;
  }
  t.fail("no respelled stream was served from the cache");
});

t.test("never across conversation contexts, never with a tool message", async (t) => {
  await question("Who wrote Hamlet?");
  const same = await semanticHit(question, ["who wrote hamlet", "Who wrote Hamlet ?", "who wrote Hamlet?!"]);
  t.equal(same.hit?.headers.get("troupe-cache-match"), "semantic", "in the same context the respelling is served");
  const before = chatCalls();
  const otherSystem = await ask([{ role: "system", content: "Answer in French." }, { role: "user", content: "who wrote hamlet" }]);
  t.equal(otherSystem.headers.get("troupe-cache"), "miss", "another system prompt");
  const laterTurn = await ask([{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }, { role: "assistant", content: "Hello." }, { role: "user", content: "who wrote hamlet" }]);
  t.equal(laterTurn.headers.get("troupe-cache"), "miss", "a turn of another conversation");
  t.equal(chatCalls() - before, 2);

  const withTool = (content: string) =>
    troupe.request("POST", "/v1/chat/completions", {
      token: project.liveKey,
      body: {
        model: "gpt-4.1-mini",
        routing_strategy: "manual",
        max_tokens: 200,
        tools: [{ name: "lookup", parameters: { type: "object", properties: {} } }],
        messages: [
          { role: "user", content: "Look it up." },
          { role: "assistant", content: "", tool_calls: [{ id: "call_1", name: "lookup", arguments: {} }] },
          { role: "tool", tool_call_id: "call_1", content },
        ],
      },
    });
  const toolFirst = await withTool("The answer is 42.");
  t.equal(toolFirst.status, 200, toolFirst.text);
  t.equal(toolFirst.headers.get("troupe-cache"), "miss");
  t.equal(toolFirst.headers.get("troupe-cache-embedding-model"), null, "a tool message: not looked up by meaning (nothing embedded)");
  await settle();
  const toolCalls = chatCalls();
  const toolAgain = await withTool("the answer is 42");
  t.equal(toolAgain.headers.get("troupe-cache"), "miss", "a respelled tool result is answered live");
  t.equal(toolAgain.headers.get("troupe-cache-match"), null);
  t.equal(chatCalls() - toolCalls, 1);
  const exactAgain = await eventually(() => withTool("The answer is 42."), (r) => r.headers.get("troupe-cache") === "hit");
  t.equal(exactAgain.headers.get("troupe-cache-match"), "exact", "the exact cache still serves it, exactly");
});

t.test("each lookup is billed to the caller's project; the hit at 0 with cache hit", async (t) => {
  // A project of its own whose lookups embed with a priced model at the fake.
  const priced = await projectWithLiveKey(troupe, user.token, user.orgId, "priced");
  const on = await troupe.request("PATCH", settingsPath(priced.projectId), { token: user.token, body: { ...semanticOn, semantic_embedding_model: "text-embedding-3-small" } });
  t.equal(on.status, 200, on.text);
  const before = embeddingCalls();
  const miss = await question("How tall is Mount Everest?", priced.liveKey);
  t.equal(miss.headers.get("troupe-cache-embedding-model"), "text-embedding-3-small");
  t.equal(embeddingCalls() - before, 1, "the lookup's embedding call reached the provider");
  type Group = { key: string; live: { calls: number; cost_nanos: number; input_tokens: number } };
  const groupsOf = (r: { body: unknown }) => (field(r.body, "groups") ?? []) as Group[];
  const byModel = await eventually(
    () => troupe.request("GET", `/v1/projects/${priced.projectId}/usage?group_by=model`, { token: user.token }),
    (r) => groupsOf(r).some((g) => g.key === "text-embedding-3-small"),
  );
  const embedding = groupsOf(byModel).find((g) => g.key === "text-embedding-3-small");
  t.equal(embedding?.live.calls, 1, "one lookup, one record");
  t.ok((embedding?.live.cost_nanos ?? 0) > 0, `priced at the model's price (${embedding?.live.cost_nanos} nano-dollars)`);
  const byKey = await eventually(
    () => troupe.request("GET", `/v1/projects/${priced.projectId}/usage?group_by=key`, { token: user.token }),
    (r) => (groupsOf(r)[0]?.live.calls ?? 0) >= 2,
  );
  t.same(groupsOf(byKey).map((g) => g.key), [priced.liveKeyId], "billed to the calling key");
  t.equal(groupsOf(byKey)[0]?.live.calls, 2, "the chat call and its lookup, billed apart");

  const byCategory = await eventually(
    () => troupe.request("GET", `/v1/projects/${project.projectId}/usage?group_by=category`, { token: user.token }),
    (r) => (groupsOf(r).find((g) => g.key === "embeddings")?.live.calls ?? 0) >= 6,
  );
  t.ok((groupsOf(byCategory).find((g) => g.key === "embeddings")?.live.calls ?? 0) >= 6, "the first project's lookups (simulated-embed) are in its report");
  const byCache = await troupe.request("GET", `/v1/projects/${project.projectId}/usage?group_by=cache`, { token: user.token });
  const hits = groupsOf(byCache).find((g) => g.key === "hit");
  t.ok(hits && hits.live.calls >= 2, `the semantic hits recorded with cache hit (${hits?.live.calls})`);
  t.equal(hits?.live.cost_nanos, 0, "at the cache price");
});

t.test("a project's clear and the organization's deletion leave no vector (searched)", async (t) => {
  // A project that is neither cleared nor deleted: its vector must still be found, or the search proves nothing.
  const keeper = await signup(troupe, "semantic-keeper");
  const kept = await projectWithLiveKey(troupe, keeper.token, keeper.orgId, "kept");
  await troupe.request("PATCH", settingsPath(kept.projectId), { token: keeper.token, body: semanticOn });
  await question("What is the capital of Spain?", kept.liveKey);
  t.ok((await semanticHit((q) => question(q, kept.liveKey), ["what is the capital of spain", "What is the capital of Spain ?"])).hit, "its vector answers");

  const doomed = await signup(troupe, "semantic-doomed");
  const gone = await projectWithLiveKey(troupe, doomed.token, doomed.orgId, "doomed");
  await troupe.request("PATCH", settingsPath(gone.projectId), { token: doomed.token, body: semanticOn });
  await question("What is the capital of Italy?", gone.liveKey);
  t.ok((await semanticHit((q) => question(q, gone.liveKey), ["what is the capital of italy", "What is the capital of Italy ?"])).hit, "its vector answers");

  const cleared = await troupe.request("POST", `${settingsPath(project.projectId)}/clear`, { token: user.token });
  t.equal(cleared.status, 200, cleared.text);
  const after = await question("what is the capital of france ?");
  t.equal(after.headers.get("troupe-cache"), "miss", "cleared: answered live");
  const deleted = await troupe.request("DELETE", `/v1/orgs/${doomed.orgId}`, { token: doomed.token, body: { confirm: doomed.orgId } });
  t.ok(deleted.status < 300, deleted.text);
  // The miss above stored a fresh vector: the project's clear is checked on a second clear's result.
  await settle();
  await troupe.request("POST", `${settingsPath(project.projectId)}/clear`, { token: user.token });

  await troupe.stop();
  stopped = true;
  const config = loadConfig({ TROUPE_DATA_DIR: troupe.dataDir, LOG_LEVEL: "warn" });
  const open = semanticIndexOpener(config, createRouter(config.providers), createLogger("warn", {}, () => undefined));
  const index = await open("simulated-embed");
  t.teardown(() => open.closeAll());
  const probe = new Array<number>(index.dimensions).fill(1 / Math.sqrt(index.dimensions));
  const vectorsOf = (organizationId: string, projectId: string) => index.search(vectorScope({ organization_id: organizationId, project_id: projectId }), probe, 100);
  t.ok((await vectorsOf(keeper.orgId, kept.projectId)).length > 0, "the untouched project's vectors are found");
  t.same(await vectorsOf(user.orgId, project.projectId), [], "the cleared project: none");
  t.same(await vectorsOf(doomed.orgId, gone.projectId), [], "the deleted organization: none");
});
