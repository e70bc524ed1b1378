// The WebhookPublisher is the one place attempt results are batched: results
// reported while a call for the webhook runs wait and ride in its next accept
// (or go together in one settle call when no event waits). A fake actor host
// records each call and holds it until released.
import t from "tap";
import type { ActorHost } from "../../actors/host.ts";
import type { WebhookDirectory } from "../../actors/webhooks/directory.ts";
import { WebhookPublisher } from "../../actors/webhooks/publisher.ts";
import type { AttemptResult } from "../../actors/webhooks/types.ts";
import { actorRef } from "../../actors/actor.ts";
import { WEBHOOK_ACTOR, type WebhookActorDefinition } from "../../actors/webhooks/webhook-actor.ts";
import type { OrganizationEvent } from "../../core/organization-events.ts";

interface Call {
  method: string;
  input: { events?: Array<{ id: string }>; results?: AttemptResult[] };
  release: () => void;
}

function setup() {
  const calls: Call[] = [];
  const host = {
    call: (_type: string, _id: string, method: string, input: unknown) =>
      new Promise((resolve) => calls.push({ method, input: input as Call["input"], release: () => resolve(method === "accept" ? { accepted: [] } : { settled: 0 }) })),
  } as unknown as ActorHost;
  const directory = { subscribed: async () => ["whk_1"] } as unknown as WebhookDirectory;
  const publisher = new WebhookPublisher({ actors: host, actor: actorRef<WebhookActorDefinition>(WEBHOOK_ACTOR), directory });
  return { calls, publisher };
}

const result = (n: number): AttemptResult => ({ delivery_id: `dlv_${n}`, status: 200, error: null, retry_after: null, duration_ms: 1 });
const event = (n: number): OrganizationEvent => ({
  id: `evt_${n}`,
  type: "webhook.test",
  organization_id: "org_1",
  project_id: null,
  environment_id: null,
  created_at: "2026-11-25T12:00:00.000Z",
  data: { webhook_id: "whk_1" },
});
const settle = () => new Promise((resolve) => setImmediate(resolve));

t.test("results reported while a call runs ride in the next accept; alone they go in one settle call", async (t) => {
  const { calls, publisher } = setup();
  const first = publisher.publish(event(1));
  await settle();
  t.equal(calls.length, 1, "the first accept is running");
  void publisher.report("whk_1", [result(1)]);
  void publisher.report("whk_1", [result(2)]);
  const second = publisher.publish(event(2));
  await settle();
  t.equal(calls.length, 1, "nothing else is sent while it runs");
  calls[0]!.release();
  await first;
  await settle();
  t.equal(calls.length, 2);
  t.same(calls[1]!.method, "accept");
  t.same(calls[1]!.input.events?.map((e) => e.id), ["evt_2"], "the waiting event");
  t.same(calls[1]!.input.results?.map((r) => r.delivery_id), ["dlv_1", "dlv_2"], "with both reports' results, in one turn");

  void publisher.report("whk_1", [result(3)]);
  void publisher.report("whk_1", [result(4)]);
  calls[1]!.release();
  await second;
  await settle();
  t.equal(calls.length, 3);
  t.equal(calls[2]!.method, "settle", "no event waits: a settle call");
  t.same(calls[2]!.input.results?.map((r) => r.delivery_id), ["dlv_3", "dlv_4"], "carrying both reports together");
  calls[2]!.release();
  await settle();
  t.equal(calls.length, 3, "nothing more");
});
