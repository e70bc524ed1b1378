// The WebhookPublisher (actors/webhooks/publisher.ts) in process, with an
// actor host double that records each call (type, id, method, input) and
// holds it until the test answers or fails it, and a directory double that
// records what it is asked. No clock: the publisher reads none. What it pins:
// - publish asks the directory for the event's subscribed webhooks (by the
//   event and its type), sends each one an accept of the payload
//   `{id, type, created_at, data}` with the event's organization, and
//   resolves only once every one of them has accepted; no subscriber: no call;
// - per webhook one call at a time: events published while it runs wait and
//   go together in the next accept, in their order, at most 200 a call
//   (201 waiting: 200, then 1); another webhook is never held by it;
// - events of another organization for the same webhook wait for a call of
//   their own, after the first organization's, in order;
// - results reported while a call runs ride in its next accept (and that
//   report resolves at once); with no event after them they go together in
//   one settle call; reported alone they go in a settle call whose end the
//   report waits for; an empty report alone sends nothing;
// - a failed accept rejects each of its publishes with the actor's error, and
//   its carried results are still recorded in a settle call of their own (a
//   failure of that settle ignored); without carried results nothing more is
//   sent; the next waiting events still go;
// - a failed settle rejects its report and is not sent again;
// - idle waits until no call started here runs.
import t from "tap";
import type { ActiveActorCount, ActorHost } from "../../actors/host.ts";
import type { WebhookDirectory } from "../../actors/webhooks/directory.ts";
import { WebhookPublisher } from "../../actors/webhooks/publisher.ts";
import type { AttemptResult, EventOrigin, EventPayload } from "../../actors/webhooks/types.ts";
import { actorRef } from "../../actors/actor.ts";
import { WEBHOOK_ACTOR, type WebhookActorDefinition } from "../../actors/webhooks/webhook-actor.ts";
import type { OrganizationEvent } from "../../core/organization-events.ts";

interface Call {
  type: string;
  id: string;
  method: string;
  input: unknown;
  answer: () => void;
  fail: (error: unknown) => void;
}

/** An ActorHost whose calls wait for the test; only `call` is used by the publisher. */
function heldHost(): { host: ActorHost; calls: Call[] } {
  const calls: Call[] = [];
  const none: ActiveActorCount[] = [];
  const host: ActorHost = {
    register: () => undefined,
    start: async () => undefined,
    call: (type, id, method, input) =>
      new Promise((resolve, reject) => {
        calls.push({ type, id, method, input, answer: () => resolve(method === "accept" ? { accepted: [] } : { settled: 0 }), fail: reject });
      }),
    callJson: async () => "null",
    activeActors: () => none,
    runtimeActiveActors: async () => none,
    ready: async () => true,
    stop: async () => undefined,
  };
  return { host, calls };
}

function setup(subscribers: (origin: EventOrigin, type: string) => string[] = () => ["whk_1"]) {
  const { host, calls } = heldHost();
  const asked: Array<{ origin: EventOrigin; type: string }> = [];
  const subscribed = async (origin: EventOrigin, type: string) => {
    asked.push({ origin, type });
    return subscribers(origin, type);
  };
  // The publisher only asks the directory for `subscribed`.
  const directory = { subscribed } satisfies Pick<WebhookDirectory, "subscribed"> as unknown as WebhookDirectory;
  const publisher = new WebhookPublisher({ actors: host, actor: actorRef<WebhookActorDefinition>(WEBHOOK_ACTOR), directory });
  return { calls, publisher, asked };
}

const result = (n: number): AttemptResult => ({ delivery_id: `dlv_${n}`, status: 200, error: null, retry_after: null, duration_ms: n });
const event = (n: number, organizationId = "org_1"): OrganizationEvent => ({
  id: `evt_${n}`,
  type: "webhook.test",
  organization_id: organizationId,
  project_id: "prj_1",
  environment_id: "env_1",
  created_at: "2026-11-25T12:00:00.000Z",
  data: { webhook_id: "whk_1" },
});
const payload = (n: number): EventPayload => ({ id: `evt_${n}`, type: "webhook.test", created_at: "2026-11-25T12:00:00.000Z", data: { webhook_id: "whk_1" } });
const accept = (organizationId: string, events: EventPayload[], results: AttemptResult[] = []) => ({ organization_id: organizationId, events, results });

/** Lets every promise chain already started run to its end. */
const settleTurn = () => new Promise((resolve) => setImmediate(resolve));

/** How a promise has settled so far. */
function watch(promise: Promise<unknown>): { state: () => "pending" | "resolved" | "rejected"; error: () => unknown } {
  let state: "pending" | "resolved" | "rejected" = "pending";
  let error: unknown;
  promise.then(
    () => (state = "resolved"),
    (e: unknown) => {
      state = "rejected";
      error = e;
    },
  );
  return { state: () => state, error: () => error };
}

t.test("publish: the directory is asked by event and type; each subscriber accepts the payload; resolves once all have", async (t) => {
  const { calls, publisher, asked } = setup(() => ["whk_1", "whk_2"]);
  const published = watch(publisher.publish(event(1)));
  await settleTurn();
  t.same(asked, [{ origin: event(1), type: "webhook.test" }]);
  t.same(
    calls.map((c) => [c.type, c.id, c.method, c.input]),
    [
      [WEBHOOK_ACTOR, "whk_1", "accept", accept("org_1", [payload(1)])],
      [WEBHOOK_ACTOR, "whk_2", "accept", accept("org_1", [payload(1)])],
    ],
    "one accept per subscriber, the payload without routing fields, no results",
  );
  calls[1]!.answer();
  await settleTurn();
  t.equal(published.state(), "pending", "one webhook has not accepted yet");
  calls[0]!.answer();
  await settleTurn();
  t.equal(published.state(), "resolved");
  await publisher.idle();
  t.equal(calls.length, 2, "nothing more");
});

t.test("no subscriber: publish resolves and nothing is called", async (t) => {
  const { calls, publisher } = setup(() => []);
  await publisher.publish(event(1));
  await publisher.idle();
  t.same(calls, []);
});

t.test("events published while a webhook's call runs go together in its next accept, in order; other webhooks are not held", async (t) => {
  const { calls, publisher } = setup((origin) => (origin.project_id === "other" ? ["whk_2"] : ["whk_1"]));
  const first = watch(publisher.publish(event(1)));
  await settleTurn();
  const second = watch(publisher.publish(event(2)));
  const third = watch(publisher.publish(event(3)));
  const elsewhere = watch(publisher.publish({ ...event(9), project_id: "other" }));
  await settleTurn();
  t.same(
    calls.map((c) => [c.id, c.input]),
    [
      ["whk_1", accept("org_1", [payload(1)])],
      ["whk_2", accept("org_1", [payload(9)])],
    ],
    "whk_2's accept does not wait for whk_1's",
  );
  calls[1]!.answer();
  await settleTurn();
  t.equal(elsewhere.state(), "resolved");
  calls[0]!.answer();
  await settleTurn();
  t.equal(first.state(), "resolved");
  t.equal(second.state(), "pending");
  t.same(calls[2]!.input, accept("org_1", [payload(2), payload(3)]), "the waiting events, in one accept");
  calls[2]!.answer();
  await settleTurn();
  t.equal(second.state(), "resolved");
  t.equal(third.state(), "resolved");
  await publisher.idle();
  t.equal(calls.length, 3);
});

t.test("at most 200 events a call: 201 waiting go as 200, then 1", async (t) => {
  const { calls, publisher } = setup();
  const published: Array<Promise<void>> = [publisher.publish(event(0))];
  await settleTurn();
  for (let n = 1; n <= 201; n++) published.push(publisher.publish(event(n)));
  await settleTurn();
  t.equal(calls.length, 1);
  calls[0]!.answer();
  await settleTurn();
  const ids = (c: Call) => (c.input as { events: EventPayload[] }).events.map((e) => e.id);
  t.equal(ids(calls[1]!).length, 200);
  t.equal(ids(calls[1]!)[0], "evt_1");
  t.equal(ids(calls[1]!)[199], "evt_200");
  calls[1]!.answer();
  await settleTurn();
  t.same(ids(calls[2]!), ["evt_201"]);
  calls[2]!.answer();
  await Promise.all(published);
  await publisher.idle();
  t.equal(calls.length, 3);
});

t.test("200 waiting events go in one call", async (t) => {
  const { calls, publisher } = setup();
  const published: Array<Promise<void>> = [publisher.publish(event(0))];
  await settleTurn();
  for (let n = 1; n <= 200; n++) published.push(publisher.publish(event(n)));
  await settleTurn();
  calls[0]!.answer();
  await settleTurn();
  t.equal((calls[1]!.input as { events: EventPayload[] }).events.length, 200);
  calls[1]!.answer();
  await Promise.all(published);
  await publisher.idle();
  t.equal(calls.length, 2);
});

t.test("another organization's events for the webhook wait for a call of their own, after the first's", async (t) => {
  const { calls, publisher } = setup();
  const published = [publisher.publish(event(1, "org_a"))];
  await settleTurn();
  published.push(publisher.publish(event(2, "org_b")), publisher.publish(event(3, "org_a")), publisher.publish(event(4, "org_b")), publisher.publish(event(5, "org_a")));
  await settleTurn();
  void publisher.report("whk_1", [result(1)]);
  calls[0]!.answer();
  await settleTurn();
  t.same(calls[1]!.input, accept("org_b", [payload(2), payload(4)], [result(1)]), "the oldest waiting event's organization first, with the carried results");
  calls[1]!.answer();
  await settleTurn();
  t.same(calls[2]!.input, accept("org_a", [payload(3), payload(5)]), "then the others, in order");
  calls[2]!.answer();
  await Promise.all(published);
  await publisher.idle();
  t.equal(calls.length, 3);
});

t.test("results reported while a call runs: the report resolves at once and they ride in the next accept", async (t) => {
  const { calls, publisher } = setup();
  void publisher.publish(event(1));
  await settleTurn();
  const reported = watch(publisher.report("whk_1", [result(1), result(2)]));
  const again = watch(publisher.report("whk_1", [result(3)]));
  const next = publisher.publish(event(2));
  await settleTurn();
  t.equal(reported.state(), "resolved", "taken by the running drain");
  t.equal(again.state(), "resolved");
  t.equal(calls.length, 1, "nothing else is sent while the call runs");
  calls[0]!.answer();
  await settleTurn();
  t.same(calls[1]!.input, accept("org_1", [payload(2)], [result(1), result(2), result(3)]), "both reports' results in the accept");
  calls[1]!.answer();
  await next;
  await publisher.idle();
  t.equal(calls.length, 2, "no settle call: the accept carried them");
});

t.test("results reported while a call runs with no event after them go together in one settle call", async (t) => {
  const { calls, publisher } = setup();
  const published = publisher.publish(event(1));
  await settleTurn();
  void publisher.report("whk_1", [result(1)]);
  void publisher.report("whk_1", [result(2)]);
  calls[0]!.answer();
  await published;
  await settleTurn();
  t.same(
    calls.map((c) => [c.id, c.method, c.input]),
    [
      ["whk_1", "accept", accept("org_1", [payload(1)])],
      ["whk_1", "settle", { results: [result(1), result(2)] }],
    ],
  );
  const idle = watch(publisher.idle());
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.equal(idle.state(), "pending", "idle waits for the settle call");
  calls[1]!.answer();
  await publisher.idle();
  t.equal(idle.state(), "resolved");
  t.equal(calls.length, 2);
});

t.test("results reported alone go in a settle call; the report resolves when it ends", async (t) => {
  const { calls, publisher } = setup();
  const reported = watch(publisher.report("whk_3", [result(1), result(2)]));
  await settleTurn();
  t.same(
    calls.map((c) => [c.type, c.id, c.method, c.input]),
    [[WEBHOOK_ACTOR, "whk_3", "settle", { results: [result(1), result(2)] }]],
  );
  t.equal(reported.state(), "pending");
  // Reported while that settle runs: they wait for a call of their own.
  const later = watch(publisher.report("whk_3", [result(3)]));
  await settleTurn();
  t.equal(later.state(), "resolved");
  t.equal(calls.length, 1);
  calls[0]!.answer();
  await settleTurn();
  t.equal(reported.state(), "resolved");
  t.same(calls[1]!.input, { results: [result(3)] });
  calls[1]!.answer();
  await publisher.idle();
  t.equal(calls.length, 2);
});

t.test("an event published while a settle call runs goes in an accept after it", async (t) => {
  const { calls, publisher } = setup();
  void publisher.report("whk_1", [result(1)]);
  await settleTurn();
  const published = watch(publisher.publish(event(1)));
  await settleTurn();
  t.equal(calls.length, 1);
  calls[0]!.answer();
  await settleTurn();
  t.same(calls[1]!.input, accept("org_1", [payload(1)]), "the settled results are not sent again");
  calls[1]!.answer();
  await settleTurn();
  t.equal(published.state(), "resolved");
  await publisher.idle();
  t.equal(calls.length, 2);
});

t.test("an empty report alone sends nothing and resolves", async (t) => {
  const { calls, publisher } = setup();
  await publisher.report("whk_1", []);
  await publisher.idle();
  t.same(calls, []);
  // and leaves nothing behind: the next accept carries no results
  const published = publisher.publish(event(1));
  await settleTurn();
  t.same(calls[0]!.input, accept("org_1", [payload(1)]));
  calls[0]!.answer();
  await published;
});

t.test("a failed accept rejects its publishes with the actor's error; its carried results are settled on their own", async (t) => {
  const { calls, publisher } = setup();
  void publisher.publish(event(1));
  await settleTurn();
  void publisher.report("whk_1", [result(1)]);
  const second = watch(publisher.publish(event(2)));
  const third = watch(publisher.publish(event(3)));
  calls[0]!.answer();
  await settleTurn();
  t.same(calls[1]!.input, accept("org_1", [payload(2), payload(3)], [result(1)]));
  const overloaded = new Error("actor overloaded");
  const fourth = watch(publisher.publish(event(4)));
  await settleTurn();
  calls[1]!.fail(overloaded);
  await settleTurn();
  t.equal(second.state(), "rejected");
  t.equal(second.error(), overloaded, "the actor's error itself");
  t.equal(third.error(), overloaded);
  t.same(
    calls.slice(2).map((c) => [c.method, c.input]),
    [["settle", { results: [result(1)] }]],
    "the carried results, recorded on their own",
  );
  calls[2]!.fail(new Error("still overloaded")); // ignored: their leases expire and they go again
  await settleTurn();
  t.same(
    calls.slice(3).map((c) => [c.method, c.input]),
    [["accept", accept("org_1", [payload(4)])]],
    "the next waiting event still goes, without the results",
  );
  calls[3]!.answer();
  await settleTurn();
  t.equal(fourth.state(), "resolved");
  await publisher.idle();
  t.equal(calls.length, 4);
});

t.test("a failed accept without carried results sends nothing more", async (t) => {
  const { calls, publisher } = setup();
  const refused = new Error("moving");
  const published = watch(publisher.publish(event(1)));
  await settleTurn();
  calls[0]!.fail(refused);
  await settleTurn();
  t.equal(published.error(), refused);
  await publisher.idle();
  t.equal(calls.length, 1);
});

t.test("a failed accept's results settle call: the drain goes on once it ends", async (t) => {
  const { calls, publisher } = setup();
  void publisher.publish(event(1));
  await settleTurn();
  void publisher.report("whk_1", [result(1)]);
  const second = publisher.publish(event(2)).catch((e: unknown) => e);
  calls[0]!.answer();
  await settleTurn();
  const third = watch(publisher.publish(event(3)));
  calls[1]!.fail(new Error("refused"));
  await settleTurn();
  t.same(
    calls.map((c) => c.method),
    ["accept", "accept", "settle"],
    "the settle call runs before the next accept",
  );
  calls[2]!.answer();
  await settleTurn();
  t.same(calls[3]!.input, accept("org_1", [payload(3)]));
  calls[3]!.answer();
  await settleTurn();
  t.equal(third.state(), "resolved");
  t.ok((await second) instanceof Error);
});

t.test("a failed settle rejects its report and is not sent again", async (t) => {
  const { calls, publisher } = setup();
  const gone = new Error("actor gone");
  const reported = watch(publisher.report("whk_1", [result(1)]));
  await settleTurn();
  calls[0]!.fail(gone);
  await settleTurn();
  t.equal(reported.state(), "rejected");
  t.equal(reported.error(), gone);
  await publisher.idle();
  t.equal(calls.length, 1, "no second settle: the results' leases expire and they go again");
});

t.test("a failed settle of results left over after a call is not reported anywhere", async (t) => {
  const { calls, publisher } = setup();
  const published = publisher.publish(event(1));
  await settleTurn();
  void publisher.report("whk_1", [result(1)]);
  calls[0]!.answer();
  await published;
  await settleTurn();
  t.equal(calls[1]!.method, "settle");
  calls[1]!.fail(new Error("refused")); // no unhandled rejection: the run would fail
  await publisher.idle();
  t.equal(calls.length, 2);
});

t.test("idle resolves at once with nothing running, and waits for a running accept", async (t) => {
  const { calls, publisher } = setup();
  await publisher.idle();
  void publisher.publish(event(1));
  await settleTurn();
  const idle = watch(publisher.idle());
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.equal(idle.state(), "pending");
  calls[0]!.answer();
  await publisher.idle();
  t.equal(idle.state(), "resolved");
});
