// Content logging in the request log over real sockets: off by default (an
// entry then keeps no prompt and no answer), turned on by an owner (a member
// is refused), then one entry read alone shows the request's messages and
// the answer's text — on /v1 and on the OpenAI mount — while the list stays
// metadata only; a streamed answer's text is kept too (/v1, the OpenAI chat
// and Responses mounts, Anthropic), a long one cut at 32 KiB with the marker
// naming the whole stream's size, and nothing of a stream is kept while
// logging is off; a long prompt is cut at 32 KiB with its marker; no
// credential is kept; and once the content retention passes the content is
// gone and the entry's metadata stays.
//
// Off, nothing of a chat call, a streamed chat call or an embeddings call is
// anywhere: not in its entry read over HTTP, and not on disk — every lmdb
// database under TROUPE_DATA_DIR read record by record, and every file's raw
// bytes (freed pages included), searched for a marker sent in the prompt. The
// same three calls with logging on put the marker in the request log's file,
// so the search is one that can fail.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { contentCapBytes } from "../../tenancy/request-log-content.ts";
import { eventually } from "../support/billing.ts";
import { scanLmdb } from "../support/org-footprint.ts";
import { field, signup, str, startTestTroupe } from "../support/troupe.ts";

t.setTimeout(90_000);
let offsetMs = 0;
// Paced, so a long answer streams as many events (pieces already due go out together).
const troupe = await startTestTroupe({ SIMULATED_TOKENS_PER_SECOND: "20000" }, { clock: { now: () => Date.now() + offsetMs } });
t.teardown(() => troupe.stop());
const owner = await signup(troupe, "content");
const settingsPath = `/v1/projects/${owner.projectId}/request-log`;

const chat = (content: string, path = "/v1/chat/completions") =>
  troupe.request("POST", path, { token: owner.testKey, body: { model: "simulated-chat", messages: [{ role: "user", content }] } });
const streamChat = (content: string, path = "/v1/chat/completions") =>
  troupe.request("POST", path, { token: owner.testKey, body: { model: "simulated-chat", stream: true, messages: [{ role: "user", content }] } });
const streamAnthropic = (content: string) =>
  troupe.request("POST", "/anthropic/v1/messages", {
    headers: { "x-api-key": owner.testKey, "anthropic-version": "2023-06-01" },
    body: { model: "simulated-chat", max_tokens: 200, stream: true, messages: [{ role: "user", content }] },
  });
const streamResponses = (input: string) => troupe.request("POST", "/openai/v1/responses", { token: owner.testKey, body: { model: "simulated-chat", stream: true, store: false, input } });
/** The `delta` text of /v1's SSE events, joined: what the client was sent. */
const v1StreamText = (sse: string) =>
  sse
    .split("\n")
    .filter((l) => l.startsWith("data: {"))
    .map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>)
    .map((e) => (typeof e["delta"] === "string" ? e["delta"] : ""))
    .join("");
const embed = (input: string) => troupe.request("POST", "/v1/embeddings", { token: owner.testKey, body: { model: "simulated-embed", input } });
/** Unique to this run, so a hit on disk can only be this file's calls. */
const marker = `zq-content-marker-${process.pid}-${Date.now()}`;
const markedCalls = { chat: `${marker} chat`, stream: `${marker} stream`, embeddings: `${marker} embeddings` };
/** The data-dir files whose raw bytes hold `needle` (pages lmdb freed included). */
const filesHolding = (needle: string) =>
  readdirSync(troupe.dataDir, { recursive: true, encoding: "utf8" }).filter((name) => {
    const path = join(troupe.dataDir, name);
    return statSync(path).isFile() && readFileSync(path).includes(needle);
  });
/** The three marked calls (a chat, a streamed chat, embeddings), answered 200, and their entries once written. */
async function markedEntries(t: Test, tag: string) {
  const [chatRes, streamRes, embedRes] = [await chat(`${markedCalls.chat} ${tag}`), await streamChat(`${markedCalls.stream} ${tag}`), await embed(`${markedCalls.embeddings} ${tag}`)];
  t.same([chatRes.status, streamRes.status, embedRes.status], [200, 200, 200], `the three ${tag} calls answered`);
  t.match(streamRes.text, /data: \{"delta"/, "the stream was sent as events");
  return { chat: await entryOf(idOf(chatRes)), stream: await entryOf(idOf(streamRes)), embeddings: await entryOf(idOf(embedRes)) };
}
const idOf = (r: { headers: Headers }) => r.headers.get("x-request-id") ?? "";
const entryOf = (id: string) => eventually(() => troupe.request("GET", `/v1/projects/${owner.projectId}/requests/${id}`, { token: owner.token }), (r) => r.status === 200);

t.test("off by default: the entry keeps no content", async (t) => {
  const settings = await troupe.request("GET", settingsPath, { token: owner.token });
  t.equal(settings.status, 200);
  t.same(settings.body, { content_logging: false, content_retention_days: 1 });
  const res = await chat("a prompt while logging is off");
  t.equal(res.status, 200);
  const entry = await entryOf(idOf(res));
  t.equal(field(entry.body, "content"), null);
  t.notOk(entry.text.includes("a prompt while logging is off"), "no prompt");
  t.notOk(entry.text.includes("Simulated reply"), "no answer");
  const streamedRes = await streamChat("a streamed answer while logging is off");
  t.equal(streamedRes.status, 200);
  t.equal(v1StreamText(streamedRes.text), "Simulated reply to: a streamed answer while logging is off", "streamed");
  const streamedEntry = await entryOf(idOf(streamedRes));
  t.equal(field(streamedEntry.body, "content"), null, "a stream keeps nothing either");
  t.notOk(streamedEntry.text.includes("a streamed answer"), "no streamed text");
});

t.test("off: nothing of a chat, a streamed chat or an embeddings call is in its entry or anywhere on disk", async (t) => {
  const entries = await markedEntries(t, "off");
  for (const [call, entry] of Object.entries(entries)) {
    t.equal(field(entry.body, "content"), null, `${call}: the entry read over HTTP has no content`);
    t.notOk(entry.text.includes(marker), `${call}: nor the prompt anywhere in it`);
  }
  for (const needle of Object.values(markedCalls)) {
    t.same(scanLmdb(troupe.dataDir, [needle]), [], `"${needle}" in no lmdb record under the data dir`);
    t.same(filesHolding(needle), [], `"${needle}" in no file's bytes under the data dir`);
  }
});

t.test("only owners and admins change the settings; bad values are 400", async (t) => {
  const member = await signup(troupe, "content-member");
  const invite = await troupe.request("POST", `/v1/orgs/${owner.orgId}/invitations`, { token: owner.token, body: { email: member.email, role: "member" } });
  t.equal(invite.status, 201);
  const accepted = await troupe.request("POST", "/v1/invitations/accept", { token: member.token, body: { token: str(invite.body, "token") } });
  t.equal(accepted.status, 200, accepted.text);
  t.equal((await troupe.request("GET", settingsPath, { token: member.token })).status, 200, "a member reads them");
  const refused = await troupe.request("PATCH", settingsPath, { token: member.token, body: { content_logging: true } });
  t.equal(refused.status, 403);
  t.equal(str(refused.body, "error", "code"), "forbidden");
  t.equal((await troupe.request("PATCH", settingsPath, { token: owner.token, body: { content_retention_days: 0 } })).status, 400);
  t.equal((await troupe.request("PATCH", settingsPath, { token: owner.token, body: { log_everything: true } })).status, 400, "an unknown setting");
  const stranger = await signup(troupe, "content-stranger");
  t.equal((await troupe.request("GET", settingsPath, { token: stranger.token })).status, 404, "another organization's project");
  t.same((await troupe.request("GET", settingsPath, { token: owner.token })).body, { content_logging: false, content_retention_days: 1 }, "unchanged");
});

t.test("on: one entry shows the prompt and the answer, the list does not, no credential is kept", async (t) => {
  const on = await troupe.request("PATCH", settingsPath, { token: owner.token, body: { content_logging: true } });
  t.equal(on.status, 200);
  t.same(on.body, { content_logging: true, content_retention_days: 1 });
  const res = await chat("What is an actor?");
  t.equal(res.status, 200);
  const entry = await entryOf(idOf(res));
  const content = field(entry.body, "content");
  t.same(field(content, "request"), { text: JSON.stringify({ messages: [{ role: "user", content: "What is an actor?" }] }), original_bytes: Buffer.byteLength(JSON.stringify({ messages: [{ role: "user", content: "What is an actor?" }] })), truncated: false });
  t.same(field(content, "answer"), { text: str(res.body, "content"), original_bytes: Buffer.byteLength(str(res.body, "content")), truncated: false });
  const expires = Date.parse(String(field(content, "expires_at")));
  const created = Date.parse(String(field(entry.body, "created_at")));
  t.equal(expires - created, 86_400_000, "kept one day (content_retention_days)");
  t.notOk(entry.text.includes(owner.testKey), "the key is not in the entry");

  const list = await troupe.request("GET", `/v1/projects/${owner.projectId}/requests`, { token: owner.token });
  const listed = (field(list.body, "data") as Record<string, unknown>[]).find((e) => e["request_id"] === idOf(res));
  t.ok(listed, "listed");
  t.notOk(listed && "content" in listed, "the list carries no content");
  t.notOk(list.text.includes("What is an actor?"), "nor the prompt anywhere in it");

  const compat = await chat("Hello from the SDK", "/openai/v1/chat/completions");
  t.equal(compat.status, 200);
  const compatEntry = await entryOf(idOf(compat));
  t.match(field(field(compatEntry.body, "content"), "request", "text"), /Hello from the SDK/);
  t.equal(field(field(compatEntry.body, "content"), "answer", "text"), str(compat.body, "choices", 0, "message", "content"), "the OpenAI shape's answer text");
});

t.test("on: the same three calls put the marker in the request log's file (the disk search can fail)", async (t) => {
  const entries = await markedEntries(t, "on");
  for (const [call, entry] of Object.entries(entries)) t.match(field(entry.body, "content", "request", "text"), marker, `${call}: the entry has its prompt`);
  for (const needle of Object.values(markedCalls)) {
    t.ok(scanLmdb(troupe.dataDir, [needle]).some((h) => h.where.startsWith("request-log")), `"${needle}" is in a request-log record`);
    t.ok(filesHolding(needle).length > 0, `"${needle}" is in the file's bytes`);
  }
});

t.test("on: a streamed answer's text is kept, in each mount's stream", async (t) => {
  const reply = (prompt: string) => `Simulated reply to: ${prompt}`;
  const v1 = await streamChat("Streamed from the v1 route");
  t.equal(v1.status, 200);
  t.equal(v1StreamText(v1.text), reply("Streamed from the v1 route"), "what the client was sent");
  const v1Answer = field(field((await entryOf(idOf(v1))).body, "content"), "answer");
  t.same(v1Answer, { text: reply("Streamed from the v1 route"), original_bytes: Buffer.byteLength(reply("Streamed from the v1 route")), truncated: false });

  const openAi = await streamChat("Streamed in OpenAI chunks", "/openai/v1/chat/completions");
  t.equal(openAi.status, 200);
  t.match(openAi.text, /chat\.completion\.chunk/, "OpenAI's chunks");
  t.equal(field(field((await entryOf(idOf(openAi))).body, "content"), "answer", "text"), reply("Streamed in OpenAI chunks"));

  const responses = await streamResponses("Streamed as Responses events");
  t.equal(responses.status, 200);
  t.match(responses.text, /response\.output_text\.delta/, "Responses events");
  t.equal(field(field((await entryOf(idOf(responses))).body, "content"), "answer", "text"), reply("Streamed as Responses events"));

  const anthropic = await streamAnthropic("Streamed as Anthropic events");
  t.equal(anthropic.status, 200);
  t.match(anthropic.text, /content_block_delta/, "Anthropic's events");
  const anthropicEntry = await entryOf(idOf(anthropic));
  t.equal(field(field(anthropicEntry.body, "content"), "answer", "text"), reply("Streamed as Anthropic events"));
  t.match(field(field(anthropicEntry.body, "content"), "request", "text"), /Streamed as Anthropic events/, "and its prompt");
});

t.test("a long streamed answer is cut at 32 KiB with the marker naming the whole stream's size", async (t) => {
  const res = await streamChat("ünïcode words ".repeat(6000));
  t.equal(res.status, 200);
  const sent = v1StreamText(res.text);
  const full = Buffer.byteLength(sent);
  t.ok(full > 2 * contentCapBytes, `${full} bytes streamed`);
  const answer = field(field((await entryOf(idOf(res))).body, "content"), "answer");
  t.equal(field(answer, "truncated"), true);
  t.equal(field(answer, "original_bytes"), full, "every byte counted, past the cap too");
  const text = String(field(answer, "text"));
  t.ok(text.endsWith(`\n[truncated: ${full} bytes in the original, ${contentCapBytes} kept]`), "the marker");
  const kept = text.slice(0, text.lastIndexOf("\n[truncated"));
  t.ok(sent.startsWith(kept), "the stream's beginning");
  t.ok(Buffer.byteLength(kept) <= contentCapBytes && Buffer.byteLength(kept) > contentCapBytes - 4, `${Buffer.byteLength(kept)} bytes kept`);
  const events = res.text.split('data: {"delta"').length - 1;
  t.ok(events > 3, `sent as ${events} events`);
});

t.test("a long prompt is cut at 32 KiB with a marker and its original size", async (t) => {
  const long = "é".repeat(30_000); // 60,000 bytes of UTF-8
  const res = await chat(long);
  t.equal(res.status, 200);
  const request = field(field((await entryOf(idOf(res))).body, "content"), "request");
  const full = Buffer.byteLength(JSON.stringify({ messages: [{ role: "user", content: long }] }));
  t.equal(field(request, "truncated"), true);
  t.equal(field(request, "original_bytes"), full);
  const text = String(field(request, "text"));
  t.ok(text.endsWith(`[truncated: ${full} bytes in the original, ${contentCapBytes} kept]`), "the marker names the original size");
  const kept = text.slice(0, text.lastIndexOf("\n[truncated"));
  t.ok(Buffer.byteLength(kept) <= contentCapBytes && Buffer.byteLength(kept) > contentCapBytes - 4, `${Buffer.byteLength(kept)} bytes kept`);
  t.notOk(kept.includes("\uFFFD"), "cut at a character boundary");
});

t.test("after its retention the content is gone and the entry stays", async (t) => {
  const res = await chat("Forget me tomorrow");
  const id = idOf(res);
  t.not(field((await entryOf(id)).body, "content"), null, "kept today");
  offsetMs = 25 * 3_600_000;
  t.teardown(() => (offsetMs = 0));
  const later = await troupe.request("GET", `/v1/projects/${owner.projectId}/requests/${id}`, { token: owner.token });
  t.equal(later.status, 200, "the entry stays (the log keeps 7 days)");
  t.equal(field(later.body, "content"), null);
  t.equal(field(later.body, "route"), "/v1/chat/completions");
  t.notOk(later.text.includes("Forget me tomorrow"));
  const off = await troupe.request("PATCH", settingsPath, { token: owner.token, body: { content_logging: false } });
  t.equal(off.status, 200);
  const after = await chat("logged while off again");
  t.equal(field((await entryOf(idOf(after))).body, "content"), null, "off again: nothing kept");
});
