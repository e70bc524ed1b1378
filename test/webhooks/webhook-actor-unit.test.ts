// The WebhookActor (actors/webhooks/webhook-actor.ts) in process, without a
// host: each method's `run` is called with a turn context the test builds —
// a clock it moves by hand, recorded setReminder / clearReminder calls and
// afterCommit functions it runs itself (the commit) — over a real
// DeliveryLog on an in-memory store that records every batch, a recording
// directory, a secret box double and a recording dispatch and announce. Every
// effect lands in one ordered trail, so each test checks what a turn does and
// in which order. What it pins:
// - the method inputs: the defaults (environment_id, audience, results,
//   from_reminder), at least one event, a page of 1 to 100;
// - create: the stored webhook field by field (sealed secret, created_at at
//   the clock's time), the directory told with its audience, a second create
//   refused; get, and who owns a webhook: another organization, another
//   environment's key, a key on an organization's webhook are 404s;
// - the wiring of a writing turn: the "deliver" reminder armed as
//   (due − now, never negative, period timeout + 6 s, pump from_reminder)
//   or cleared; the directory told only when the status changed; the
//   records written before the attempts leave (dispatch with the webhook's
//   id, the opened secret, `dlv_` ids made at the clock's time); outcomes
//   announced only at the commit, and no announce dependency is fine;
// - the retry schedule through the actor: ten attempts, each due after the
//   documented wait (one ms early sends nothing), the attempt counted on each
//   record, then the webhook disabled with the exact reason;
// - a legacy plaintext secret sealed by the next writing turn (once), a
//   secret no longer openable disabling the webhook;
// - deactivate and erase (records and kept events deleted, the reminder
//   cleared, the state back to the initial one), test and retry (their
//   refusals and texts, a waiting entry sent now, an attempt out kept, a
//   finished event requeued, one no longer kept refused), delivery and the
//   deliveries pages (cursor, limit and next_cursor at each boundary).
import t from "tap";
import { documentedDelaysMs, second } from "../support/documented-webhook-schedule.ts";
import type { z } from "zod";
import type { ActorContext } from "../../actors/actor.ts";
import { DeliveryLog } from "../../actors/webhooks/delivery-log.ts";
import { WebhookDirectory } from "../../actors/webhooks/directory.ts";
import type { SecretBox } from "../../actors/webhooks/secret-box.ts";
import {
  webhookStateSchema,
  type AttemptResult,
  type Delivery,
  type DispatchedAttempt,
  type EventPayload,
  type OutboxEntry,
  type StoredWebhook,
  type Webhook,
  type WebhookAudience,
  type WebhookState,
} from "../../actors/webhooks/types.ts";
import { createWebhookActor, MAX_RECENT_EVENTS, WEBHOOK_ACTOR, type WebhookActorDefinition } from "../../actors/webhooks/webhook-actor.ts";
import type { WebhooksConfig } from "../../core/config.ts";
import type { DataStore, StoreOp } from "../../core/data-store.ts";
import { prefixedId } from "../../core/ids.ts";
import { createLogger } from "../../core/log.ts";
import { MemoryDataStore } from "../support/memory-data-store.ts";
import { rejectedWith } from "../support/thrown-by.ts";

const t0 = Date.parse("2026-11-25T12:00:00.000Z");
const iso = (ms: number): string => new Date(ms).toISOString();
// timeoutMs 1000: the lease is 6 s, the reminder's period 7 s.
const lease = 6000;
const period = 7000;
const config: WebhooksConfig = { timeoutMs: 1000, retryScale: 1, maxDeliveries: 100, endpointsPerOrganization: 20, secretKey: undefined };
const url = "https://hooks.example/in";
const audience: WebhookAudience = { environment_id: "env_1", project_id: "prj_1", live: true };

type Trail =
  | { op: "apply"; ops: StoreOp[] }
  | { op: "dispatch"; webhookId: string; attempts: DispatchedAttempt[] }
  | { op: "announce"; webhookId: string; record: Delivery }
  | { op: "setReminder"; name: string; dueMs: number; periodMs: number | undefined; method: string; input: unknown }
  | { op: "clearReminder"; name: string }
  | { op: "directory"; kind: "created" | "updated"; organizationId: string; webhook: Webhook; audience: WebhookAudience };

/** The shared in-memory store, each batch also written to the harness's trail (in order with the dispatches and reminders). */
class TrailStore extends MemoryDataStore {
  private readonly trail: Trail[];
  constructor(trail: Trail[]) {
    super();
    this.trail = trail;
  }
  override async apply(ops: StoreOp[]): Promise<void> {
    this.trail.push({ op: "apply", ops: structuredClone(ops) });
    await super.apply(ops);
  }
}

/** Records what the actor tells the directory (a copy of the webhook as it was then). */
class RecordingDirectory extends WebhookDirectory {
  private readonly trail: Trail[];
  constructor(store: DataStore, trail: Trail[]) {
    super(store);
    this.trail = trail;
  }
  override async created(organizationId: string, webhook: Webhook, audience: WebhookAudience = null): Promise<void> {
    this.trail.push({ op: "directory", kind: "created", organizationId, webhook: structuredClone(webhook), audience });
  }
  override async updated(organizationId: string, webhook: Webhook, audience: WebhookAudience = null): Promise<void> {
    this.trail.push({ op: "directory", kind: "updated", organizationId, webhook: structuredClone(webhook), audience });
  }
}

type Def = WebhookActorDefinition;
type Methods = Def["methods"];
type MethodName = keyof Methods & string;
type MethodInput<K extends MethodName> = z.input<Methods[K]["input"]>;
type MethodOutput<K extends MethodName> = Awaited<ReturnType<Methods[K]["run"]>>;
/** The turn context the actor's methods take. */
type Inputs = Parameters<Def["methods"]["create"]["run"]>[0];

/** One webhook actor, its turn context and the world around it. */
class Harness {
  now = t0;
  readonly trail: Trail[] = [];
  readonly store = new TrailStore(this.trail);
  readonly directory = new RecordingDirectory(this.store, this.trail);
  /** Plaintexts sealed. */
  readonly sealed: string[] = [];
  /** Values opened. */
  readonly opened: string[] = [];
  /** The secret box cannot open what it sealed (the key changed). */
  keyChanged = false;
  readonly actor: Def;
  state: WebhookState;
  private commits: Array<() => unknown> = [];

  constructor(options: { announce?: boolean; config?: Partial<WebhooksConfig> } = {}) {
    const secrets: SecretBox = {
      seal: (plaintext) => {
        this.sealed.push(plaintext);
        return `sealed(${plaintext})`;
      },
      isSealed: (stored) => stored.startsWith("sealed("),
      open: (stored) => {
        this.opened.push(stored);
        if (!stored.startsWith("sealed(")) return stored;
        if (this.keyChanged) throw new Error("Unsupported state or unable to authenticate data");
        return stored.slice("sealed(".length, -1);
      },
    };
    this.actor = createWebhookActor({
      dispatch: (webhookId, attempts) => this.trail.push({ op: "dispatch", webhookId, attempts: structuredClone(attempts) }),
      ...(options.announce === false ? {} : { announce: (webhookId: string, record: Delivery) => this.trail.push({ op: "announce", webhookId, record }) }),
      directory: this.directory,
      log: new DeliveryLog(this.store),
      config: { ...config, ...options.config },
      secrets,
    });
    this.state = this.actor.initialState();
  }

  /** A turn's context over the current state; its afterCommit functions wait for `commit`. */
  ctx(): Inputs {
    const trail = this.trail;
    const harness = this;
    const ctx: ActorContext<WebhookState> = {
      type: WEBHOOK_ACTOR,
      id: "whk_1",
      get state() {
        return harness.state;
      },
      set state(s: WebhookState) {
        harness.state = s;
      },
      clock: { now: () => this.now },
      ids: { uuid: () => "00000000-0000-4000-8000-000000000000" },
      log: createLogger("silent"),
      call: () => Promise.reject(new Error("the webhook actor calls no actor")),
      setTimer: () => Promise.reject(new Error("the webhook actor sets no timer")),
      clearTimer: () => Promise.reject(new Error("the webhook actor sets no timer")),
      setReminder: async (name, dueMs, periodMs, method, input) => void trail.push({ op: "setReminder", name, dueMs, periodMs, method, input }),
      clearReminder: async (name) => void trail.push({ op: "clearReminder", name }),
      afterCommit: (fn) => void this.commits.push(fn),
    };
    return ctx as unknown as Inputs;
  }

  /** Runs one method's turn as a host does (input parsed by its schema, a state the schema accepts), without committing it. */
  async turn<K extends MethodName>(method: K, raw: MethodInput<K>): Promise<MethodOutput<K>> {
    const m = this.actor.methods[method] as unknown as { input: { parse(v: unknown): unknown }; run: (ctx: Inputs, input: unknown) => Promise<MethodOutput<K>> };
    this.commits = [];
    const out = await m.run(this.ctx(), m.input.parse(raw));
    webhookStateSchema.parse(this.state);
    return out;
  }

  /** The commit: the turn's afterCommit functions run. */
  commit(): void {
    for (const fn of this.commits.splice(0)) fn();
  }

  /** A turn and its commit. */
  async call<K extends MethodName>(method: K, raw: MethodInput<K>): Promise<MethodOutput<K>> {
    const out = await this.turn(method, raw);
    this.commit();
    return out;
  }

  /** The trail since the last call to `take`, emptied. */
  take(): Trail[] {
    return this.trail.splice(0);
  }

  async create(a: WebhookAudience = null, events: Webhook["events"] = ["job.completed", "job.failed"]): Promise<void> {
    await this.call("create", { organization_id: "org_1", url, events, secret: "whsec_plain", audience: a });
    this.take();
  }

  entry(eventId: string): OutboxEntry {
    const found = this.state.outbox.find((e) => e.event.id === eventId);
    if (!found) throw new Error(`${eventId} is not in the outbox`);
    return found;
  }

  webhook(): StoredWebhook {
    if (!this.state.webhook) throw new Error("no webhook");
    return this.state.webhook;
  }

  doc(key: string): unknown {
    return this.store.docs.get(key);
  }
}

const event = (id: string, type: EventPayload["type"] = "job.completed"): EventPayload => ({ id, type, created_at: iso(t0), data: { n: id } });
const ok = (delivery_id: string, status = 200): AttemptResult => ({ delivery_id, status, error: null, retry_after: null, duration_ms: 12 });
const fail = (delivery_id: string, status: number | null = 500, retry_after: string | null = null): AttemptResult => ({
  delivery_id,
  status,
  error: `the receiver answered HTTP ${status}`,
  retry_after,
  duration_ms: 7,
});
const recordKey = (id: string) => `webhook-delivery:whk_1:${id}`;
const eventKey = (id: string) => `webhook-event:whk_1:${id}`;
const reminder = (dueMs: number): Trail => ({ op: "setReminder", name: "deliver", dueMs, periodMs: period, method: "pump", input: { from_reminder: true } });
const clear: Trail = { op: "clearReminder", name: "deliver" };
/** The `dlv_` id prefix (the ULID's time part) of an id made at `ms`. */
const idTimeOf = (ms: number): string => prefixedId("dlv", ms).slice(0, 14);
const dispatched = (trail: Trail[]): DispatchedAttempt[] => trail.flatMap((c) => (c.op === "dispatch" ? c.attempts : []));
const pub = (h: Harness): Webhook => {
  const { id, url: u, events, status, disabled_reason, created_at } = h.webhook();
  return { id, url: u, events, status, disabled_reason, created_at };
};

/** Accepts one event at the clock's time and answers its delivery id. */
async function acceptOne(h: Harness, id: string): Promise<string> {
  await h.call("accept", { organization_id: "org_1", events: [event(id)] });
  return h.entry(id).delivery_id;
}

t.test("the inputs: environment_id, audience, results and from_reminder default; at least one event; a page of 1 to 100", async (t) => {
  const h = new Harness();
  const m = h.actor.methods;
  t.strictSame(m.get.input.parse({ organization_id: "org_1" }), { organization_id: "org_1", environment_id: null });
  t.strictSame(m.get.input.parse({ organization_id: "org_1", environment_id: null }), { organization_id: "org_1", environment_id: null });
  t.notOk(m.get.input.safeParse({}).success, "an organization is required");
  const created = m.create.input.parse({ organization_id: "org_1", url, events: ["job.completed"], secret: "s" });
  t.equal(created.audience, null);
  t.equal(created.environment_id, null);
  t.notOk(m.create.input.safeParse({ organization_id: "org_1", url, events: [], secret: "s" }).success, "no event subscribed: refused");
  t.notOk(m.create.input.safeParse({ organization_id: "org_1", url, events: ["job.nope"], secret: "s" }).success, "an unknown event kind: refused");
  t.strictSame(m.accept.input.parse({ organization_id: "org_1", events: [event("evt_1")] }).results, []);
  t.notOk(m.accept.input.safeParse({ organization_id: "org_1", events: [] }).success, "an accept of no event: refused");
  t.strictSame(m.pump.input.parse({}), { from_reminder: false });
  t.strictSame(m.settle.input.parse({ results: [] }), { results: [] });
  const page = (limit: number, cursor: string | null = null) => m.deliveries.input.safeParse({ organization_id: "org_1", limit, cursor }).success;
  t.same([page(0), page(1), page(100), page(101), page(1.5)], [false, true, true, false, false], "limit 1 to 100, whole");
  t.notOk(m.deliveries.input.safeParse({ organization_id: "org_1", limit: 10 }).success, "the cursor is required (null for the first page)");
  t.ok(m.retry.input.safeParse({ organization_id: "org_1", delivery_id: "dlv_1" }).success);
  t.notOk(m.retry.input.safeParse({ organization_id: "org_1" }).success);
  t.ok(m.test.input.safeParse({ organization_id: "org_1", event: event("evt_t", "webhook.test") }).success);
  t.notOk(m.test.input.safeParse({ organization_id: "org_1" }).success);
});

t.test("create stores the webhook (sealed secret, the clock's time), tells the directory with its audience, answers the public webhook; a second create is a conflict", async (t) => {
  const h = new Harness();
  t.equal(h.actor.type, "WebhookActor");
  t.strictSame(h.state, { webhook: null, outbox: [], delivery_ids: [], recent_event_ids: [], reminder_due_ms: null }, "the initial state");
  h.now = t0 + 1234;
  const out = await h.call("create", { organization_id: "org_1", url, events: ["job.failed"], secret: "whsec_plain", audience });
  const expected: Webhook = { id: "whk_1", url, events: ["job.failed"], status: "active", disabled_reason: null, created_at: "2026-11-25T12:00:01.234Z" };
  t.strictSame(out, expected);
  t.strictSame(h.state.webhook, { ...expected, organization_id: "org_1", secret: "sealed(whsec_plain)", audience });
  t.strictSame(h.sealed, ["whsec_plain"]);
  t.strictSame(h.take(), [{ op: "directory", kind: "created", organizationId: "org_1", webhook: expected, audience }], "the directory hears of it; nothing else happens");
  const again = await rejectedWith(h.call("create", { organization_id: "org_1", url: "https://other.example", events: ["job.completed"], secret: "x" }));
  t.equal(again.code, "conflict");
  t.equal(again.status, 409);
  t.equal(again.message, "webhook already exists");
  t.equal(h.webhook().url, url, "the first one stays");
  t.strictSame(h.take(), [], "the directory is not told again");
});

t.test("before create: the writing turns that need no owner do nothing (accept takes nothing, pump sends nothing, settle settles nothing)", async (t) => {
  const h = new Harness();
  t.strictSame(await h.call("accept", { organization_id: "org_1", events: [event("evt_1")] }), { accepted: [] });
  t.strictSame(await h.call("pump", {}), { dispatched: 0 });
  t.strictSame(await h.call("settle", { results: [ok("dlv_1")] }), { settled: 1 });
  t.strictSame(h.take(), []);
  t.strictSame(h.state, { webhook: null, outbox: [], delivery_ids: [], recent_event_ids: [], reminder_due_ms: null });
  t.strictSame([h.sealed, h.opened], [[], []]);
  for (const method of ["deactivate", "erase"] as const) {
    const e = await rejectedWith(h.call(method, { organization_id: "org_1" }));
    t.equal(e.message, "webhook not found", method);
  }
});

t.test("get answers the public webhook to its owner; no webhook, another organization, another environment's key, a key on the organization's webhook: 404", async (t) => {
  const h = new Harness();
  const nothing = await rejectedWith(h.call("get", { organization_id: "org_1" }));
  t.equal(nothing.code, "not_found");
  t.equal(nothing.status, 404);
  t.equal(nothing.message, "webhook not found");
  await h.create(audience);
  t.strictSame(await h.call("get", { organization_id: "org_1" }), pub(h), "a session sees a key's webhook");
  t.strictSame(await h.call("get", { organization_id: "org_1", environment_id: "env_1" }), pub(h), "a key of its environment sees it");
  for (const caller of [
    { organization_id: "org_2" },
    { organization_id: "org_2", environment_id: "env_1" },
    { organization_id: "org_1", environment_id: "env_2" },
  ]) {
    const e = await rejectedWith(h.call("get", caller));
    t.equal(e.message, "webhook not found", JSON.stringify(caller));
    t.equal(e.code, "not_found");
  }
  const orgWide = new Harness();
  await orgWide.create(null);
  const e = await rejectedWith(orgWide.call("get", { organization_id: "org_1", environment_id: "env_1" }));
  t.equal(e.message, "webhook not found", "a key does not see the organization's webhook");
  t.strictSame(await orgWide.call("get", { organization_id: "org_1" }), pub(orgWide));
  t.strictSame(h.take(), [], "reads write nothing");
});

t.test("accept sends the subscribed events in one dispatch (opened secret, dlv_ ids made now, a lease) after arming the reminder; nothing is written for pending records", async (t) => {
  const h = new Harness();
  await h.create(null, ["job.completed"]);
  h.now = t0 + 500;
  const out = await h.call("accept", { organization_id: "org_1", events: [event("evt_1"), event("evt_2", "job.failed"), event("evt_3")] });
  t.strictSame(out, { accepted: ["evt_1", "evt_3"] }, "the unsubscribed kind is not taken");
  const [d1, d3] = [h.entry("evt_1").delivery_id, h.entry("evt_3").delivery_id];
  t.ok(d1.startsWith(idTimeOf(t0 + 500)) && d3.startsWith(idTimeOf(t0 + 500)), "dlv_ ids made at the clock's time");
  t.not(d1, d3);
  t.strictSame(h.take(), [
    reminder(period),
    {
      op: "dispatch",
      webhookId: "whk_1",
      attempts: [
        { delivery_id: d1, url, secret: "whsec_plain", event: event("evt_1") },
        { delivery_id: d3, url, secret: "whsec_plain", event: event("evt_3") },
      ],
    },
  ]);
  t.equal(h.entry("evt_1").in_flight_until, t0 + 500 + lease);
  t.strictSame(h.state.delivery_ids, [d3, d1]);
  t.equal(h.state.reminder_due_ms, t0 + 500 + period);
  t.strictSame(h.opened, ["sealed(whsec_plain)"], "the secret opened once for the batch");

  // A re-publish is taken again but not sent; nothing changes, so nothing is asked of the host.
  t.strictSame(await h.call("accept", { organization_id: "org_1", events: [event("evt_1")] }), { accepted: ["evt_1"] });
  t.strictSame(h.take(), []);
  t.strictSame(await h.call("accept", { organization_id: "org_2", events: [event("evt_9")] }), { accepted: [] }, "another organization's events are not taken");
  t.strictSame(h.take(), []);
});

t.test("accept applies the results it carries first, in the same turn: the outcome written, then the new event sent", async (t) => {
  const h = new Harness();
  await h.create();
  const d1 = await acceptOne(h, "evt_1");
  h.take();
  h.now = t0 + 1000;
  await h.call("accept", { organization_id: "org_1", events: [event("evt_2")], results: [ok(d1, 204)] });
  const d2 = h.entry("evt_2").delivery_id;
  const succeeded: Delivery = {
    id: d1,
    event_id: "evt_1",
    event_type: "job.completed",
    attempt: 1,
    status: "succeeded",
    response_status: 204,
    error: null,
    duration_ms: 12,
    created_at: iso(t0),
    next_attempt_at: null,
  };
  t.strictSame(h.take(), [
    {
      op: "apply",
      ops: [
        { op: "put", key: recordKey(d1), value: succeeded },
        { op: "put", key: eventKey("evt_1"), value: { event: event("evt_1"), attempts: 1 } },
      ],
    },
    { op: "dispatch", webhookId: "whk_1", attempts: [{ delivery_id: d2, url, secret: "whsec_plain", event: event("evt_2") }] },
  ]);
  t.strictSame(h.state.recent_event_ids, ["evt_1"]);
  t.strictSame(
    h.state.outbox.map((e) => e.event.id),
    ["evt_2"],
  );
});

t.test("settle writes each outcome and answers how many results came, stale ones included; a failure arms the reminder for its retry, as due − now", async (t) => {
  const h = new Harness();
  await h.create();
  const d1 = await acceptOne(h, "evt_1");
  h.take();
  h.now = t0 + 1000;
  t.strictSame(await h.call("settle", { results: [fail(d1, 503), ok("dlv_unknown")] }), { settled: 2 });
  const next = h.entry("evt_1");
  t.ok(next.delivery_id.startsWith(idTimeOf(t0 + 1000)), "the retry's pending record made now");
  t.strictSame(h.take(), [
    reminder(5 * second),
    {
      op: "apply",
      ops: [
        {
          op: "put",
          key: recordKey(d1),
          value: {
            id: d1,
            event_id: "evt_1",
            event_type: "job.completed",
            attempt: 1,
            status: "failed",
            response_status: 503,
            error: "the receiver answered HTTP 503",
            duration_ms: 7,
            created_at: iso(t0),
            next_attempt_at: iso(t0 + 1000 + 5 * second),
          },
        },
      ],
    },
  ]);
  t.equal(h.state.reminder_due_ms, t0 + 6000);
  t.strictSame(await h.call("settle", { results: [] }), { settled: 0 });
  t.strictSame(h.take(), [], "no result: nothing to do");
});

t.test("a reminder already past is armed with a due of 0, never a negative one", async (t) => {
  const h = new Harness();
  await h.create();
  const d1 = await acceptOne(h, "evt_1");
  h.take();
  // An entry due 3 s ago that no turn sent yet (its turn crashed), and no reminder armed.
  h.state.outbox.push({ event: event("evt_late"), attempts: 1, next_attempt_ms: t0 - 3000, delivery_id: "dlv_late", record_created_ms: t0 - 4000, in_flight_until: null, announce: false });
  h.state.reminder_due_ms = null;
  await h.call("settle", { results: [ok(d1)] });
  t.strictSame(h.take()[0], reminder(0));
  t.equal(h.state.reminder_due_ms, t0 - 3000);
});

t.test("the retry schedule through the actor: each attempt due after the documented wait (one ms early: nothing), counted on its record, then the webhook disabled", async (t) => {
  const h = new Harness();
  await h.create();
  let delivery = await acceptOne(h, "evt_1");
  h.take();
  for (let attempt = 1; attempt <= documentedDelaysMs.length; attempt++) {
    const wait = documentedDelaysMs[attempt - 1]!;
    const failedAt = h.now;
    await h.call("settle", { results: [fail(delivery)] });
    const failed = h.doc(recordKey(delivery));
    t.match(failed, { attempt, status: "failed", next_attempt_at: iso(failedAt + wait) }, `attempt ${attempt} failed, the next due in ${wait} ms`);
    // The reminder armed with the attempt fires at the lease's end plus a second (7 s): a shorter wait re-arms it now.
    if (wait < lease + 1000) t.strictSame(h.take()[0], reminder(wait), "the reminder armed for it");
    else {
      t.notOk(
        h.take().some((c) => c.op === "setReminder"),
        "the reminder fires sooner anyway",
      );
      t.equal(h.state.reminder_due_ms, failedAt + lease + 1000);
      h.now = failedAt + lease + 1000;
      t.strictSame(await h.call("pump", { from_reminder: true }), { dispatched: 0 });
      t.strictSame(h.take(), [reminder(wait - lease - 1000)], "which re-arms it for the retry");
    }
    h.now = failedAt + wait - 1;
    t.strictSame(await h.call("pump", { from_reminder: true }), { dispatched: 0 }, "one ms early: nothing sent");
    t.strictSame(h.take(), [reminder(1)], "the fired reminder is armed again for the last ms");
    h.now = failedAt + wait;
    t.strictSame(await h.call("pump", { from_reminder: true }), { dispatched: 1 }, "due: sent");
    const [rearm, sent] = h.take();
    t.strictSame(rearm, reminder(lease + 1000), "then armed for the lease's end");
    t.equal(sent?.op, "dispatch");
    delivery = h.entry("evt_1").delivery_id;
    t.equal(h.entry("evt_1").attempts, attempt, `${attempt} attempts made before this one`);
  }
  h.now += 3000;
  await h.call("settle", { results: [fail(delivery, 502)] });
  const reason = "every delivery attempt of event evt_1 failed (10 attempts over the whole retry schedule)";
  t.match(h.doc(recordKey(delivery)), { attempt: 10, status: "failed", response_status: 502, next_attempt_at: null });
  t.equal(h.webhook().status, "disabled");
  t.equal(h.webhook().disabled_reason, reason);
  const trail = h.take();
  t.strictSame(trail[0], clear, "the reminder cleared");
  t.strictSame(trail[1], { op: "directory", kind: "updated", organizationId: "org_1", webhook: pub(h), audience: null }, "the directory told of the new status");
  t.equal(trail[2]?.op, "apply");
  t.equal(trail.length, 3);
  const e = await rejectedWith(h.call("test", { organization_id: "org_1", event: event("evt_t", "webhook.test") }));
  t.equal(e.code, "conflict");
  t.equal(e.status, 409);
  t.equal(e.message, `the webhook is disabled (${reason}); only active webhooks deliver`);
});

t.test("pump counts an expired lease as a failed attempt and answers what it sent; from_reminder defaults to false; a fired reminder with nothing left is cleared", async (t) => {
  const h = new Harness();
  await h.create();
  const d1 = await acceptOne(h, "evt_1");
  h.take();
  h.now = t0 + lease - 1;
  t.strictSame(await h.call("pump", {}), { dispatched: 0 });
  t.strictSame(h.take(), [], "the lease still runs; the reminder armed earlier stands");
  h.now = t0 + lease;
  t.strictSame(await h.call("pump", {}), { dispatched: 0 }, "the lost attempt is not due again before 5 s");
  t.match(h.doc(recordKey(d1)), { attempt: 1, status: "failed", response_status: null, error: "no result came back for this attempt (the process delivering it stopped, or it overran its lease)" });
  t.equal(h.state.reminder_due_ms, t0 + period, "the reminder armed at accept fires before the retry: kept");
  h.take();
  await h.call("settle", { results: [ok(h.entry("evt_1").delivery_id)] });
  t.strictSame(h.take(), [], "the result of an attempt not out is stale: nothing");
  h.now = t0 + lease + 5 * second;
  t.strictSame(await h.call("pump", { from_reminder: true }), { dispatched: 1 });
  const d2 = h.entry("evt_1").delivery_id;
  h.take();
  await h.call("settle", { results: [ok(d2)] });
  h.take();
  t.strictSame(await h.call("pump", {}), { dispatched: 0 });
  t.strictSame(h.take(), [], "not from the reminder, nothing left: the reminder is not touched");
  t.strictSame(await h.call("pump", { from_reminder: true }), { dispatched: 0 });
  t.strictSame(h.take(), [clear], "the fired reminder has nothing left to wake for: cleared");
  t.equal(h.state.reminder_due_ms, null);
});

t.test("a 410 disables the webhook: the pending ones cancelled, the reminder cleared, the directory told, then the records written", async (t) => {
  const h = new Harness();
  await h.create(audience);
  const d1 = await acceptOne(h, "evt_1");
  h.now = t0 + 10;
  const d2 = await acceptOne(h, "evt_2");
  h.take();
  h.now = t0 + 20;
  await h.call("settle", { results: [fail(d1, 410)] });
  const reason = "the receiver answered 410 Gone";
  t.equal(h.webhook().status, "disabled");
  t.equal(h.webhook().disabled_reason, reason);
  const trail = h.take();
  t.strictSame(trail.slice(0, 2), [clear, { op: "directory", kind: "updated", organizationId: "org_1", webhook: pub(h), audience }]);
  t.equal(trail.length, 3);
  t.match(h.doc(recordKey(d1)), { status: "failed", response_status: 410 });
  t.match(h.doc(recordKey(d2)), { status: "failed", error: `cancelled: the webhook was disabled (${reason})`, next_attempt_at: null });
  t.strictSame(h.state.outbox, []);
});

t.test("a plaintext secret from before encryption is sealed by the next writing turn, once; a read leaves it", async (t) => {
  const h = new Harness();
  await h.create();
  h.webhook().secret = "whsec_legacy";
  h.sealed.length = 0;
  await h.call("get", { organization_id: "org_1" });
  t.equal(h.webhook().secret, "whsec_legacy", "get writes nothing");
  await h.call("pump", {});
  t.equal(h.webhook().secret, "sealed(whsec_legacy)");
  await h.call("pump", {});
  t.strictSame(h.sealed, ["whsec_legacy"], "an already sealed secret is not sealed again");
  await acceptOne(h, "evt_1");
  t.strictSame(
    dispatched(h.take()).map((a) => a.secret),
    ["whsec_legacy"],
    "attempts carry it in the clear",
  );
});

t.test("a secret the current key cannot open disables the webhook instead of sending, and says why", async (t) => {
  const h = new Harness();
  await h.create();
  h.keyChanged = true;
  t.strictSame(await h.call("accept", { organization_id: "org_1", events: [event("evt_1")] }), { accepted: ["evt_1"] });
  const reason = "its signing secret cannot be opened with the current WEBHOOK_SECRET_KEY (the key was changed); create the webhook again";
  t.equal(h.webhook().status, "disabled");
  t.equal(h.webhook().disabled_reason, reason);
  const trail = h.take();
  t.notOk(
    trail.some((c) => c.op === "dispatch"),
    "nothing sent",
  );
  t.strictSame(trail.slice(0, 2), [clear, { op: "directory", kind: "updated", organizationId: "org_1", webhook: pub(h), audience: null }]);
  const [record] = (await h.call("deliveries", { organization_id: "org_1", limit: 10, cursor: null })).data;
  t.match(record, { event_id: "evt_1", status: "failed", error: `cancelled: the webhook was disabled (${reason})` });
});

t.test("deactivate cancels the pending deliveries, clears the reminder, tells the directory once; again: nothing to tell", async (t) => {
  const h = new Harness();
  await h.create(audience);
  const d1 = await acceptOne(h, "evt_1");
  h.take();
  const out = await h.call("deactivate", { organization_id: "org_1" });
  t.strictSame(out, { id: "whk_1", url, events: ["job.completed", "job.failed"], status: "inactive", disabled_reason: null, created_at: iso(t0) });
  const cancelled: Delivery = {
    id: d1,
    event_id: "evt_1",
    event_type: "job.completed",
    attempt: 1,
    status: "failed",
    response_status: null,
    error: "cancelled: the webhook was deactivated",
    duration_ms: null,
    created_at: iso(t0),
    next_attempt_at: null,
  };
  t.strictSame(h.take(), [
    clear,
    { op: "directory", kind: "updated", organizationId: "org_1", webhook: out, audience },
    {
      op: "apply",
      ops: [
        { op: "put", key: recordKey(d1), value: cancelled },
        { op: "put", key: eventKey("evt_1"), value: { event: event("evt_1"), attempts: 0 } },
      ],
    },
  ]);
  t.strictSame(await h.call("deactivate", { organization_id: "org_1" }), out);
  t.strictSame(h.take(), [], "already inactive: no change to tell");
  const e = await rejectedWith(h.call("deactivate", { organization_id: "org_2" }));
  t.equal(e.message, "webhook not found");
  t.strictSame(await h.call("accept", { organization_id: "org_1", events: [event("evt_2")] }), { accepted: [] }, "an inactive webhook takes no event");
  const inactive = await rejectedWith(h.call("test", { organization_id: "org_1", event: event("evt_t", "webhook.test") }));
  t.equal(inactive.message, "the webhook is inactive; only active webhooks deliver");
  t.equal(inactive.code, "conflict");
});

t.test("erase deletes every listed record and kept event, clears the reminder and leaves the initial state; another organization's erase is a 404", async (t) => {
  const h = new Harness();
  await h.create();
  const d1 = await acceptOne(h, "evt_1");
  await h.call("settle", { results: [ok(d1)] });
  const d2 = await acceptOne(h, "evt_2");
  h.take();
  const refused = await rejectedWith(h.call("erase", { organization_id: "org_2" }));
  t.equal(refused.message, "webhook not found");
  t.strictSame(h.take(), [], "nothing touched");
  t.strictSame(await h.call("erase", { organization_id: "org_1" }), { erased: true });
  const trail = h.take();
  t.strictSame(trail[0], clear);
  t.match(trail[1], { op: "directory", kind: "updated", webhook: { status: "inactive" } });
  t.strictSame(trail[2], {
    op: "apply",
    ops: [
      { op: "delete", key: recordKey(d2) },
      { op: "delete", key: eventKey("evt_2") },
      { op: "delete", key: recordKey(d1) },
      { op: "delete", key: eventKey("evt_1") },
    ],
  });
  t.strictSame(trail.slice(3), [clear], "and the reminder cleared once more after the batch");
  t.strictSame(h.state, { webhook: null, outbox: [], delivery_ids: [], recent_event_ids: [], reminder_due_ms: null });
  t.strictSame([...h.store.docs.keys()], [], "no record or payload left");

  // An inactive webhook: the outbox asks nothing of the reminder, the erase still clears it.
  const idle = new Harness();
  await idle.create();
  await idle.call("deactivate", { organization_id: "org_1" });
  idle.take();
  await idle.call("erase", { organization_id: "org_1" });
  t.strictSame(idle.take(), [clear]);
});

t.test("test sends a webhook.test event now and answers its pending record; its outcome is announced only at the commit; without announce nothing breaks", async (t) => {
  const h = new Harness();
  await h.create();
  h.now = t0 + 50;
  const record = await h.call("test", { organization_id: "org_1", event: event("evt_t", "webhook.test") });
  t.strictSame(record, {
    id: h.entry("evt_t").delivery_id,
    event_id: "evt_t",
    event_type: "webhook.test",
    attempt: 1,
    status: "pending",
    response_status: null,
    error: null,
    duration_ms: null,
    created_at: iso(t0 + 50),
    next_attempt_at: iso(t0 + 50),
  });
  t.strictSame(h.take(), [reminder(period), { op: "dispatch", webhookId: "whk_1", attempts: [{ delivery_id: record.id, url, secret: "whsec_plain", event: event("evt_t", "webhook.test") }] }]);
  await h.turn("settle", { results: [ok(record.id)] });
  t.match(h.doc(recordKey(record.id)), { status: "succeeded" }, "its outcome written in the turn");
  t.strictSame(
    h.take().filter((c) => c.op === "announce"),
    [],
    "not announced before the commit",
  );
  h.commit();
  t.strictSame(h.take(), [
    { op: "announce", webhookId: "whk_1", record: { ...record, status: "succeeded", response_status: 200, duration_ms: 12, next_attempt_at: null } },
  ], "announced with the webhook's id once committed");

  const quiet = new Harness({ announce: false });
  await quiet.create();
  const r3 = await quiet.call("test", { organization_id: "org_1", event: event("evt_t", "webhook.test") });
  await quiet.call("settle", { results: [ok(r3.id)] });
  t.match(quiet.doc(recordKey(r3.id)), { status: "succeeded" }, "no announce dependency: the outcome is still written");
});

t.test("retry: an unlisted delivery is a 404 before the status is checked; an inactive webhook is a conflict; a waiting retry goes now; an attempt out is kept", async (t) => {
  const h = new Harness();
  await h.create();
  const d1 = await acceptOne(h, "evt_1");
  h.now = t0 + 1000;
  await h.call("settle", { results: [fail(d1)] });
  const waiting = h.entry("evt_1").delivery_id;
  h.take();
  const unknown = await rejectedWith(h.call("retry", { organization_id: "org_1", delivery_id: "dlv_nope" }));
  t.equal(unknown.code, "not_found");
  t.equal(unknown.message, "delivery not found");
  const stranger = await rejectedWith(h.call("retry", { organization_id: "org_2", delivery_id: d1 }));
  t.equal(stranger.message, "webhook not found");

  h.now = t0 + 2000;
  const out = await h.call("retry", { organization_id: "org_1", delivery_id: d1 });
  t.strictSame(out, {
    id: waiting,
    event_id: "evt_1",
    event_type: "job.completed",
    attempt: 2,
    status: "pending",
    response_status: null,
    error: null,
    duration_ms: null,
    created_at: iso(t0 + 1000),
    next_attempt_at: iso(t0 + 2000),
  });
  const trail = h.take();
  t.strictSame(
    trail.find((c) => c.op === "dispatch"),
    { op: "dispatch", webhookId: "whk_1", attempts: [{ delivery_id: waiting, url, secret: "whsec_plain", event: event("evt_1") }] },
    "sent now",
  );
  t.equal(h.entry("evt_1").announce, true);
  t.strictSame(await h.call("retry", { organization_id: "org_1", delivery_id: waiting }), out, "already out: its pending record, nothing sent again");
  t.notOk(
    h.take().some((c) => c.op === "dispatch"),
    "nothing sent",
  );

  await h.call("deactivate", { organization_id: "org_1" });
  const inactive = await rejectedWith(h.call("retry", { organization_id: "org_1", delivery_id: d1 }));
  t.equal(inactive.code, "conflict");
  t.equal(inactive.message, "the webhook is inactive; only active webhooks deliver");
  const stillUnknown = await rejectedWith(h.call("retry", { organization_id: "org_1", delivery_id: "dlv_nope" }));
  t.equal(stillUnknown.message, "delivery not found", "the record is looked up first");
});

t.test("retry of a waiting event whose pending record is no longer listed answers the record asked for", async (t) => {
  const h = new Harness();
  await h.create();
  const old: Delivery = { id: "dlv_old", event_id: "evt_1", event_type: "job.completed", attempt: 1, status: "failed", response_status: 500, error: "x", duration_ms: 3, created_at: iso(t0), next_attempt_at: iso(t0 + 5000) };
  h.store.docs.set(recordKey("dlv_old"), old);
  h.state.delivery_ids = ["dlv_old"];
  h.state.outbox = [{ event: event("evt_1"), attempts: 1, next_attempt_ms: t0 + 5000, delivery_id: "dlv_new", record_created_ms: t0, in_flight_until: null, announce: false }];
  t.strictSame(await h.call("retry", { organization_id: "org_1", delivery_id: "dlv_old" }), old);
  t.equal(h.take().filter((c) => c.op === "dispatch").length, 1, "but it is sent");
});

t.test("retry of a finished delivery requeues its event (a new attempt, announced); one no longer kept is a conflict naming it", async (t) => {
  const h = new Harness();
  await h.create();
  const d1 = await acceptOne(h, "evt_1");
  await h.call("settle", { results: [ok(d1)] });
  h.now = t0 + period;
  await h.call("pump", { from_reminder: true });
  t.strictSame(h.take().slice(-1), [clear], "the reminder armed at accept fired: nothing left");
  h.now = t0 + 9000;
  const out = await h.call("retry", { organization_id: "org_1", delivery_id: d1 });
  t.match(out, { event_id: "evt_1", attempt: 2, status: "pending", created_at: iso(t0 + 9000), next_attempt_at: iso(t0 + 9000) });
  t.not(out.id, d1);
  t.strictSame(h.state.delivery_ids, [out.id, d1]);
  t.strictSame(h.state.recent_event_ids, [], "back in the outbox");
  const trail = h.take();
  t.strictSame(trail[0], reminder(period));
  t.strictSame(trail[1], { op: "apply", ops: [{ op: "delete", key: eventKey("evt_1") }] });
  t.strictSame(trail[2], { op: "dispatch", webhookId: "whk_1", attempts: [{ delivery_id: out.id, url, secret: "whsec_plain", event: event("evt_1") }] });
  t.equal(h.entry("evt_1").announce, true);

  // Its payload gone from the list of kept events, though still stored: not kept.
  await h.call("settle", { results: [ok(out.id)] });
  h.state.recent_event_ids = [];
  const gone = await rejectedWith(h.call("retry", { organization_id: "org_1", delivery_id: d1 }));
  t.equal(gone.code, "conflict");
  t.equal(gone.status, 409);
  t.equal(gone.message, `event evt_1 is no longer kept (the last ${MAX_RECENT_EVENTS} events are)`);
  t.equal(MAX_RECENT_EVENTS, 50);
  // Listed as kept, but its payload is not in the store.
  h.state.recent_event_ids = ["evt_1"];
  h.store.docs.delete(eventKey("evt_1"));
  const missing = await rejectedWith(h.call("retry", { organization_id: "org_1", delivery_id: d1 }));
  t.equal(missing.message, "event evt_1 is no longer kept (the last 50 events are)");
});

t.test("delivery answers a listed record (stored, else derived pending); unlisted or another organization's: 404", async (t) => {
  const h = new Harness();
  await h.create();
  const d1 = await acceptOne(h, "evt_1");
  t.strictSame(await h.call("delivery", { organization_id: "org_1", delivery_id: d1 }), {
    id: d1,
    event_id: "evt_1",
    event_type: "job.completed",
    attempt: 1,
    status: "pending",
    response_status: null,
    error: null,
    duration_ms: null,
    created_at: iso(t0),
    next_attempt_at: iso(t0),
  });
  await h.call("settle", { results: [ok(d1)] });
  t.match(await h.call("delivery", { organization_id: "org_1", delivery_id: d1 }), { id: d1, status: "succeeded" });
  h.store.docs.set(recordKey("dlv_hidden"), { ...(h.doc(recordKey(d1)) as Delivery), id: "dlv_hidden" });
  const hidden = await rejectedWith(h.call("delivery", { organization_id: "org_1", delivery_id: "dlv_hidden" }));
  t.equal(hidden.message, "delivery not found", "stored but not listed: not shown");
  h.state.delivery_ids.unshift("dlv_lost");
  const lost = await rejectedWith(h.call("delivery", { organization_id: "org_1", delivery_id: "dlv_lost" }));
  t.equal(lost.message, "delivery not found", "listed but neither stored nor pending");
  t.equal(lost.status, 404);
  const other = await rejectedWith(h.call("delivery", { organization_id: "org_2", delivery_id: d1 }));
  t.equal(other.message, "webhook not found");
});

t.test("deliveries pages newest first: cursor after the given id, an unknown cursor an empty page, next_cursor only when more follow", async (t) => {
  const h = new Harness();
  await h.create();
  const ids: string[] = [];
  for (let i = 1; i <= 5; i++) {
    h.now = t0 + i;
    ids.unshift(await acceptOne(h, `evt_${i}`));
  }
  const page = (limit: number, cursor: string | null) => h.call("deliveries", { organization_id: "org_1", limit, cursor });
  const idsOf = (p: { data: Delivery[] }) => p.data.map((d) => d.id);
  let p = await page(2, null);
  t.strictSame(idsOf(p), ids.slice(0, 2));
  t.equal(p.next_cursor, ids[1]);
  t.equal(p.data[0]?.event_id, "evt_5", "newest first");
  p = await page(2, ids[1]!);
  t.strictSame(idsOf(p), ids.slice(2, 4));
  t.equal(p.next_cursor, ids[3]);
  p = await page(2, ids[0]!);
  t.strictSame(idsOf(p), ids.slice(1, 3), "after the newest one");
  p = await page(2, ids[3]!);
  t.strictSame(idsOf(p), ids.slice(4));
  t.equal(p.next_cursor, null, "the last page");
  p = await page(5, null);
  t.strictSame(idsOf(p), ids);
  t.equal(p.next_cursor, null, "exactly all: no next page");
  p = await page(4, null);
  t.equal(p.next_cursor, ids[3], "one left: a next page");
  p = await page(1, ids[4]!);
  t.strictSame(p, { data: [], next_cursor: null }, "after the last one: empty");
  p = await page(3, "dlv_unknown");
  t.strictSame(p, { data: [], next_cursor: null }, "an unknown cursor: empty, not the first page");
  h.state.delivery_ids.splice(1, 0, "dlv_lost");
  p = await page(3, null);
  t.strictSame(idsOf(p), [ids[0], ids[1]], "a listed id with no record is skipped");
  t.equal(p.next_cursor, ids[1]);
  const other = await rejectedWith(h.call("deliveries", { organization_id: "org_2", limit: 1, cursor: null }));
  t.equal(other.message, "webhook not found");
});
