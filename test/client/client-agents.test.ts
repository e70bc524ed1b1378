// @troupe/client's agent helpers and event sockets against a real embedded
// Troupe (simulated model and video provider, ffmpeg): a turn, a
// requires_action answered with answerToolCalls, generate_video waited out
// by sendMessage (over the events socket, by polling, and falling back to
// polling when the socket cannot open), the conversation and job sockets as
// async iterators, and a refused socket reporting why (closed once open, or
// refused at the upgrade).
import t from "tap";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuthenticationError, NotFoundError, PermissionDeniedError, TroupeError, createTroupeClient, unwrap, type ConversationFrame, type JobFrame } from "../../client/src/index.ts";
import { signup, startTestTroupe } from "../support/troupe.ts";

t.setTimeout(90_000);
const troupe = await startTestTroupe({ SIMULATED_VIDEO_DELAY_MS: "300", SIMULATED_VIDEO_DIR: mkdtempSync(join(tmpdir(), "troupe-client-simvid-")) });
t.teardown(() => troupe.stop());
const user = await signup(troupe, "client-agents");
const client = createTroupeClient({ baseUrl: troupe.url, apiKey: user.testKey });
const lookup = { name: "lookup", description: "Looks a number up", parameters: { type: "object", properties: { q: { type: "number" } } } };
const newConversation = () => client.createConversation({ model: "simulated-chat", routing_strategy: "manual", system_prompt: "You help.", tools: [lookup] });
const video = 'call generate_video {"prompt":"a cat on a piano","duration_seconds":1}; then answer';

t.test("a turn, then requires_action answered with answerToolCalls", async (t) => {
  const conversation = await newConversation();
  t.equal(conversation.status, "idle");
  const replied = await client.sendMessage(conversation.id, "say hello there");
  t.equal(replied.status, "idle");
  t.match(replied.messages.at(-1), { role: "assistant", content: "hello there" });

  const parked = await client.sendMessage(conversation.id, 'call lookup {"q":7}; then answer');
  t.equal(parked.status, "requires_action");
  const call = parked.messages.at(-1)?.tool_calls?.[0];
  t.match(call, { name: "lookup", arguments: { q: 7 } });
  const answered = await client.answerToolCalls(conversation.id, { [call!.id]: "forty-two" });
  t.equal(answered.status, "idle");
  t.match(answered.messages.at(-1)?.content, /lookup returned forty-two/);
  t.same(await client.getConversation(conversation.id), answered, "the answer is the stored conversation");
});

t.test("conversationEvents: the conversation first, then the turn's messages and status", async (t) => {
  const conversation = await newConversation();
  const frames: ConversationFrame[] = [];
  const events = client.conversationEvents(conversation.id);
  const first = await events.next();
  t.match(first.value, { type: "conversation", conversation_id: conversation.id, conversation: { status: "idle" } });
  const parked = await client.sendMessage(conversation.id, "call lookup {}");
  t.equal(parked.status, "requires_action");
  for await (const frame of events) {
    frames.push(frame);
    if (frame.type === "status.changed" && frame.status === "requires_action") break;
  }
  t.same(frames.filter((f) => f.type === "message.appended").map((f) => (f.type === "message.appended" ? f.message.role : "")), ["user", "assistant"]);
  t.same(frames.filter((f) => f.type === "status.changed").map((f) => (f.type === "status.changed" ? f.status : "")), ["requires_action"]);
});

t.test("sendMessage waits out generating_media: over the events socket", async (t) => {
  const conversation = await newConversation();
  // A 60 s poll interval: only the socket can end this wait within the 20 s timeout.
  const done = await client.sendMessage(conversation.id, video, { pollIntervalMs: 60_000, timeoutMs: 20_000 });
  t.equal(done.status, "idle", "returned once the video job called back");
  const tool = done.messages.find((m) => m.role === "tool");
  t.match(JSON.parse(tool?.content ?? "{}"), { status: "completed", result_url: /\/v1\/files\// });
  t.match(done.messages.at(-1), { role: "assistant", content: /generate_video returned/ });
});

t.test("sendMessage waits out generating_media: by polling", async (t) => {
  const conversation = await newConversation();
  const done = await client.sendMessage(conversation.id, video, { via: "poll", pollIntervalMs: 50 });
  t.equal(done.status, "idle");
  t.match(done.messages.at(-1), { role: "assistant", content: /generate_video returned/ });
});

t.test("a socket that cannot open falls back to polling; a wait past timeoutMs throws wait_timeout", async (t) => {
  // Every socket goes to a closed port: the refusal probe finds the credential fine (426), so it is a connection failure.
  class Unreachable extends WebSocket {
    constructor(_url: string | URL, protocols?: ConstructorParameters<typeof WebSocket>[1]) {
      super("ws://127.0.0.1:9/", protocols);
    }
  }
  const noSockets = createTroupeClient({ baseUrl: troupe.url, apiKey: user.testKey, WebSocket: Unreachable });
  const conversation = await newConversation();
  const done = await noSockets.sendMessage(conversation.id, video, { pollIntervalMs: 50 });
  t.equal(done.status, "idle", "polled to the end");

  const slow = await newConversation();
  const parked = await unwrap(client.api.POST("/v1/agents/conversations/{id}/messages", { params: { path: { id: slow.id } }, body: { content: video } }));
  t.equal(parked.status, "generating_media");
  const timedOut = await client.waitForConversation(slow.id, { timeoutMs: 1 }).catch((e: unknown) => e);
  t.ok(timedOut instanceof TroupeError);
  t.match(timedOut, { code: "wait_timeout" });
  t.equal((await client.waitForConversation(slow.id)).status, "idle", "and a patient wait still ends");
});

t.test("jobEvents: the job first, then its changes, ending when it is final", async (t) => {
  const { job_id } = await unwrap(client.api.POST("/v1/video/generate", { body: { prompt: "waves", scenes: ["one", "two"], duration_seconds: 1 } }));
  const frames: JobFrame[] = [];
  for await (const frame of client.jobEvents(job_id)) frames.push(frame);
  t.equal(frames[0]?.type, "job");
  t.ok(frames.length >= 3, `several frames: ${frames.length}`);
  t.match(frames.at(-1), { type: "job.updated", job_id, job: { status: "completed", result_url: /\/v1\/files\// } });
});

t.test("a refused socket says why: from the close once open, or from the upgrade asked again over node:http", async (t) => {
  const conversation = await newConversation();
  // An unknown key needs the store: the socket opens, then closes with 4401 and the error in its reason.
  const wrong = createTroupeClient({ baseUrl: troupe.url, apiKey: `${user.testKey.slice(0, -2)}zz` });
  const refused = await wrong.conversationEvents(conversation.id).next().catch((e: unknown) => e);
  t.ok(refused instanceof AuthenticationError, "4401 → AuthenticationError");
  t.match(refused, { status: 401, code: "unauthorized", requestId: /^req_/ });
  // Another organization's conversation: 4404 once open.
  const other = await signup(troupe, "client-agents-other");
  const stranger = createTroupeClient({ baseUrl: troupe.url, apiKey: other.testKey });
  const missing = await stranger.conversationEvents(conversation.id).next().catch((e: unknown) => e);
  t.ok(missing instanceof NotFoundError, "4404 → NotFoundError");
  t.match(missing, { status: 404, code: "not_found", requestId: /^req_/ });
  // A key the replica knows, without the agents scope: refused at once with 403, read over node:http.
  const created = await troupe.request("POST", `/v1/environments/${user.developmentEnvId}/api-keys`, { token: user.token, body: { name: "chat only", scopes: ["chat"] } });
  const chatKey = (created.body as { key: string }).key;
  t.equal((await troupe.request("GET", "/v1/models", { token: chatKey })).status, 200, "the key is in the replica's cache");
  const scoped = await createTroupeClient({ baseUrl: troupe.url, apiKey: chatKey }).conversationEvents(conversation.id).next().catch((e: unknown) => e);
  t.ok(scoped instanceof PermissionDeniedError, "403 → PermissionDeniedError");
  t.match(scoped, { status: 403, code: "insufficient_scope", requestId: /^req_/ });
  t.throws(() => createTroupeClient({ baseUrl: troupe.url, sessionToken: user.token }).jobEvents("x"), /API key/, "a session cannot open event sockets");
});
