// Billing on top of the ledger (docs/api/usage-budgets-rate-limits.md): writes the
// usage batches, admits hard-limited live calls against their project's
// budget (reserve → settle), and publishes `budget.alert` once per threshold.
//
// The hot path: a call from a test key, or from a project without a hard
// limit, costs one Map lookup (the replica's budget cache). A hard-limited
// project's call is admitted from the replica's lease of its budget and
// settled into it, in memory (tenancy/budget-leases.ts); only near the limit,
// where no lease is taken, does a call pay one atomic ledger step before the
// provider call and one when it ends. The cache learns of budget changes over the store's
// broadcast channel within milliseconds, and re-reads every `cacheTtlMs`
// anyway in case a broadcast was missed.
import type { Clock } from "../core/clock.ts";
import { isoTime } from "../core/clock.ts";
import { TroupeError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { noEvents, type EventPublisher } from "../core/organization-events.ts";
import { prefixedId } from "../core/ids.ts";
import type { Payer, UsageRecord } from "../providers/usage.ts";
import type { DataStore } from "../core/data-store.ts";
import { BudgetLeases, LeaseTicket } from "./budget-leases.ts";
import { alertEventId, limitNanos, periodOf, type BudgetAlert, type LedgerStore, type Reservation, type ReservedPart, type ReserveOutcome, type StoredBudget } from "./ledger.ts";

const budgetChannel = "budget-changed";
const cacheTtlMs = 10_000; // 10 s: a missed broadcast heals this fast
/** A reservation outlives its call only if the replica died: the longest call (a long stream) is well under this. */
const reservationTtlMs = 15 * 60_000;
/**
 * Records per ledger step. Redis: keeps one script short (it blocks the
 * server while it runs). Embedded: one step is one lmdb commit on the
 * ledger's thread, and a commit (two fdatasyncs) costs far more than a
 * record, so a flush goes in one step (bench/ledger-append.ts: 51 µs of CPU
 * a record in steps of 16, 13.5 in steps of 1,024). What waits behind a
 * step on that thread is a budget lease's reserve (about one a second per
 * project, tenancy/budget-leases.ts): ~15 ms at most.
 */
export const appendChunk = { redis: 500, embedded: 1024 } as const;
const republishEveryMs = 30_000;
const settled: Promise<void> = Promise.resolve();
/**
 * A video job's reservation outlives its job only if the job is lost: jobs
 * end within minutes (each poll is bounded, a stuck task fails the job), and
 * a job still running this long after its start bills its remaining scenes
 * without a hold (docs/api/usage-budgets-rate-limits.md).
 */
const jobReservationTtlMs = 24 * 3_600_000;

/** The parts a job holds under a hard limit (JobActor state): settled or released one by one. */
export interface HeldParts {
  project_id: string;
  period: string;
  parts: ReservedPart[];
}

interface CachedBudget {
  hard: boolean;
  limitNanos: number;
  readAt: number;
}

export interface BillingDeps {
  ledger: LedgerStore;
  store: DataStore;
  clock: Clock;
  log: Logger;
  events?: EventPublisher;
}

export class Billing {
  readonly ledger: LedgerStore;
  private readonly store: DataStore;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly events: EventPublisher;
  private readonly budgets = new Map<string, CachedBudget>();
  private republishTimer: NodeJS.Timeout | undefined;
  private readonly leases: BudgetLeases;
  /** The usage recorder's appends in flight (a lease's return waits for them). */
  private readonly writes = new Set<Promise<unknown>>();

  constructor(deps: BillingDeps) {
    this.ledger = deps.ledger;
    this.store = deps.store;
    this.clock = deps.clock;
    this.log = deps.log;
    this.events = deps.events ?? noEvents;
    this.leases = new BudgetLeases({
      ledger: this.ledger,
      clock: this.clock,
      log: this.log,
      holdTtlMs: reservationTtlMs,
      chunk: appendChunk[this.ledger.kind],
      publishAlerts: (alerts) => this.publishAlerts(alerts),
      writesSettled: async () => {
        await Promise.allSettled([...this.writes]);
      },
    });
  }

  async start(): Promise<void> {
    await this.store.subscribe(budgetChannel, (projectId) => this.forgetBudget(projectId));
    // Alerts claimed before a crash and never published go out now and then periodically.
    void this.republishPending();
    this.republishTimer = setInterval(() => void this.republishPending(), republishEveryMs);
    this.republishTimer.unref();
  }

  /** Returns this replica's budget leases (those without calls in flight; the gateway drains calls first). */
  async stop(): Promise<void> {
    clearInterval(this.republishTimer);
    await this.leases.close();
  }

  private forgetBudget(projectId: string): void {
    this.budgets.delete(projectId);
    this.leases.forget(projectId);
  }

  /** The usage recorder's flush: appends the batch to the ledger and publishes the alerts it crossed. */
  readonly write = async (batch: UsageRecord[]): Promise<void> => {
    const chunk = appendChunk[this.ledger.kind];
    const appends: Array<Promise<BudgetAlert[]>> = [];
    for (let i = 0; i < batch.length; i += chunk) {
      if (i > 0) await new Promise((resolve) => setImmediate(resolve));
      const records = batch.slice(i, i + chunk);
      const step = this.ledger.append(records).then((alerts) => {
        this.leases.applied(records);
        return alerts;
      });
      step.catch(() => undefined); // handled below, once every step has settled (not an unhandled rejection meanwhile)
      appends.push(step);
      this.writes.add(step);
      void step.then(
        () => this.writes.delete(step),
        () => this.writes.delete(step),
      );
    }
    // A failed step fails the flush once the others have settled: the
    // recorder retries the whole batch, which the ledger's idempotency makes safe.
    const outcomes = await Promise.allSettled(appends);
    for (const outcome of outcomes) if (outcome.status === "fulfilled") await this.publishAlerts(outcome.value);
    const failed = outcomes.find((outcome) => outcome.status === "rejected");
    if (failed) throw failed.reason;
  };

  /**
   * Admits a call before any provider call. Undefined (synchronously) when
   * nothing needs reserving: a test key, or a project known to have no hard
   * limit. Otherwise reserves `estimateNanos()` or throws 402 budget_exceeded.
   */
  admit(payer: Payer, estimateNanos: () => number): undefined | Promise<Reservation | undefined> {
    if (!payer.live) return undefined;
    const cached = this.budgets.get(payer.project_id);
    const now = this.clock.now();
    if (cached && now - cached.readAt < cacheTtlMs) {
      if (!cached.hard) return undefined;
      let estimate: number;
      try {
        estimate = Math.max(0, Math.ceil(estimateNanos()));
      } catch (error) {
        return Promise.reject(error); // as before, a failed estimate fails the admission's promise, never synchronously
      }
      // From the replica's lease: no ledger step (a zero estimate, work of unknown cost, keeps the per-call rule).
      const ticket = estimate > 0 ? this.leases.take(payer.project_id, estimate, now) : undefined;
      return ticket ? Promise.resolve(ticket) : this.admitHard(payer, estimate, cached.limitNanos, now);
    }
    return this.admitSlow(payer, estimateNanos, now);
  }

  private async admitSlow(payer: Payer, estimateNanos: () => number, now: number): Promise<Reservation | undefined> {
    const cached = await this.readBudget(payer.project_id, now);
    if (!cached.hard) return undefined;
    return this.admitHard(payer, Math.max(0, Math.ceil(estimateNanos())), cached.limitNanos, now);
  }

  private async readBudget(projectId: string, now: number): Promise<CachedBudget> {
    const budget = await this.ledger.getBudget(projectId);
    const cached = { hard: budget?.hard_limit ?? false, limitNanos: budget ? limitNanos(budget) : 0, readAt: now };
    this.budgets.set(projectId, cached);
    return cached;
  }

  /**
   * A hard-limited call that the current lease cannot admit: from a new
   * lease, else its own reservation. A refusal while this replica holds
   * leases of the project returns the idle ones and asks once more, so on
   * one replica a call is never refused for money its own idle lease holds.
   */
  private async admitHard(payer: Payer, estimate: number, limit: number, now: number): Promise<Reservation> {
    if (estimate > 0) {
      const ticket = await this.leases.takeWithNewLease(payer.project_id, estimate, limit, now);
      if (ticket) return ticket;
    }
    const reservation: Reservation = { project_id: payer.project_id, period: periodOf(isoTime(now)), id: prefixedId("rsv", now) };
    let outcome = await this.ledger.reserve(reservation, estimate, now + reservationTtlMs, now);
    if (!outcome.admitted && this.leases.holds(payer.project_id)) {
      await this.leases.returnIdle(payer.project_id);
      outcome = await this.ledger.reserve(reservation, estimate, now + reservationTtlMs, now);
    }
    if (outcome.admitted) return reservation;
    throw exceeded(outcome, reservation.period);
  }

  /**
   * Admits a video job whose parts (scenes, narration) cost at most
   * `amountsNanos`: undefined when nothing needs holding (a test key, no hard
   * limit), else the parts held, one id each; 402 budget_exceeded when the
   * whole job does not fit under the limit.
   */
  async reserveParts(payer: Payer, idPrefix: string, amountsNanos: number[]): Promise<HeldParts | undefined> {
    if (!payer.live) return undefined;
    const now = this.clock.now();
    let cached = this.budgets.get(payer.project_id);
    if (!cached || now - cached.readAt >= cacheTtlMs) cached = await this.readBudget(payer.project_id, now);
    if (!cached.hard) return undefined;
    const held: HeldParts = {
      project_id: payer.project_id,
      period: periodOf(isoTime(now)),
      parts: amountsNanos.map((amount, i) => ({ id: `${idPrefix}:${i}`, amount_nanos: Math.max(0, Math.ceil(amount)) })),
    };
    let outcome = await this.ledger.reserveParts(held, held.parts, now + jobReservationTtlMs, now, false);
    if (!outcome.admitted && this.leases.holds(payer.project_id)) {
      // As for a call: never refused for money this replica's idle leases hold.
      await this.leases.returnIdle(payer.project_id);
      outcome = await this.ledger.reserveParts(held, held.parts, now + jobReservationTtlMs, now, false);
    }
    if (!outcome.admitted) throw exceeded(outcome, held.period, held.parts.reduce((sum, p) => sum + p.amount_nanos, 0));
    return held;
  }

  /** Holds again the parts of a job admitted earlier that are not held (the embedded ledger keeps holds in memory: a restart loses them). */
  async restoreParts(held: HeldParts, parts: ReservedPart[]): Promise<void> {
    const now = this.clock.now();
    await this.ledger.reserveParts(held, parts, now + jobReservationTtlMs, now, true);
  }

  /** Releases held parts without billing (a cancelled or failed job's unfinished ones). */
  async releaseParts(held: HeldParts, partIds: string[]): Promise<void> {
    for (const id of partIds) await this.ledger.release({ project_id: held.project_id, period: held.period, id });
  }

  /**
   * Bills a reserved call at its real cost and releases its reservation. A
   * call admitted from a lease settles in memory (its record is in the usage
   * journal before the answer, and reaches the ledger with the recorder's
   * append or the lease's return, whichever comes first); a call that
   * reserved on its own settles in one atomic ledger step.
   */
  settle(reservation: Reservation, record: UsageRecord | undefined): Promise<void> {
    if (reservation instanceof LeaseTicket) {
      this.leases.settle(reservation, record);
      return settled;
    }
    return this.ledger.append(record ? [record] : [], reservation).then((alerts) => this.publishAlerts(alerts));
  }

  /**
   * Bills one record now, durably and idempotently on its usage_key (the
   * video JobActor's `bill`: `request_id = "job:<job>:segment:<i>"`).
   * Resolves once the record is in the ledger; billing it again is a no-op.
   */
  readonly bill = async (record: UsageRecord, settles?: Reservation): Promise<void> => {
    await this.publishAlerts(await this.ledger.append([record]));
    // Billed first, released after: in between, the part counts twice (never under the limit's guard).
    if (settles) await this.ledger.release(settles);
  };

  async putBudget(projectId: string, budget: StoredBudget): Promise<void> {
    await this.ledger.putBudget(projectId, budget);
    this.forgetBudget(projectId);
    await this.store.publish(budgetChannel, projectId);
  }

  private async publishAlerts(alerts: BudgetAlert[]): Promise<void> {
    for (const alert of alerts) {
      try {
        await this.events.publish({
          id: alertEventId(alert),
          type: "budget.alert",
          organization_id: alert.organization_id,
          // A whole project's spend, not one environment's: key-made webhooks get it when their key is live.
          project_id: alert.project_id,
          environment_id: null,
          created_at: isoTime(this.clock.now()),
          data: { project_id: alert.project_id, period: alert.period, threshold: alert.threshold, limit_usd: usd(alert.limit_nanos), spent_usd: usd(alert.spent_nanos) },
        });
        await this.ledger.ackAlert(alert);
      } catch (error) {
        // Stays pending in the ledger: the periodic sweep publishes it again (same event id).
        this.log.warn("budget.alert not published yet; will retry", { project_id: alert.project_id, threshold: alert.threshold, error });
      }
    }
  }

  private async republishPending(): Promise<void> {
    try {
      await this.publishAlerts(await this.ledger.pendingAlerts());
    } catch (error) {
      this.log.warn("pending budget alerts could not be read", { error });
    }
  }
}

/** The 402 of a refused reservation; `neededNanos`: what work of known cost (a video job) asked for. */
function exceeded(outcome: Exclude<ReserveOutcome, { admitted: true }>, period: string, neededNanos?: number): TroupeError {
  const { limit_nanos: limit, spent_nanos: spent, reserved_nanos: reserved } = outcome;
  const details = { limit_usd: usd(limit), spent_usd: usd(spent), reserved_usd: usd(reserved), period };
  if (neededNanos === undefined || spent + reserved >= limit) {
    return new TroupeError("budget_exceeded", `the project's monthly budget of ${usd(limit)} USD is used up (${usd(spent)} USD spent)`, { details });
  }
  return new TroupeError(
    "budget_exceeded",
    `this job may cost up to ${usd(neededNanos)} USD, more than the ${usd(limit - spent - reserved)} USD left of the project's monthly budget of ${usd(limit)} USD (${usd(spent)} USD spent, ${usd(reserved)} USD reserved by work in flight)`,
    { details: { ...details, required_usd: usd(neededNanos) } },
  );
}

/** Nano-dollars as USD rounded to the micro-dollar (what the API shows). */
export function usd(nanos: number): number {
  return Math.round(nanos / 1000) / 1_000_000;
}


