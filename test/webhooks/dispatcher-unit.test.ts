// The WebhookDispatcher (actors/webhooks/dispatcher.ts) in process, with a
// manual clock, a POST double that holds each exchange until the test
// answers or fails it, a recording `settle`, a recording metrics sink and a
// logger that keeps its lines. What it pins:
// - dispatch posts every attempt at once (before it returns) to its URL,
//   with the event as JSON, the signature headers at the clock's time and
//   the configured timeout;
// - the results go to `settle` in one call, only once every attempt came
//   back, in the attempts' order (not the answers'), and an empty dispatch
//   settles an empty list;
// - each result: 2xx (200 and 299) is a success, 199 and 300 are not, with
//   the receiver's status in the error; Retry-After kept, null without it; a
//   thrown Error keeps its message, anything else thrown its String form,
//   status and Retry-After null; the duration on the clock, rounded, never
//   negative;
// - one delivery metric per attempt: 410 "disabled", success "succeeded",
//   anything else "failed", with the lag from the event's creation in
//   seconds (0 for an event stamped in the future); no metrics sink is fine;
// - a settle that fails is logged once as a warning naming the webhook and
//   the error, and nothing is retried; a failure of one dispatch does not
//   touch another's;
// - idle waits for every dispatch still running, and resolves at once when
//   none is.
import t from "tap";
import { WebhookDispatcher, type Post } from "../../actors/webhooks/dispatcher.ts";
import { signedHeaders } from "../../actors/webhooks/signing.ts";
import type { AttemptResult, DispatchedAttempt } from "../../actors/webhooks/types.ts";
import type { Clock } from "../../core/clock.ts";
import type { WebhookDeliveryOutcome } from "../../core/metrics.ts";
import type { PostAnswer } from "../../media/outbound-fetch.ts";
import { recordingLog } from "../support/recording-log.ts";

/** The manual clock's start (ms). */
const start = Date.parse("2026-11-25T12:00:00.000Z");
const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

interface Exchange {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  answer: (status: number, retryAfter?: string) => void;
  fail: (error: unknown) => void;
}

/** Lets every promise chain already started run to its end. */
const settleTurn = () => new Promise((resolve) => setImmediate(resolve));

function setup(options: { metrics?: boolean; settle?: (webhookId: string, results: AttemptResult[]) => Promise<unknown> } = {}) {
  let now = start;
  const clock: Clock = { now: () => now };
  const advance = (ms: number) => {
    now += ms;
  };
  const exchanges: Exchange[] = [];
  const post: Post = (url, body, headers, timeoutMs) =>
    new Promise<PostAnswer>((resolve, reject) => {
      exchanges.push({ url, body, headers, timeoutMs, answer: (status, retryAfter) => resolve({ status, retryAfter }), fail: reject });
    });
  const settled: Array<{ webhookId: string; results: AttemptResult[] }> = [];
  const settle =
    options.settle ??
    (async (webhookId: string, results: AttemptResult[]) => {
      settled.push({ webhookId, results });
    });
  const delivered: Array<[WebhookDeliveryOutcome, number]> = [];
  const metrics = options.metrics === false ? undefined : { webhookDelivery: (outcome: WebhookDeliveryOutcome, lag: number) => void delivered.push([outcome, lag]) };
  const { log, lines } = recordingLog();
  const dispatcher = new WebhookDispatcher({ post, settle, timeoutMs: 1234, log, clock, ...(metrics ? { metrics } : {}) });
  return { dispatcher, exchanges, settled, delivered, lines, advance };
}

/** Attempt `n`, its event created `ageMs` before the clock's start. */
const attempt = (n: number, ageMs = 3000): DispatchedAttempt => ({
  delivery_id: `dlv_${n}`,
  url: `https://r${n}.example/hook`,
  secret,
  event: { id: `evt_${n}`, type: "job.completed", created_at: new Date(start - ageMs).toISOString(), data: { n } },
});

t.test("dispatch posts every attempt before it returns: its URL, the event as JSON, headers signed at the clock's time, the timeout", async (t) => {
  const { dispatcher, exchanges, settled, advance } = setup();
  advance(1500); // signed at start + 1.5 s: the timestamp is the clock's, in whole seconds
  dispatcher.dispatch("whk_1", [attempt(1), attempt(2)]);
  t.equal(exchanges.length, 2, "both posted at once, before dispatch returned");
  const a = attempt(1);
  const body = JSON.stringify(a.event);
  t.equal(exchanges[0]!.url, a.url);
  t.equal(exchanges[0]!.body, body, "the event payload, as JSON");
  t.same(exchanges[0]!.headers, signedHeaders(secret, "evt_1", body, start + 1500), "signed with the attempt's secret and event id at the clock's time");
  t.equal(exchanges[0]!.headers["webhook-timestamp"], String(Math.floor((start + 1500) / 1000)));
  t.equal(exchanges[0]!.timeoutMs, 1234, "the configured timeout");
  t.equal(exchanges[1]!.url, attempt(2).url);
  t.equal(exchanges[1]!.headers["webhook-id"], "evt_2");
  await settleTurn();
  t.same(settled, [], "nothing settled while the exchanges run");
  for (const e of exchanges) e.answer(204);
  await dispatcher.idle();
  t.equal(settled.length, 1);
});

t.test("results are settled together once all came back, in the attempts' order, not the answers'", async (t) => {
  const { dispatcher, exchanges, settled, advance } = setup();
  dispatcher.dispatch("whk_7", [attempt(1), attempt(2), attempt(3)]);
  advance(100);
  exchanges[2]!.answer(200);
  await settleTurn(); // its duration is read when its answer is taken
  advance(100);
  exchanges[0]!.answer(201);
  await settleTurn();
  t.same(settled, [], "one attempt still out: nothing settled");
  advance(100);
  exchanges[1]!.answer(202);
  await dispatcher.idle();
  t.equal(settled.length, 1, "one settle call for the dispatch");
  t.equal(settled[0]!.webhookId, "whk_7");
  t.same(
    settled[0]!.results.map((r) => [r.delivery_id, r.status, r.duration_ms]),
    [
      ["dlv_1", 201, 200],
      ["dlv_2", 202, 300],
      ["dlv_3", 200, 100],
    ],
  );
});

t.test("an empty dispatch settles an empty list", async (t) => {
  const { dispatcher, settled, delivered } = setup();
  dispatcher.dispatch("whk_1", []);
  await dispatcher.idle();
  t.same(settled, [{ webhookId: "whk_1", results: [] }]);
  t.same(delivered, []);
});

t.test("2xx is a success (200 and 299), 199 and 300 are not; Retry-After is kept, null without it", async (t) => {
  const { dispatcher, exchanges, settled } = setup();
  dispatcher.dispatch("whk_1", [attempt(1), attempt(2), attempt(3), attempt(4), attempt(5)]);
  exchanges[0]!.answer(199);
  exchanges[1]!.answer(200, "7");
  exchanges[2]!.answer(299);
  exchanges[3]!.answer(300, "Wed, 25 Nov 2026 12:10:00 GMT");
  exchanges[4]!.answer(503, "120");
  await dispatcher.idle();
  t.same(settled[0]!.results, [
    { delivery_id: "dlv_1", status: 199, error: "the receiver answered HTTP 199", retry_after: null, duration_ms: 0 },
    { delivery_id: "dlv_2", status: 200, error: null, retry_after: "7", duration_ms: 0 },
    { delivery_id: "dlv_3", status: 299, error: null, retry_after: null, duration_ms: 0 },
    { delivery_id: "dlv_4", status: 300, error: "the receiver answered HTTP 300", retry_after: "Wed, 25 Nov 2026 12:10:00 GMT", duration_ms: 0 },
    { delivery_id: "dlv_5", status: 503, error: "the receiver answered HTTP 503", retry_after: "120", duration_ms: 0 },
  ]);
});

t.test("a failed exchange: an Error's message, anything else thrown as a string; no status, no Retry-After", async (t) => {
  const { dispatcher, exchanges, settled, advance, lines } = setup();
  dispatcher.dispatch("whk_1", [attempt(1), attempt(2), attempt(3)]);
  advance(40);
  exchanges[0]!.fail(new Error("connection refused"));
  exchanges[1]!.fail("socket hang up");
  exchanges[2]!.fail(42);
  await dispatcher.idle();
  t.same(settled[0]!.results, [
    { delivery_id: "dlv_1", status: null, error: "connection refused", retry_after: null, duration_ms: 40 },
    { delivery_id: "dlv_2", status: null, error: "socket hang up", retry_after: null, duration_ms: 40 },
    { delivery_id: "dlv_3", status: null, error: "42", retry_after: null, duration_ms: 40 },
  ]);
  t.same(lines, [], "a failed attempt is a result, not a log line");
});

t.test("the duration is the clock's, rounded, and never negative", async (t) => {
  const { dispatcher, exchanges, settled, advance } = setup();
  dispatcher.dispatch("whk_1", [attempt(1)]);
  advance(250.4);
  exchanges[0]!.answer(204);
  await dispatcher.idle();
  dispatcher.dispatch("whk_1", [attempt(2)]);
  advance(0.6);
  exchanges[1]!.fail(new Error("timeout"));
  await dispatcher.idle();
  dispatcher.dispatch("whk_1", [attempt(3), attempt(4)]);
  advance(-5000); // the clock stepped back during the exchange
  exchanges[2]!.answer(204);
  exchanges[3]!.fail(new Error("reset"));
  await dispatcher.idle();
  t.same(
    settled.flatMap((s) => s.results.map((r) => [r.delivery_id, r.duration_ms])),
    [
      ["dlv_1", 250],
      ["dlv_2", 1],
      ["dlv_3", 0],
      ["dlv_4", 0],
    ],
  );
});

t.test("one delivery metric per attempt: 410 disabled, 2xx succeeded, else failed; lag in seconds from the event's creation", async (t) => {
  const { dispatcher, exchanges, delivered, advance } = setup();
  dispatcher.dispatch("whk_1", [attempt(1, 3000), attempt(2, 10_000), attempt(3, 500), attempt(4, 60_000), attempt(5, 0), attempt(6, -2000)]);
  advance(250);
  exchanges[0]!.answer(204);
  exchanges[1]!.answer(410);
  exchanges[2]!.answer(500);
  exchanges[3]!.fail(new Error("refused"));
  exchanges[4]!.answer(404);
  exchanges[5]!.answer(200);
  await dispatcher.idle();
  t.same(delivered, [
    ["succeeded", 3.25],
    ["disabled", 10.25],
    ["failed", 0.75],
    ["failed", 60.25],
    ["failed", 0.25],
    ["succeeded", 0], // created 2 s after the clock's start, answered 1.75 s before it: no negative lag
  ]);
});

t.test("the lag runs to the attempt's end on the clock", async (t) => {
  const { dispatcher, exchanges, delivered, advance } = setup();
  dispatcher.dispatch("whk_1", [attempt(1, 0), attempt(2, 0)]);
  advance(1000);
  exchanges[1]!.answer(204);
  await settleTurn();
  advance(2000);
  exchanges[0]!.answer(204);
  await dispatcher.idle();
  t.same(delivered, [
    ["succeeded", 1],
    ["succeeded", 3],
  ]);
});

t.test("without a metrics sink the results are settled all the same", async (t) => {
  const { dispatcher, exchanges, settled, lines } = setup({ metrics: false });
  dispatcher.dispatch("whk_1", [attempt(1), attempt(2)]);
  exchanges[0]!.answer(410);
  exchanges[1]!.answer(204);
  await dispatcher.idle();
  t.same(
    settled[0]!.results.map((r) => [r.delivery_id, r.status]),
    [
      ["dlv_1", 410],
      ["dlv_2", 204],
    ],
  );
  t.same(lines, []);
});

t.test("a settle that fails is logged once as a warning with the webhook and the error; nothing is sent again", async (t) => {
  const refused = new Error("actor unavailable");
  const calls: Array<[string, string[]]> = [];
  const { dispatcher, exchanges, lines } = setup({
    settle: async (webhookId, results) => {
      calls.push([webhookId, results.map((r) => r.delivery_id)]);
      if (webhookId === "whk_bad") throw refused;
    },
  });
  dispatcher.dispatch("whk_bad", [attempt(1)]);
  dispatcher.dispatch("whk_good", [attempt(2)]);
  exchanges[0]!.answer(204);
  exchanges[1]!.answer(204);
  await dispatcher.idle();
  t.same(calls, [
    ["whk_bad", ["dlv_1"]],
    ["whk_good", ["dlv_2"]],
  ]);
  t.equal(exchanges.length, 2, "no attempt is posted again: the lease's expiry sends it again");
  t.same(lines, [{ level: "warn", msg: "webhook results not recorded; the attempts' leases will expire and they go again", fields: { webhook_id: "whk_bad", error: refused } }]);
  t.equal(lines[0]!.fields?.["error"], refused, "the error itself");
});

t.test("idle waits for every running dispatch, and resolves at once when none runs", async (t) => {
  const { dispatcher, exchanges, settled } = setup();
  const first = await Promise.race([
    dispatcher.idle().then(() => "idle"),
    new Promise<string>((resolve) => setTimeout(() => resolve("timed out"), 200)),
  ]);
  t.equal(first, "idle", "idle with nothing running resolves before a 200 ms timer");

  dispatcher.dispatch("whk_1", [attempt(1)]);
  dispatcher.dispatch("whk_2", [attempt(2)]);
  let idle = false;
  const waited = dispatcher.idle().then(() => {
    idle = true;
  });
  await settleTurn();
  t.equal(idle, false, "both still out");
  exchanges[0]!.answer(204);
  await settleTurn();
  t.equal(idle, false, "one still out");
  t.same(
    settled.map((s) => s.webhookId),
    ["whk_1"],
  );
  exchanges[1]!.answer(204);
  await waited;
  t.same(
    settled.map((s) => s.webhookId),
    ["whk_1", "whk_2"],
    "idle resolved once both were settled",
  );
});

t.test("idle also waits for a slow settle", async (t) => {
  let release: () => void = () => undefined;
  const { dispatcher, exchanges } = setup({ settle: () => new Promise<void>((resolve) => (release = resolve)) });
  dispatcher.dispatch("whk_1", [attempt(1)]);
  exchanges[0]!.answer(204);
  let idle = false;
  const waited = dispatcher.idle().then(() => {
    idle = true;
  });
  await settleTurn();
  t.equal(idle, false, "the settle call is still running");
  release();
  await waited;
  t.equal(idle, true);
});
