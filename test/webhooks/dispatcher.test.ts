// The WebhookDispatcher with a fake clock and a fake POST: the signature
// timestamp, each attempt's duration and the lag metric come from the
// injected clock; each dispatch's results reach `settle` in one call, as
// they come back (the publisher, not the dispatcher, batches them).
import t from "tap";
import { WebhookDispatcher, type Post } from "../../actors/webhooks/dispatcher.ts";
import { standardSignature } from "../../actors/webhooks/signing.ts";
import type { AttemptResult, DispatchedAttempt } from "../../actors/webhooks/types.ts";
import { createLogger } from "../../core/log.ts";

const start = Date.parse("2026-11-25T12:00:00.000Z");

function setup(answers: Record<string, { status: number; retryAfter?: string } | "throw">) {
  let now = start;
  const clock = { now: () => now };
  const posted: Array<{ url: string; body: string; headers: Record<string, string> }> = [];
  const post: Post = async (url, body, headers) => {
    posted.push({ url, body, headers });
    now += 250; // the exchange takes 250 ms of the fake clock
    const answer = answers[url];
    if (answer === undefined || answer === "throw") throw new Error("connection refused");
    return { status: answer.status, retryAfter: answer.retryAfter };
  };
  const lags: Array<[string, number]> = [];
  const settled: Array<{ webhookId: string; results: AttemptResult[] }> = [];
  const settle = async (webhookId: string, results: AttemptResult[]) => {
    settled.push({ webhookId, results });
  };
  const dispatcher = new WebhookDispatcher({ post, settle, timeoutMs: 1000, log: createLogger("silent"), clock, metrics: { webhookDelivery: (outcome, lag) => lags.push([outcome, lag]) } });
  return { dispatcher, posted, lags, settled };
}

const attempt = (url: string, n: number): DispatchedAttempt => ({
  delivery_id: `dlv_${n}`,
  url,
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  // Created 3 s before the fake clock's start.
  event: { id: `evt_${n}`, type: "job.completed", created_at: new Date(start - 3000).toISOString(), data: { n } },
});

t.test("the signature timestamp, durations and lag come from the injected clock; one settle call per dispatch", async (t) => {
  const { dispatcher, posted, lags, settled } = setup({ "https://a.example/": { status: 204 }, "https://b.example/": { status: 410 }, "https://c.example/": { status: 503, retryAfter: "120" } });
  dispatcher.dispatch("whk_1", [attempt("https://a.example/", 1), attempt("https://b.example/", 2), attempt("https://c.example/", 3)]);
  dispatcher.dispatch("whk_1", [attempt("https://d.example/", 4)]);
  await dispatcher.idle();

  const first = posted[0]!;
  t.equal(first.headers["webhook-timestamp"], String(start / 1000), "signed at the fake clock's time");
  t.equal(first.headers["webhook-signature"], standardSignature(attempt("", 1).secret, "evt_1", start / 1000, first.body), "and its signature covers that timestamp");
  t.equal(settled.length, 2, "one settle call per dispatch: the dispatcher does not batch across dispatches");
  t.same(
    settled[0]!.results.map((r) => [r.delivery_id, r.status, r.error, r.retry_after]),
    [
      ["dlv_1", 204, null, null],
      ["dlv_2", 410, "the receiver answered HTTP 410", null],
      ["dlv_3", 503, "the receiver answered HTTP 503", "120"],
    ],
  );
  t.ok(settled[0]!.results.every((r) => r.duration_ms >= 250), "durations measured on the fake clock");
  t.match(settled[1]!.results, [{ delivery_id: "dlv_4", status: null, error: "connection refused" }]);
  t.same(lags.map(([outcome]) => outcome).sort(), ["disabled", "failed", "failed", "succeeded"]);
  t.ok(lags.every(([, lag]) => lag >= 3.25 && lag <= 4), `lag from the event's creation on the fake clock (${lags.map(([, l]) => l).join(", ")} s)`);
});
