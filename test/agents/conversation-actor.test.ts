// The ConversationActor's announcements and its hand-off with a video job,
// on the embedded host in process, with a scripted chat double (the
// end-to-end files drive the real providers' fakes over HTTP):
// - live events leave only after a turn commits: a turn that appends
//   messages and then fails announces `turn.failed` and nothing else;
// - a finished video job hands its result over without holding its own
//   turn while the conversation's model answers (the real JobActor runs the
//   job, with a video double and real ffmpeg): the job's actor answers
//   while the model is still answering;
// - a model that fails to answer the video's result leaves the conversation
//   idle with the result kept, never parked in generating_media;
// - a turn whose model keeps calling tools stops after 8 model steps.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { systemClock } from "../../core/clock.ts";
import { loadConfig } from "../../gateway/config.ts";
import { TroupeError } from "../../core/errors.ts";
import { createLogger } from "../../core/log.ts";
import { eraseDefinition } from "../../actors/actor.ts";
import { callActor } from "../../actors/host.ts";
import { createActorHost } from "../../actors/hosts/create-host.ts";
import { createConversationActor } from "../../actors/conversation/conversation-actor.ts";
import { ConversationDirectory } from "../../actors/conversation/directory.ts";
import type { ConversationEvent } from "../../actors/conversation/events.ts";
import { JobDirectory } from "../../actors/job/directory.ts";
import { storeJobEventBus } from "../../actors/job/events.ts";
import { createJobActor } from "../../actors/job/job-actor.ts";
import { concatClips, extractLastFrame, muxVoiceover } from "../../media/video-compose.ts";
import { createFileStore } from "../../media/create-file-store.ts";
import { Capabilities, mediaTools } from "../../media/media-tools.ts";
import { OutboundFetcher } from "../../media/outbound-fetch.ts";
import { Catalogue } from "../../providers/catalogue.ts";
import type { ChatRequest } from "../../providers/chat-request.ts";
import type { ChatResult } from "../../providers/types.ts";
import { answer } from "../support/double-chat-answer.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import type { OrgIndex } from "../../vectors/org-index.ts";
import { fakeMp4 } from "../fakes/video-fakes.ts";
import { waitFor } from "../support/net.ts";

t.setTimeout(60_000);

const dataDir = mkdtempSync(join(tmpdir(), "troupe-conversation-actor-"));
const config = loadConfig({ TROUPE_DATA_DIR: dataDir, LOG_LEVEL: "silent" });
const log = createLogger("silent");
const store = new EmbeddedDataStore(dataDir, systemClock);
const files = await createFileStore(config.media, dataDir);
const clip = join(dataDir, "clip.mp4");
writeFileSync(clip, fakeMp4());

const published: ConversationEvent[] = [];
/** The model's answer after a video, held until the test releases it (a slow model). */
let releaseAnswer: () => void = () => undefined;
let answerHeld = Promise.resolve();
let afterVideoCalls = 0;
/** Model calls made by the "keep calling tools" script. */
let loopingCalls = 0;


/** Scripted by the first user message: what the model says at each point of the conversation. */
async function chat(request: ChatRequest): Promise<ChatResult> {
  const script = request.messages.find((m) => m.role === "user")?.content ?? "";
  const last = request.messages.at(-1);
  if (script === "fail after a tool") {
    if (last?.role === "user") return answer("let me look", [{ id: "call-1", name: "no_such_tool", arguments: {} }]);
    throw new TroupeError("provider_error", "the model provider failed mid-turn");
  }
  // Only while its own message is the latest: a later message is answered "Hello".
  if (script === "fail after the video" && request.messages.findLast((m) => m.role === "user")?.content === script) {
    if (last?.role === "user") return answer("", [{ id: "call-fv", name: "generate_video", arguments: { prompt: "a dog" } }]);
    throw new TroupeError("provider_error", "the model provider failed after the video");
  }
  if (script === "keep calling tools") {
    loopingCalls += 1;
    // An undeclared tool: the turn answers it with an error and asks the model again, step after step.
    return answer("still looking", [{ id: `call-${loopingCalls}`, name: "no_such_tool", arguments: {} }]);
  }
  if (script === "make a video") {
    if (last?.role === "user") return answer("", [{ id: "call-v", name: "generate_video", arguments: { prompt: "a cat" } }]);
    afterVideoCalls += 1;
    await answerHeld;
    return answer("Here is your video");
  }
  return answer("Hello");
}

const conversationDirectory = new ConversationDirectory(store, () => undefined);
const conversation = createConversationActor({
  chat,
  // The memory tools are never called by these scripts.
  memory: undefined as unknown as OrgIndex,
  directory: conversationDirectory,
  events: { publish: (event) => void published.push(event), listen: async () => async () => undefined },
});
const jobDirectory = new JobDirectory(store);
const job = createJobActor({
  video: {
    submitVideo: async (req) => ({ provider: "double", model: "double-video", task_id: req.prompt, poll_after_ms: 10, duration_seconds: 2 }),
    findVideo: async () => undefined,
    pollVideo: async () => ({ state: "succeeded", clip: { kind: "file", path: clip } }),
    cancelVideo: async () => undefined,
  },
  plan: () => ({ model: "double-video", provider: "double" }),
  narrate: async () => Promise.reject(new Error("not used")),
  compose: { concatClips, muxVoiceover, extractLastFrame },
  media: { files, fetcher: new OutboundFetcher({ allowHosts: [], maxBytes: 1 << 20, timeoutMs: 1000 }), fileUrl: (id) => `http://troupe.test/v1/files/${id}`, ownFileId: () => undefined, capabilities: new Capabilities(mediaTools) },
  catalogue: Catalogue.load([]),
  bill: async () => undefined,
  log,
  now: () => Date.now(),
  directory: jobDirectory,
  events: storeJobEventBus(store, () => undefined),
  watchdogMs: 300,
  retryBaseMs: 20,
});
const host = await createActorHost({ mode: "embedded", dataDir, actors: config.actors, clock: systemClock, log });
host.register([eraseDefinition(conversation), eraseDefinition(job)]);
await host.start();
t.teardown(async () => {
  releaseAnswer();
  await host.stop();
  await files.close();
  await store.close();
});

const owner = { organization_id: "org_1", project_id: "prj_1", environment_id: "env_1" };
const payer = { ...owner, api_key_id: "key_1", live: true };
let n = 0;
const newConversation = async () => {
  const id = `00000000-0000-4000-8000-${String(++n).padStart(12, "0")}`;
  await callActor(host, conversation, id, "create", { owner, model: null, routing_strategy: "auto", system_prompt: "", tools: [] });
  return id;
};
const eventsOf = (id: string) => published.filter((e) => e.conversation_id === id);

t.test("a turn that appends messages and then fails announces turn.failed and nothing else", async (t) => {
  const id = await newConversation();
  await t.rejects(callActor(host, conversation, id, "postMessage", { organization_id: "org_1", content: "fail after a tool", payer, request_id: "req-fail" }), {
    code: "provider_error",
  });
  // Announcements leave right after a commit; give any that leaked time to arrive.
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.same(
    eventsOf(id),
    [{ type: "turn.failed", conversation_id: id, error: { code: "provider_error", message: "the model provider failed mid-turn" } }],
    "the user, assistant and tool messages the turn appended were rolled back and never announced",
  );
  const after = await callActor(host, conversation, id, "get", { organization_id: "org_1" });
  t.same(after.messages, [], "nothing of the failed turn was kept");
  t.equal(after.status, "idle");

  const ok = await callActor(host, conversation, id, "postMessage", { organization_id: "org_1", content: "hello", payer, request_id: "req-ok" });
  t.same(ok.messages.map((m) => m.role), ["user", "assistant"]);
  t.same(
    eventsOf(id).slice(1).map((e) => (e.type === "message.appended" ? `${e.type}:${e.message.role}` : e.type)),
    ["message.appended:user", "message.appended:assistant"],
    "a committed turn announces its messages",
  );
});

t.test("a finished job hands its result over and its turn ends while the conversation's model is still answering", async (t) => {
  let release!: () => void;
  answerHeld = new Promise<void>((resolve) => (release = resolve));
  releaseAnswer = release;
  const id = await newConversation();
  const started = await callActor(host, conversation, id, "postMessage", { organization_id: "org_1", content: "make a video", payer, request_id: "req-video" });
  t.equal(started.status, "generating_media");
  const [jobSummary] = (await jobDirectory.list("org_1", 1, null)).data;
  const jobId = jobSummary!.id;

  // The job completes and calls the conversation back; the model is then asked, and holds its answer.
  await waitFor(async () => afterVideoCalls === 1, 20_000, "the model to be asked about the video");
  const jobAnswer = await Promise.race([
    callActor(host, job, jobId, "get", { organization_id: "org_1" }),
    new Promise<"busy">((resolve) => setTimeout(() => resolve("busy"), 3_000)),
  ]);
  t.match(jobAnswer, { id: jobId, status: "completed" }, "the job's actor answers: its hand-off turn ended without waiting for the model");

  release();
  await waitFor(async () => (await callActor(host, conversation, id, "get", { organization_id: "org_1" })).status === "idle", 10_000, "the conversation to be idle");
  const done = await callActor(host, conversation, id, "get", { organization_id: "org_1" });
  t.same(done.messages.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
  t.match(JSON.parse(done.messages[2]!.content), { job_id: jobId, status: "completed", result_url: /^http:\/\/troupe\.test\/v1\/files\// }, "the video's result answers the call");
  t.equal(done.messages[3]!.content, "Here is your video", "then the model's answer");
  t.equal(afterVideoCalls, 1, "the model answered once");
  t.same(
    eventsOf(id).filter((e) => e.type === "status.changed").map((e) => (e.type === "status.changed" ? e.status : "")),
    ["generating_media", "idle"],
    "the status changes are announced",
  );
});

t.test("the hand-off is durable: a process killed while the model answers answers again once it is back", async (t) => {
  // Its own actor data dir: the first host is abandoned mid-turn (as a killed process would be) and a second one starts on the same files.
  const crashDir = mkdtempSync(join(tmpdir(), "troupe-conversation-crash-"));
  const first = await createActorHost({ mode: "embedded", dataDir: crashDir, actors: config.actors, clock: systemClock, log });
  first.register([eraseDefinition(conversation), eraseDefinition(job)]);
  await first.start();
  let release!: () => void;
  answerHeld = new Promise<void>((resolve) => (release = resolve));
  const callsBefore = afterVideoCalls;
  const id = await (async () => {
    const cid = `00000000-0000-4000-9000-${String(++n).padStart(12, "0")}`;
    await callActor(first, conversation, cid, "create", { owner, model: null, routing_strategy: "auto", system_prompt: "", tools: [] });
    await callActor(first, conversation, cid, "postMessage", { organization_id: "org_1", content: "make a video", payer, request_id: "req-crash" });
    return cid;
  })();
  await waitFor(async () => afterVideoCalls === callsBefore + 1, 20_000, "the model to be asked about the video");

  // "Killed" now: the first host's answering turn never commits. Back a minute later (the reminder's period), the model answers at once.
  answerHeld = Promise.resolve();
  const later = { now: () => Date.now() + 61_000 };
  const second = await createActorHost({ mode: "embedded", dataDir: crashDir, actors: config.actors, clock: later, log });
  second.register([eraseDefinition(conversation), eraseDefinition(job)]);
  await second.start();
  t.teardown(async () => {
    await second.stop();
    release();
    await first.stop();
  });
  await waitFor(async () => (await callActor(second, conversation, id, "get", { organization_id: "org_1" })).status === "idle", 10_000, "the conversation to be idle after the restart");
  const done = await callActor(second, conversation, id, "get", { organization_id: "org_1" });
  t.same(done.messages.map((m) => m.role), ["user", "assistant", "tool", "assistant"], "the video's result once, then the answer");
  t.equal(done.messages[3]!.content, "Here is your video");
  t.equal(afterVideoCalls, callsBefore + 2, "the model was asked again after the restart");
});

t.test("a model that fails to answer the video's result leaves the conversation idle with the result kept", async (t) => {
  const id = await newConversation();
  const started = await callActor(host, conversation, id, "postMessage", { organization_id: "org_1", content: "fail after the video", payer, request_id: "req-video-fail" });
  t.equal(started.status, "generating_media");
  const statuses = () => eventsOf(id).flatMap((e) => (e.type === "status.changed" ? [e.status] : []));
  // The failed answer's turn still commits and announces the status it leaves.
  await waitFor(async () => statuses().length === 2, 20_000, "the turn after the video to end");
  const after = await callActor(host, conversation, id, "get", { organization_id: "org_1" });
  t.equal(after.status, "idle", "not left in generating_media");
  t.same(statuses(), ["generating_media", "idle"], "the return to idle is announced");
  t.same(after.messages.map((m) => m.role), ["user", "assistant", "tool"], "the video's result stays in the history");
  t.match(JSON.parse(after.messages[2]!.content), { status: "completed", result_url: /^http:\/\/troupe\.test\/v1\/files\// });
  const next = await callActor(host, conversation, id, "postMessage", { organization_id: "org_1", content: "hello again", payer, request_id: "req-after-fail" });
  t.equal(next.messages.at(-1)!.content, "Hello", "the next message is accepted and answered");
});

t.test("a turn whose model keeps calling tools stops after 8 model steps, idle, saying so", async (t) => {
  const id = await newConversation();
  loopingCalls = 0;
  const done = await callActor(host, conversation, id, "postMessage", { organization_id: "org_1", content: "keep calling tools", payer, request_id: "req-loop" });
  // 8 as written in docs/api/agents.md ("a turn has at most 8 model steps"), not the constant: the bound itself is what is checked.
  t.equal(loopingCalls, 8, "the model was asked 8 times");
  t.equal(done.status, "idle");
  t.equal(done.messages.length, 1 + 8 * 2 + 1, "the user message, 8 assistant messages each with its tool error, the closing message");
  t.same(done.messages.at(-1), {
    id: done.messages.at(-1)!.id,
    role: "assistant",
    content: "I stopped after 8 model steps in this turn without reaching a final answer. Send another message to continue.",
    tool_calls: null,
    tool_call_id: null,
  });
});
