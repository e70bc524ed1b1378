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
//
// A key may have its own monthly budget too (docs/guides/access-control.md):
// the same rules on its own counters in the same ledger (the key's spend is
// counted by the append that bills its records), with its own leases. A call
// must fit both: it holds a reservation of each budget that is hard-limited,
// and a refusal by either releases the other's.
import type { Clock } from "../core/clock.ts";
import { isoTime } from "../core/clock.ts";
import { TroupeError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { noEvents, type EventPublisher } from "../core/organization-events.ts";
import { prefixedId } from "../core/ids.ts";
import type { Payer, UsageRecord } from "../providers/usage.ts";
import type { DataStore } from "../core/data-store.ts";
import { BudgetLeases, LeaseTicket, type BudgetPlace } from "./budget-leases.ts";
import { alertEventId, budgetScope, limitNanos, periodOf, type BudgetAlert, type LedgerStore, type Reservation, type ReservedPart, type ReserveOutcome, type StoredBudget } from "./ledger.ts";

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
  /** Set: the parts are held against this key's own budget too (a video job made with a hard-limited key). */
  api_key_id?: string | undefined;
  /** false: held against the key's budget only (the project has no hard limit); absent: the project's. */
  project?: boolean | undefined;
}

/** Where a job's parts are held: the project's budget, the key's, or both. */
function placesOf(held: HeldParts): Array<Omit<Reservation, "id">> {
  const places: Array<Omit<Reservation, "id">> = [];
  if (held.project !== false) places.push({ project_id: held.project_id, period: held.period });
  if (held.api_key_id) places.push({ project_id: held.project_id, api_key_id: held.api_key_id, period: held.period });
  return places;
}

interface CachedBudget {
  hard: boolean;
  limitNanos: number;
  readAt: number;
}

/**
 * A call held under both its project's and its key's hard budgets: one
 * reservation of each, settled together. Its own fields are the project's
 * reservation's (what a caller reading a Reservation sees).
 */
export class BothBudgets implements Reservation {
  readonly project_id: string;
  readonly period: string;
  readonly id: string;
  readonly project: Reservation;
  readonly key: Reservation;

  constructor(project: Reservation, key: Reservation) {
    this.project_id = project.project_id;
    this.period = project.period;
    this.id = project.id;
    this.project = project;
    this.key = key;
  }
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
  /** Projects' budgets, by project id. */
  private readonly budgets = new Map<string, CachedBudget>();
  /** Keys' own budgets, by key id (unique across projects: no scope string built per call). */
  private readonly keyBudgets = new Map<string, CachedBudget>();
  private republishTimer: NodeJS.Timeout | undefined;
  private readonly leases: BudgetLeases;
  /** Leases of keys' own budgets: apart from the projects', since a call holds a ticket of each. */
  private readonly keyLeases: BudgetLeases;
  /** The usage recorder's appends in flight (a lease's return waits for them). */
  private readonly writes = new Set<Promise<unknown>>();

  constructor(deps: BillingDeps) {
    this.ledger = deps.ledger;
    this.store = deps.store;
    this.clock = deps.clock;
    this.log = deps.log;
    this.events = deps.events ?? noEvents;
    const leaseDeps = {
      ledger: this.ledger,
      clock: this.clock,
      log: this.log,
      holdTtlMs: reservationTtlMs,
      chunk: appendChunk[this.ledger.kind],
      publishAlerts: (alerts: BudgetAlert[]) => this.publishAlerts(alerts),
      writesSettled: async () => {
        await Promise.allSettled([...this.writes]);
      },
    };
    this.leases = new BudgetLeases(leaseDeps);
    this.keyLeases = new BudgetLeases(leaseDeps);
  }

  async start(): Promise<void> {
    await this.store.subscribe(budgetChannel, (scope) => this.forgetBudget(scope));
    // Alerts claimed before a crash and never published go out now and then periodically.
    void this.republishPending();
    this.republishTimer = setInterval(() => void this.republishPending(), republishEveryMs);
    this.republishTimer.unref();
  }

  /** Returns this replica's budget leases (those without calls in flight; the gateway drains calls first). */
  async stop(): Promise<void> {
    clearInterval(this.republishTimer);
    await Promise.all([this.leases.close(), this.keyLeases.close()]);
  }

  /** `scope`: budgetScope's name, as broadcast (a key's budget is `<project>\t<key>`). */
  private forgetBudget(scope: string): void {
    const [project_id = "", api_key_id] = scope.split("\t");
    if (api_key_id) {
      this.keyBudgets.delete(api_key_id);
      this.keyLeases.forget({ project_id, api_key_id });
    } else {
      this.budgets.delete(project_id);
      this.leases.forget({ project_id });
    }
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
        this.keyLeases.applied(records);
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
   * nothing needs reserving: a test key, or a project and key known to have
   * no hard limit. Otherwise reserves `estimateNanos()` under each hard
   * budget (the project's, the key's) or throws 402 budget_exceeded.
   */
  admit(payer: Payer, estimateNanos: () => number): undefined | Promise<Reservation | undefined> {
    if (!payer.live) return undefined;
    const now = this.clock.now();
    const project = this.budgets.get(payer.project_id);
    const key = this.keyBudgets.get(payer.api_key_id);
    if (!project || now - project.readAt >= cacheTtlMs || !key || now - key.readAt >= cacheTtlMs) return this.admitSlow(payer, estimateNanos, now);
    if (!project.hard && !key.hard) return undefined;
    let estimate: number;
    try {
      estimate = Math.max(0, Math.ceil(estimateNanos()));
    } catch (error) {
      return Promise.reject(error); // as before, a failed estimate fails the admission's promise, never synchronously
    }
    if (!key.hard) return this.admitUnder(this.leases, { project_id: payer.project_id }, estimate, project.limitNanos, now);
    const keyPlace = { project_id: payer.project_id, api_key_id: payer.api_key_id };
    if (!project.hard) return this.admitUnder(this.keyLeases, keyPlace, estimate, key.limitNanos, now);
    return this.admitBoth(payer, estimate, project.limitNanos, key.limitNanos, now);
  }

  /** One hard budget: from the replica's lease when it fits (no ledger step; a zero estimate, work of unknown cost, keeps the per-call rule). */
  private admitUnder(leases: BudgetLeases, place: BudgetPlace, estimate: number, limit: number, now: number): Promise<Reservation> {
    const ticket = estimate > 0 ? leases.take(place, estimate, now) : undefined;
    return ticket ? Promise.resolve(ticket) : this.admitHard(leases, place, estimate, limit, now);
  }

  /** Both hard: the key's budget first (usually the smaller), then the project's; a refusal by the project releases the key's hold. */
  private async admitBoth(payer: Payer, estimate: number, projectLimit: number, keyLimit: number, now: number): Promise<Reservation> {
    const key = await this.admitUnder(this.keyLeases, { project_id: payer.project_id, api_key_id: payer.api_key_id }, estimate, keyLimit, now);
    try {
      return new BothBudgets(await this.admitUnder(this.leases, { project_id: payer.project_id }, estimate, projectLimit, now), key);
    } catch (error) {
      // The call never starts: the key's hold goes back whole (a per-call one expires on its own if the ledger cannot be reached).
      if (key instanceof LeaseTicket) this.keyLeases.cancel(key);
      else await this.ledger.release(key).catch(() => undefined);
      throw error;
    }
  }

  private async admitSlow(payer: Payer, estimateNanos: () => number, now: number): Promise<Reservation | undefined> {
    const [project, key] = await Promise.all([this.readBudget({ project_id: payer.project_id }, now), this.readBudget({ project_id: payer.project_id, api_key_id: payer.api_key_id }, now)]);
    if (!project.hard && !key.hard) return undefined;
    const estimate = Math.max(0, Math.ceil(estimateNanos()));
    if (!key.hard) return this.admitHard(this.leases, { project_id: payer.project_id }, estimate, project.limitNanos, now);
    const keyPlace = { project_id: payer.project_id, api_key_id: payer.api_key_id };
    if (!project.hard) return this.admitHard(this.keyLeases, keyPlace, estimate, key.limitNanos, now);
    return this.admitBoth(payer, estimate, project.limitNanos, key.limitNanos, now);
  }

  private async readBudget(place: BudgetPlace, now: number): Promise<CachedBudget> {
    const budget = await this.ledger.getBudget(place.project_id, place.api_key_id);
    const cached = { hard: budget?.hard_limit ?? false, limitNanos: budget ? limitNanos(budget) : 0, readAt: now };
    if (place.api_key_id) this.keyBudgets.set(place.api_key_id, cached);
    else this.budgets.set(place.project_id, cached);
    return cached;
  }

  /**
   * A hard-limited call that the current lease cannot admit: from a new
   * lease, else its own reservation. A refusal while this replica holds
   * leases of the budget returns the idle ones and asks once more, so on
   * one replica a call is never refused for money its own idle lease holds.
   */
  private async admitHard(leases: BudgetLeases, place: BudgetPlace, estimate: number, limit: number, now: number): Promise<Reservation> {
    if (estimate > 0) {
      const ticket = await leases.takeWithNewLease(place, estimate, limit, now);
      if (ticket) return ticket;
    }
    const reservation: Reservation = { ...place, period: periodOf(isoTime(now)), id: prefixedId("rsv", now) };
    if (!place.api_key_id) delete reservation.api_key_id;
    let outcome = await this.ledger.reserve(reservation, estimate, now + reservationTtlMs, now);
    if (!outcome.admitted && leases.holds(place)) {
      await leases.returnIdle(place);
      outcome = await this.ledger.reserve(reservation, estimate, now + reservationTtlMs, now);
    }
    if (outcome.admitted) return reservation;
    throw exceeded(outcome, reservation.period, undefined, place.api_key_id);
  }

  /**
   * Admits a video job whose parts (scenes, narration) cost at most
   * `amountsNanos`: undefined when nothing needs holding (a test key, no hard
   * limit), else the parts held, one id each; 402 budget_exceeded when the
   * whole job does not fit under the limit.
   */
  async reserveParts(payer: Payer, idPrefix: string, amountsNanos: number[], opts: { keyBudget?: boolean } = {}): Promise<HeldParts | undefined> {
    if (!payer.live) return undefined;
    const now = this.clock.now();
    let cached = this.budgets.get(payer.project_id);
    if (!cached || now - cached.readAt >= cacheTtlMs) cached = await this.readBudget({ project_id: payer.project_id }, now);
    // `keyBudget`: the caller settles each part against the key's budget too (a video job, actors/job/job-budget.ts partsFor).
    let keyCached = opts.keyBudget ? this.keyBudgets.get(payer.api_key_id) : undefined;
    if (opts.keyBudget && (!keyCached || now - keyCached.readAt >= cacheTtlMs)) keyCached = await this.readBudget({ project_id: payer.project_id, api_key_id: payer.api_key_id }, now);
    const keyHard = keyCached?.hard === true;
    if (!cached.hard && !keyHard) return undefined;
    const held: HeldParts = {
      project_id: payer.project_id,
      period: periodOf(isoTime(now)),
      parts: amountsNanos.map((amount, i) => ({ id: `${idPrefix}:${i}`, amount_nanos: Math.max(0, Math.ceil(amount)) })),
      ...(keyHard ? { api_key_id: payer.api_key_id } : {}),
      ...(cached.hard ? {} : { project: false }),
    };
    const needed = held.parts.reduce((sum, p) => sum + p.amount_nanos, 0);
    // The key's budget first (usually the smaller), as for a call; a refusal by the project releases the key's hold.
    if (keyHard) await this.holdParts(this.keyLeases, { project_id: held.project_id, api_key_id: payer.api_key_id, period: held.period }, held.parts, needed, now);
    if (cached.hard) {
      try {
        await this.holdParts(this.leases, { project_id: held.project_id, period: held.period }, held.parts, needed, now);
      } catch (error) {
        if (keyHard) for (const p of held.parts) await this.ledger.release({ project_id: held.project_id, api_key_id: payer.api_key_id, period: held.period, id: p.id }).catch(() => undefined);
        throw error;
      }
    }
    return held;
  }

  /** Holds every part in one budget (the project's or a key's), else 402 budget_exceeded naming it. */
  private async holdParts(leases: BudgetLeases, place: Omit<Reservation, "id">, parts: ReservedPart[], neededNanos: number, now: number): Promise<void> {
    const budgetPlace = place.api_key_id ? { project_id: place.project_id, api_key_id: place.api_key_id } : { project_id: place.project_id };
    let outcome = await this.ledger.reserveParts(place, parts, now + jobReservationTtlMs, now, false);
    if (!outcome.admitted && leases.holds(budgetPlace)) {
      // As for a call: never refused for money this replica's idle leases hold.
      await leases.returnIdle(budgetPlace);
      outcome = await this.ledger.reserveParts(place, parts, now + jobReservationTtlMs, now, false);
    }
    if (!outcome.admitted) throw exceeded(outcome, place.period, neededNanos, place.api_key_id);
  }

  /** Holds again the parts of a job admitted earlier that are not held (the embedded ledger keeps holds in memory: a restart loses them). */
  async restoreParts(held: HeldParts, parts: ReservedPart[]): Promise<void> {
    const now = this.clock.now();
    for (const place of placesOf(held)) await this.ledger.reserveParts(place, parts, now + jobReservationTtlMs, now, true);
  }

  /** Releases held parts without billing (a cancelled or failed job's unfinished ones), in every budget that holds them. */
  async releaseParts(held: HeldParts, partIds: string[]): Promise<void> {
    for (const place of placesOf(held)) for (const id of partIds) await this.ledger.release({ ...place, id });
  }

  /**
   * Bills a reserved call at its real cost and releases its reservation. A
   * call admitted from a lease settles in memory (its record is in the usage
   * journal before the answer, and reaches the ledger with the recorder's
   * append or the lease's return, whichever comes first); a call that
   * reserved on its own settles in one atomic ledger step.
   */
  settle(reservation: Reservation, record: UsageRecord | undefined): Promise<void> {
    if (reservation instanceof BothBudgets) {
      // The project's first: its append (when not from a lease) bills the record, the key's then only releases (the ledger skips a record it has).
      return this.settle(reservation.project, record).then(() => this.settle(reservation.key, record));
    }
    if (reservation instanceof LeaseTicket) {
      (reservation.api_key_id ? this.keyLeases : this.leases).settle(reservation, record);
      return settled;
    }
    return this.ledger.append(record ? [record] : [], reservation).then((alerts) => this.publishAlerts(alerts));
  }

  /**
   * Bills one record now, durably and idempotently on its usage_key (the
   * video JobActor's `bill`: `request_id = "job:<job>:segment:<i>"`).
   * Resolves once the record is in the ledger; billing it again is a no-op.
   */
  readonly bill = async (record: UsageRecord, settles?: Reservation | readonly Reservation[]): Promise<void> => {
    await this.publishAlerts(await this.ledger.append([record]));
    // Billed first, released after: in between, the part counts twice (never under the limit's guard). Several: the project's part and the key's.
    for (const part of settles === undefined ? [] : Array.isArray(settles) ? settles : [settles as Reservation]) await this.ledger.release(part);
  };

  /** `apiKeyId`: that key's own budget within the project (a key without one: hard_limit false, no thresholds). */
  async putBudget(projectId: string, budget: StoredBudget, apiKeyId?: string): Promise<void> {
    await this.ledger.putBudget(projectId, budget, apiKeyId);
    const scope = budgetScope(projectId, apiKeyId);
    this.forgetBudget(scope);
    await this.store.publish(budgetChannel, scope);
  }

  private async publishAlerts(alerts: BudgetAlert[]): Promise<void> {
    for (const alert of alerts) {
      try {
        if (alert.api_key_id) {
          await this.events.publish({
            id: alertEventId(alert),
            type: "key.budget.alert",
            organization_id: alert.organization_id,
            project_id: alert.project_id,
            environment_id: null,
            created_at: isoTime(this.clock.now()),
            data: {
              api_key_id: alert.api_key_id,
              project_id: alert.project_id,
              period: alert.period,
              threshold: alert.threshold,
              budget_usd: usd(alert.limit_nanos),
              spent_usd: usd(alert.spent_nanos),
            },
          });
          await this.ledger.ackAlert(alert);
          continue;
        }
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

/**
 * The 402 of a refused reservation; `neededNanos`: what work of known cost (a
 * video job) asked for; `apiKeyId`: the key's own budget refused it (the same
 * code, so every dialect maps it as it maps the project's; the message and
 * `details.api_key_id` say which budget).
 */
function exceeded(outcome: Exclude<ReserveOutcome, { admitted: true }>, period: string, neededNanos?: number, apiKeyId?: string): TroupeError {
  const { limit_nanos: limit, spent_nanos: spent, reserved_nanos: reserved } = outcome;
  const details = { limit_usd: usd(limit), spent_usd: usd(spent), reserved_usd: usd(reserved), period };
  if (apiKeyId) {
    if (neededNanos === undefined || spent + reserved >= limit) {
      return new TroupeError("budget_exceeded", `this API key's monthly budget of ${usd(limit)} USD is used up (${usd(spent)} USD spent)`, {
        details: { ...details, budget: "api_key", api_key_id: apiKeyId },
      });
    }
    return new TroupeError(
      "budget_exceeded",
      `this work may cost up to ${usd(neededNanos)} USD, more than the ${usd(limit - spent - reserved)} USD left of this API key's monthly budget of ${usd(limit)} USD (${usd(spent)} USD spent, ${usd(reserved)} USD reserved by work in flight)`,
      { details: { ...details, budget: "api_key", api_key_id: apiKeyId, required_usd: usd(neededNanos) } },
    );
  }
  if (neededNanos === undefined || spent + reserved >= limit) {
    return new TroupeError("budget_exceeded", `the project's monthly budget of ${usd(limit)} USD is used up (${usd(spent)} USD spent)`, { details });
  }
  return new TroupeError(
    "budget_exceeded",
    `this work may cost up to ${usd(neededNanos)} USD, more than the ${usd(limit - spent - reserved)} USD left of the project's monthly budget of ${usd(limit)} USD (${usd(spent)} USD spent, ${usd(reserved)} USD reserved by work in flight)`,
    { details: { ...details, required_usd: usd(neededNanos) } },
  );
}

/** Nano-dollars as USD rounded to the micro-dollar (what the API shows). */
export function usd(nanos: number): number {
  return Math.round(nanos / 1000) / 1_000_000;
}


