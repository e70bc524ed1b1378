// Sends a WebhookActor's attempts outside its turn and reports the results
// back to it (the actor's `settle` method). Turns stay short — an HTTP
// exchange of up to WEBHOOK_TIMEOUT_MS never holds the actor, so accepts
// are not delayed by a slow receiver and Dapr can rebalance actors without
// waiting for deliveries. Runs in whichever process hosts the actor; if that
// process dies mid-attempt, the actor's lease on the attempt expires and its
// reminder sends the event again (same id). Each dispatch's results go to
// `settle` as they come back; the publisher (its `report`) is the one place
// they are batched per webhook. The clock (signature timestamps, the lag
// metric) is injected, so tests fix the time.
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../core/log.ts";
import type { Metrics } from "../../core/metrics.ts";
import type { PostAnswer } from "../../media/outbound-fetch.ts";
import { signedHeaders } from "./signing.ts";
import type { AttemptResult, DispatchedAttempt } from "./types.ts";

export type Post = (url: string, body: string, headers: Record<string, string>, timeoutMs: number) => Promise<PostAnswer>;
export type Settle = (webhookId: string, results: AttemptResult[]) => Promise<unknown>;

export class WebhookDispatcher {
  private readonly post: Post;
  private readonly timeoutMs: number;
  private readonly log: Logger;
  private readonly settle: Settle;
  private readonly metrics: Pick<Metrics, "webhookDelivery"> | undefined;
  private readonly running = new Set<Promise<void>>();
  private readonly clock: Clock;

  /** `settle`: where each dispatch's results go (the publisher's `report`, which calls the actor back). */
  constructor(deps: { post: Post; settle: Settle; timeoutMs: number; log: Logger; clock: Clock; metrics?: Pick<Metrics, "webhookDelivery"> }) {
    this.post = deps.post;
    this.settle = deps.settle;
    this.clock = deps.clock;
    this.metrics = deps.metrics;
    this.timeoutMs = deps.timeoutMs;
    this.log = deps.log;
  }

  /** Starts the attempts now and returns at once; their results are reported together, once all came back. */
  dispatch(webhookId: string, attempts: DispatchedAttempt[]): void {
    const run = (async () => {
      const results = await Promise.all(attempts.map((a) => this.send(a)));
      await this.settle(webhookId, results);
    })().catch((error: unknown) => this.log.warn("webhook results not recorded; the attempts' leases will expire and they go again", { webhook_id: webhookId, error }));
    this.running.add(run);
    void run.finally(() => this.running.delete(run));
  }

  /** Resolves once every started attempt has been reported (graceful shutdown, tests). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private async send(attempt: DispatchedAttempt): Promise<AttemptResult> {
    const result = await this.attempt(attempt);
    // Lag: from the event's creation to this attempt's end (a retry's lag includes its wait).
    const lagSeconds = Math.max(0, (this.clock.now() - Date.parse(attempt.event.created_at)) / 1000);
    this.metrics?.webhookDelivery(result.status === 410 ? "disabled" : result.error === null ? "succeeded" : "failed", lagSeconds);
    return result;
  }

  private async attempt(attempt: DispatchedAttempt): Promise<AttemptResult> {
    const body = JSON.stringify(attempt.event);
    const headers = signedHeaders(attempt.secret, attempt.event.id, body, this.clock.now());
    const started = this.clock.now();
    const duration = () => Math.max(0, Math.round(this.clock.now() - started));
    try {
      const answer = await this.post(attempt.url, body, headers, this.timeoutMs);
      const ok = answer.status >= 200 && answer.status < 300;
      return {
        delivery_id: attempt.delivery_id,
        status: answer.status,
        error: ok ? null : `the receiver answered HTTP ${answer.status}`,
        retry_after: answer.retryAfter ?? null,
        duration_ms: duration(),
      };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { delivery_id: attempt.delivery_id, status: null, error: message, retry_after: null, duration_ms: duration() };
    }
  }
}
