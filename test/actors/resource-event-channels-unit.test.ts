// The live conversation and job event buses (actors/conversation/events.ts,
// actors/job/events.ts) on the in-memory store's channels. What it proves:
// - a conversation's events go out on `conversation-events:<conversation id>`,
//   a job's on `job-events:<job id>`, as the event's exact JSON;
// - a listener on one resource gets exactly that resource's events, every
//   field as published, in order, and nothing after it stops;
// - the two buses do not share channels.
import t from "tap";
import { storeConversationEventBus, type ConversationEvent } from "../../actors/conversation/events.ts";
import { storeJobEventBus, type JobEvent } from "../../actors/job/events.ts";
import type { Job } from "../../actors/job/types.ts";
import { MemoryDataStore } from "../support/memory-data-store.ts";

const createdAt = "2026-12-04T18:00:00.000Z";

function job(id: string, overrides: Partial<Job> = {}): Job {
  return {
    id,
    category: "video",
    type: "text_to_video",
    status: "processing",
    provider: "fake",
    model: "fake-video",
    progress: 0.45,
    segments: [{ index: 0, prompt: "a lighthouse at dusk", status: "processing", progress: 0.5, provider: "fake", model: "fake-video" }],
    result_url: null,
    error: null,
    created_at: createdAt,
    updated_at: createdAt,
    ...overrides,
  };
}

const appended: ConversationEvent = {
  type: "message.appended",
  conversation_id: "cnv_1",
  message: { id: "msg_1", role: "assistant", content: "Hello.", tool_calls: null, tool_call_id: null },
};
const status: ConversationEvent = { type: "status.changed", conversation_id: "cnv_1", status: "requires_action" };
const failed: ConversationEvent = { type: "turn.failed", conversation_id: "cnv_1", error: { code: "provider_error", message: "the provider answered HTTP 503" } };
const elsewhere: ConversationEvent = { type: "status.changed", conversation_id: "cnv_2", status: "idle" };

t.test("conversation events: on conversation-events:<id>, each listener hears its own conversation's", async (t) => {
  const store = new MemoryDataStore();
  const errors: unknown[] = [];
  const bus = storeConversationEventBus(store, (error) => errors.push(error));
  const heard: ConversationEvent[] = [];
  const jsons: string[] = [];
  const stop = await bus.listen("cnv_1", (event, json) => {
    heard.push(event);
    jsons.push(json);
  });
  t.strictSame(store.take(), [{ call: "subscribe", channel: "conversation-events:cnv_1" }]);
  for (const event of [appended, elsewhere, status, failed]) bus.publish(event);
  await new Promise((resolve) => setImmediate(resolve));
  t.strictSame(
    store.take(),
    [appended, elsewhere, status, failed].map((event) => ({ call: "publish", channel: `conversation-events:${event.conversation_id}`, message: JSON.stringify(event) })),
    "each on its conversation's channel, as JSON",
  );
  t.strictSame(heard, [appended, status, failed], "cnv_1's events, every field, in order");
  t.strictSame(jsons, [appended, status, failed].map((event) => JSON.stringify(event)), "with their JSON");
  await stop();
  bus.publish(status);
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(heard.length, 3, "nothing after it stopped");
  t.strictSame(errors, []);
});

t.test("job events: on job-events:<id>, each listener hears its own job's", async (t) => {
  const store = new MemoryDataStore();
  const errors: unknown[] = [];
  const bus = storeJobEventBus(store, (error) => errors.push(error));
  const heard: JobEvent[] = [];
  await bus.listen("job_1", (event) => heard.push(event));
  t.strictSame(store.take(), [{ call: "subscribe", channel: "job-events:job_1" }]);
  const progress: JobEvent = { type: "job.updated", job_id: "job_1", job: job("job_1") };
  const other: JobEvent = { type: "job.updated", job_id: "job_2", job: job("job_2") };
  const done: JobEvent = { type: "job.updated", job_id: "job_1", job: job("job_1", { status: "completed", progress: 1, result_url: "https://files.example.test/job_1.mp4" }) };
  for (const event of [progress, other, done]) bus.publish(event);
  await new Promise((resolve) => setImmediate(resolve));
  t.strictSame(
    store.take(),
    [progress, other, done].map((event) => ({ call: "publish", channel: `job-events:${event.job_id}`, message: JSON.stringify(event) })),
  );
  t.strictSame(heard, [progress, done], "job_1's events, every field, in order");
  t.strictSame(errors, []);
});

t.test("the conversation and job buses do not share channels", async (t) => {
  const store = new MemoryDataStore();
  const conversations = storeConversationEventBus(store, () => undefined);
  const jobs = storeJobEventBus(store, () => undefined);
  const onConversation: ConversationEvent[] = [];
  const onJob: JobEvent[] = [];
  await conversations.listen("same_1", (event) => onConversation.push(event));
  await jobs.listen("same_1", (event) => onJob.push(event));
  const jobEvent: JobEvent = { type: "job.updated", job_id: "same_1", job: job("same_1") };
  const conversationEvent: ConversationEvent = { type: "status.changed", conversation_id: "same_1", status: "generating_media" };
  jobs.publish(jobEvent);
  conversations.publish(conversationEvent);
  await new Promise((resolve) => setImmediate(resolve));
  t.strictSame(onJob, [jobEvent]);
  t.strictSame(onConversation, [conversationEvent]);
});
