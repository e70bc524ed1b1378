// The exact response cache end to end (embedded store): a whole Troupe over
// real sockets, its router at the OpenAI fake (whose request log counts
// provider calls), a project with the cache on. Headers on JSON and SSE
// answers, a stream replayed from a stored JSON answer through the official
// `openai` and `@anthropic-ai/sdk` packages, embeddings, refresh and
// bypass, a hit billed 0 with cache "hit" in the usage report, TTL expiry on
// the injected clock, and isolation between environments and organizations.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import t from "tap";
import type { Clock } from "../../../core/clock.ts";
import { tokenPieces } from "../../../providers/tokens.ts";
import { eventually, projectWithLiveKey, startFakeOpenAI } from "../../support/billing.ts";
import { midMonthClock } from "../../support/mid-month-clock.ts";
import { field, signup, startTestTroupe } from "../../support/troupe.ts";

const base = midMonthClock();
let offsetMs = 0;
const clock: Clock = { now: () => base.now() + offsetMs };

const { fake, router } = await startFakeOpenAI();
const troupe = await startTestTroupe({}, { router: router(), clock });
t.teardown(async () => {
  await troupe.stop();
  await fake.close();
});
const user = await signup(troupe, "cache");
const project = await projectWithLiveKey(troupe, user.token, user.orgId, "cached");
const calls = (path: string) => fake.requests.filter((r) => r.path.endsWith(path)).length;

const chat = (content: string, headers: Record<string, string> = {}, key = project.liveKey) =>
  troupe.request("POST", "/v1/chat/completions", { token: key, headers, body: { model: "gpt-4.1-mini", routing_strategy: "manual", messages: [{ role: "user", content }], max_tokens: 200 } });

t.test("off by default: no header, every call reaches the provider", async (t) => {
  const settings = await troupe.request("GET", `/v1/projects/${project.projectId}/cache`, { token: user.token });
  t.equal(field(settings.body, "enabled"), false);
  const before = calls("/chat/completions");
  const first = await chat("off by default");
  const second = await chat("off by default");
  t.equal(first.status, 200);
  t.equal(second.headers.get("troupe-cache"), null, "no cache header while the project has it off");
  t.equal(calls("/chat/completions") - before, 2);
  // The handler runs outside the cache's async context here (route-runner.ts), but the headers are still checked.
  const mode = await chat("off by default", { "troupe-cache": "sometimes" });
  t.equal(mode.status, 400, "a malformed troupe-cache header is a 400 while the cache is off too");
  t.match(mode.text, /troupe-cache/);
  const ttl = await chat("off by default", { "troupe-cache-ttl": "soon" });
  t.equal(ttl.status, 400);
  t.match(ttl.text, /troupe-cache-ttl/);
  t.equal(calls("/chat/completions") - before, 2, "neither reached the provider");
});

t.test("turning it on takes an owner or admin; bad settings are a 400 naming the field", async (t) => {
  const bad = await troupe.request("PATCH", `/v1/projects/${project.projectId}/cache`, { token: user.token, body: { default_ttl_seconds: -5 } });
  t.equal(bad.status, 400);
  t.match(bad.text, /default_ttl_seconds/);
  const other = await signup(troupe, "cache-stranger");
  const foreign = await troupe.request("PATCH", `/v1/projects/${project.projectId}/cache`, { token: other.token, body: { enabled: true } });
  t.equal(foreign.status, 404, "another organization's project is not found");
  const on = await troupe.request("PATCH", `/v1/projects/${project.projectId}/cache`, { token: user.token, body: { enabled: true, default_ttl_seconds: 600, max_ttl_seconds: 3600 } });
  t.equal(on.status, 200, on.text);
  t.same(on.body, { enabled: true, default_ttl_seconds: 600, max_ttl_seconds: 3600, semantic_enabled: false, semantic_threshold: 0.95, semantic_embedding_model: null });
});

t.test("miss, then hit with its age; the hit makes no provider call and answers the same", async (t) => {
  const before = calls("/chat/completions");
  const miss = await chat("What is a haiku?");
  t.equal(miss.status, 200, miss.text);
  t.equal(miss.headers.get("troupe-cache"), "miss");
  t.equal(miss.headers.get("troupe-cache-match"), null, "a miss names no match");
  t.equal(calls("/chat/completions") - before, 1);
  offsetMs += 3_000;
  const hit = await eventually(() => chat("What is a haiku?"), (r) => r.headers.get("troupe-cache") === "hit");
  t.equal(hit.headers.get("troupe-cache"), "hit");
  t.equal(hit.headers.get("troupe-cache-match"), "exact", "/v1 JSON hit");
  t.equal(hit.headers.get("troupe-cache-age"), "3", "age in whole seconds on the injected clock");
  t.equal(calls("/chat/completions") - before, 1, "no second provider call");
  t.same(field(hit.body, "content"), field(miss.body, "content"));
  t.same(field(hit.body, "output_tokens"), field(miss.body, "output_tokens"));
});

t.test("a stored JSON answer replays as a stream the openai SDK parses (/openai/v1)", async (t) => {
  const client = new OpenAI({ baseURL: `${troupe.url}/openai/v1`, apiKey: project.liveKey, maxRetries: 0 });
  const question = "Name three rivers.";
  const before = calls("/chat/completions");
  const json = await client.chat.completions.create({ model: "gpt-4.1-mini", messages: [{ role: "user", content: question }], max_tokens: 200 }).withResponse();
  t.equal(json.response.headers.get("troupe-cache"), "miss");
  t.equal(json.response.headers.get("troupe-cache-match"), null);
  const stored = json.data.choices[0]?.message.content ?? "";
  t.ok(stored.length > 0);
  const streamed = await eventually(
    async () => client.chat.completions.create({ model: "gpt-4.1-mini", messages: [{ role: "user", content: question }], max_tokens: 200, stream: true, stream_options: { include_usage: true } }).withResponse(),
    (r) => r.response.headers.get("troupe-cache") === "hit",
  );
  t.equal(streamed.response.headers.get("troupe-cache"), "hit", "the SSE head says hit");
  t.equal(streamed.response.headers.get("troupe-cache-match"), "exact", "/openai/v1 stream hit: the SSE head says how it matched");
  let text = "";
  let chunks = 0;
  let finish: string | null | undefined;
  let usage: unknown;
  for await (const chunk of streamed.data) {
    const piece = chunk.choices[0]?.delta.content ?? "";
    if (piece !== "") chunks++;
    text += piece;
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
  }
  t.equal(text, stored, "the replay carries the stored text");
  t.equal(chunks, tokenPieces(stored).length, `one token a delta, as a live stream (${chunks} deltas)`);
  t.ok(chunks > 1);
  t.equal(finish, "stop");
  t.equal(field(usage, "completion_tokens"), json.data.usage?.completion_tokens, "the stored usage figures");
  t.equal(calls("/chat/completions") - before, 1, "one provider call for both");
});

t.test("a stream stored once finished is served as JSON, and the Anthropic SDK parses a replayed stream", async (t) => {
  const client = new OpenAI({ baseURL: `${troupe.url}/openai/v1`, apiKey: project.liveKey, maxRetries: 0 });
  const before = calls("/chat/completions");
  const live = await client.chat.completions.create({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "Describe the sea." }], max_tokens: 300, stream: true });
  let text = "";
  for await (const chunk of live) text += chunk.choices[0]?.delta.content ?? "";
  const json = await eventually(
    async () => client.chat.completions.create({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "Describe the sea." }], max_tokens: 300 }).withResponse(),
    (r) => r.response.headers.get("troupe-cache") === "hit",
  );
  t.equal(json.response.headers.get("troupe-cache"), "hit");
  t.equal(json.response.headers.get("troupe-cache-match"), "exact", "/openai/v1 JSON hit");
  t.equal(json.data.choices[0]?.message.content, text, "the finished stream's text, as JSON");

  const anthropic = new Anthropic({ baseURL: `${troupe.url}/anthropic`, apiKey: project.liveKey, maxRetries: 0 });
  const ask = { model: "gpt-4.1-mini", max_tokens: 300, messages: [{ role: "user" as const, content: "Describe the sea." }] };
  const stream = anthropic.messages.stream(ask);
  const final = await stream.finalMessage();
  t.equal(stream.response?.headers.get("troupe-cache"), "hit");
  t.equal(stream.response?.headers.get("troupe-cache-match"), "exact", "/anthropic stream hit");
  const anthropicJson = await anthropic.messages.create(ask).withResponse();
  t.equal(anthropicJson.response.headers.get("troupe-cache-match"), "exact", "/anthropic JSON hit");
  const block = final.content[0];
  t.equal(block?.type === "text" ? block.text : undefined, text, "the Anthropic mount's replay, parsed by its SDK: the same text");
  t.equal(final.stop_reason, "end_turn");
  t.equal(calls("/chat/completions") - before, 1, "one provider call for all four answers");
});

t.test("refresh calls the provider and stores again; bypass neither reads nor stores", async (t) => {
  const before = calls("/chat/completions");
  const first = await chat("refresh me");
  t.equal(first.headers.get("troupe-cache"), "miss");
  const refreshed = await chat("refresh me", { "troupe-cache": "refresh" });
  t.equal(refreshed.headers.get("troupe-cache"), "refresh");
  t.equal(refreshed.headers.get("troupe-cache-match"), null, "refresh serves nothing stored");
  const bypassed = await chat("refresh me", { "troupe-cache": "bypass" });
  t.equal(bypassed.headers.get("troupe-cache"), "bypass");
  t.equal(calls("/chat/completions") - before, 3, "refresh and bypass both reach the provider");
  const bypassOnly = await chat("never stored", { "troupe-cache": "bypass" });
  t.equal(bypassOnly.headers.get("troupe-cache"), "bypass");
  await new Promise((r) => setTimeout(r, 100));
  t.equal((await chat("never stored")).headers.get("troupe-cache"), "miss", "a bypassed answer was not stored");
});

t.test("a malformed control header is a 400 naming it", async (t) => {
  const mode = await chat("x", { "troupe-cache": "sometimes" });
  t.equal(mode.status, 400);
  t.match(mode.text, /troupe-cache/);
  const ttl = await chat("x", { "troupe-cache-ttl": "soon" });
  t.equal(ttl.status, 400);
  t.match(ttl.text, /troupe-cache-ttl/);
});

t.test("TTL: the header's, bounded by the project's maximum; expired entries miss", async (t) => {
  const short = await chat("ttl question", { "troupe-cache-ttl": "30" });
  t.equal(short.headers.get("troupe-cache"), "miss");
  await eventually(() => chat("ttl question"), (r) => r.headers.get("troupe-cache") === "hit");
  offsetMs += 31_000;
  t.equal((await chat("ttl question")).headers.get("troupe-cache"), "miss", "past its 30 s");
  // Asking for more than the project's 3600 s maximum stores for 3600 s.
  await chat("long ttl question", { "troupe-cache-ttl": "86400" });
  await eventually(() => chat("long ttl question"), (r) => r.headers.get("troupe-cache") === "hit");
  offsetMs += 3_601_000;
  t.equal((await chat("long ttl question")).headers.get("troupe-cache"), "miss", "bounded by max_ttl_seconds");
});

t.test("embeddings are cached too", async (t) => {
  const before = calls("/embeddings");
  const embed = () => troupe.request("POST", "/v1/embeddings", { token: project.liveKey, body: { model: "text-embedding-3-small", routing_strategy: "manual", input: ["cache me", "and me"] } });
  const first = await embed();
  t.equal(first.status, 200, first.text);
  t.equal(first.headers.get("troupe-cache"), "miss");
  t.equal(first.headers.get("troupe-cache-match"), null);
  const second = await eventually(embed, (r) => r.headers.get("troupe-cache") === "hit");
  t.equal(second.headers.get("troupe-cache"), "hit");
  t.equal(second.headers.get("troupe-cache-match"), "exact", "/v1/embeddings hit");
  t.same(field(second.body, "data"), field(first.body, "data"));
  t.equal(calls("/embeddings") - before, 1);
  // The compatible mount (its routing is auto, not manual: a key of its own).
  const compatEmbed = () => troupe.request("POST", "/openai/v1/embeddings", { token: project.liveKey, body: { model: "text-embedding-3-small", input: ["cache me", "and me"] } });
  const compatMiss = await compatEmbed();
  t.equal(compatMiss.status, 200, compatMiss.text.slice(0, 300));
  t.equal(compatMiss.headers.get("troupe-cache-match"), null);
  const compat = await eventually(compatEmbed, (r) => r.headers.get("troupe-cache") === "hit");
  t.equal(compat.headers.get("troupe-cache-match"), "exact", "/openai/v1/embeddings hit");
  t.equal(calls("/embeddings") - before, 2);
});

t.test("never across environments or organizations", async (t) => {
  await chat("isolated question");
  await eventually(() => chat("isolated question"), (r) => r.headers.get("troupe-cache") === "hit");
  // The project's development environment (its test key): same project, other environment.
  const dev = await chat("isolated question", {}, project.testKey);
  t.equal(dev.headers.get("troupe-cache"), "miss", "another environment of the same project");
  const other = await signup(troupe, "cache-other");
  const otherProject = await projectWithLiveKey(troupe, other.token, other.orgId, "other");
  await troupe.request("PATCH", `/v1/projects/${otherProject.projectId}/cache`, { token: other.token, body: { enabled: true } });
  const foreign = await chat("isolated question", {}, otherProject.liveKey);
  t.equal(foreign.headers.get("troupe-cache"), "miss", "another organization");
});

t.test("a hit bills 0 and the usage report groups by cache", async (t) => {
  const report = await eventually(
    () => troupe.request("GET", `/v1/projects/${project.projectId}/usage?group_by=cache`, { token: user.token }),
    // Usage is recorded after the answer leaves: wait until every hit made above is in the report.
    (r) => Array.isArray(field(r.body, "groups")) && (field(r.body, "groups") as { key: string; live: { calls: number } }[]).some((g) => g.key === "hit" && g.live.calls >= 5),
  );
  t.equal(report.status, 200, report.text);
  const groups = field(report.body, "groups") as { key: string; live: { cost_nanos: number; calls: number; output_tokens: number } }[];
  const hit = groups.find((g) => g.key === "hit");
  const none = groups.find((g) => g.key === "none");
  t.ok(hit && hit.live.calls >= 5, `hits counted (${hit?.live.calls})`);
  t.equal(hit?.live.cost_nanos, 0, "hits priced at 0");
  t.ok((hit?.live.output_tokens ?? 0) > 0, "with the tokens they stand for");
  t.ok((none?.live.cost_nanos ?? 0) > 0, "provider calls priced as always");
});

t.test("clear cache removes the project's entries", async (t) => {
  await chat("clear me");
  await eventually(() => chat("clear me"), (r) => r.headers.get("troupe-cache") === "hit");
  const cleared = await troupe.request("POST", `/v1/projects/${project.projectId}/cache/clear`, { token: user.token });
  t.equal(cleared.status, 200, cleared.text);
  t.ok((field(cleared.body, "entries") as number) > 0);
  t.equal((await chat("clear me")).headers.get("troupe-cache"), "miss");
});
