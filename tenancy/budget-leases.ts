// Budget leases (docs/api/usage-budgets-rate-limits.md, "Leases"): how a
// hard-limited call is admitted and settled without a ledger round trip.
//
// A replica reserves a block of a hard-limited project's budget in the
// ledger (one reserveParts step: granted only when spent + reserved + the
// block ≤ the limit) and admits calls from it in-process: a call takes its
// estimate from the block, and at settle gives back what it did not spend.
// The ledger counts the whole block as reserved until it is returned, and
// the records of the calls it admitted count as spent as soon as the usage
// recorder appends them, so while a lease is held its spending counts twice
// there (conservative, never under). A lease admits for leaseMaxAgeMs, then
// is returned: one append of the records the ledger may not have yet,
// settling the block in the same atomic step (so spent has every record the
// moment the block stops counting). A replica killed mid-lease loses nothing
// billed (each record was in the usage journal before its answer) and its
// block expires like any reservation.
//
// Near the limit there is no lease: a block smaller than minLeaseCalls
// estimates is not worth holding, and the caller reserves per call as before.
//
// A lease is of one budget (a BudgetPlace): a project's, or one API key's
// own within its project; a call under both holds a ticket of each.
import type { Clock } from "../core/clock.ts";
import { isoTime } from "../core/clock.ts";
import { prefixedId } from "../core/ids.ts";
import type { Logger } from "../core/log.ts";
import type { UsageRecord } from "../providers/usage.ts";
import { budgetScope, periodOf, type BudgetAlert, type LedgerStore, type Reservation } from "./ledger.ts";

/** Whose budget: a project's, or (`api_key_id`) one key's own within that project. */
export type BudgetPlace = Pick<Reservation, "project_id" | "api_key_id">;

/** A lease is sized for this many estimates of the call that asked for it ... */
export const leaseCalls = 256;
/** ... but never more than this share of the limit, so several replicas can each hold one. */
export const leaseShareOfLimit = 1 / 8;
/** When the ledger refuses that size, a lease of this share of what is left is tried once. */
const leaseShareOfRemaining = 1 / 4;
/** Below this many estimates a lease is not taken: the call reserves on its own. */
export const minLeaseCalls = 16;
/** A lease admits calls this long, then goes back (1 s: the most a lease held idle keeps money from other replicas). */
export const leaseMaxAgeMs = 1_000;
/** From this age on the next lease is taken in the background, so calls never wait for it. */
const renewAfterMs = 750;
/** After a project's lease was refused, per-call reservations only for this long (no round trip per call to ask again). */
const noLeaseForMs = leaseMaxAgeMs;
/** A failed return is retried this often until the lease's ledger hold expires. */
const retryReturnMs = 1_000;

/** A call admitted from a lease: what settle needs to give the rest back. */
export class LeaseTicket implements Reservation {
  readonly project_id: string;
  readonly api_key_id: string | undefined;
  readonly period: string;
  /** Unique per call: a ticket that lost its class (cloned) releases nothing in the ledger. */
  readonly id: string;
  readonly lease: Lease;
  readonly estimate: number;

  constructor(lease: Lease, estimate: number) {
    this.project_id = lease.reservation.project_id;
    this.api_key_id = lease.reservation.api_key_id;
    this.period = lease.reservation.period;
    this.id = `${lease.reservation.id}:${(lease.calls += 1)}`;
    this.lease = lease;
    this.estimate = estimate;
  }
}

export class Lease {
  readonly reservation: Reservation;
  readonly amount: number;
  /** Estimates of the calls in flight plus the cost of those settled: never above `amount`. */
  used = 0;
  inFlight = 0;
  calls = 0;
  /** Settled records the ledger may not have yet, by usage_key: appended with the return. */
  readonly unapplied = new Map<string, UsageRecord>();
  readonly admitsUntil: number;
  readonly renewAt: number;
  /** When the ledger drops the hold on its own (a replica that died). */
  readonly expiresAt: number;
  retired = false;
  returning = false;
  timer: NodeJS.Timeout | undefined;

  constructor(reservation: Reservation, amount: number, now: number, expiresAt: number) {
    this.reservation = reservation;
    this.amount = amount;
    const periodEnd = monthEndMs(now);
    this.admitsUntil = Math.min(now + leaseMaxAgeMs, periodEnd);
    this.renewAt = Math.min(now + renewAfterMs, periodEnd);
    this.expiresAt = expiresAt;
  }
}

interface ProjectLeases {
  current: Lease | undefined;
  acquiring: Promise<void> | undefined;
  /** Leases no longer admitting whose return has not landed. */
  retiring: Set<Lease>;
  noLeaseUntil: number;
}

export interface BudgetLeasesDeps {
  ledger: LedgerStore;
  clock: Clock;
  log: Logger;
  /** How long the ledger holds a lease whose replica never returns it. */
  holdTtlMs: number;
  /** Records per ledger append (the ledger's step size). */
  chunk: number;
  publishAlerts(alerts: BudgetAlert[]): Promise<void>;
  /** Resolves once the usage recorder's appends in flight now have ended (however they ended). */
  writesSettled(): Promise<void>;
}

export class BudgetLeases {
  private readonly deps: BudgetLeasesDeps;
  private readonly projects = new Map<string, ProjectLeases>();
  /** usage_key → the lease whose return must carry the record until the recorder's append has it. */
  private readonly awaitingLedger = new Map<string, Lease>();
  private readonly returns = new Set<Promise<void>>();

  constructor(deps: BudgetLeasesDeps) {
    this.deps = deps;
  }

  /** A ticket from the project's lease, synchronously; undefined when it has none that fits the estimate. */
  take(place: BudgetPlace, estimate: number, now: number): LeaseTicket | undefined {
    const project = this.projects.get(budgetScope(place.project_id, place.api_key_id));
    const lease = project?.current;
    if (!project || !lease) return undefined;
    if (now >= lease.admitsUntil) {
      this.retire(project, lease);
      return undefined;
    }
    if (lease.used + estimate > lease.amount) return undefined;
    if (now >= lease.renewAt && !project.acquiring) this.startAcquiring(project, place, lease.amount, estimate * minLeaseCalls, now);
    lease.used += estimate;
    lease.inFlight += 1;
    return new LeaseTicket(lease, estimate);
  }

  /**
   * The slow path: takes a lease for the project (one ledger step, shared by
   * the calls that arrive meanwhile) and a ticket from it; undefined when no
   * lease fits (near the limit), so the call reserves on its own.
   */
  async takeWithNewLease(place: BudgetPlace, estimate: number, limitNanos: number, now: number): Promise<LeaseTicket | undefined> {
    const project = this.projectOf(place);
    const ticket = this.take(place, estimate, now);
    if (ticket) return ticket;
    if (project.current) this.retire(project, project.current);
    if (now < project.noLeaseUntil) return undefined;
    const amount = Math.min(leaseCalls * estimate, Math.floor(limitNanos * leaseShareOfLimit));
    if (amount < minLeaseCalls * estimate) {
      project.noLeaseUntil = now + noLeaseForMs;
      return undefined;
    }
    if (!project.acquiring) this.startAcquiring(project, place, amount, minLeaseCalls * estimate, now);
    await project.acquiring;
    return this.take(place, estimate, this.deps.clock.now());
  }

  /** Whether this replica holds money of the project in leases (current or not yet returned). */
  holds(place: BudgetPlace): boolean {
    const project = this.projects.get(budgetScope(place.project_id, place.api_key_id));
    return project !== undefined && (project.current !== undefined || project.retiring.size > 0);
  }

  /** Retires the project's lease and waits for the returns that can land now (no call in flight). */
  async returnIdle(place: BudgetPlace): Promise<void> {
    const project = this.projects.get(budgetScope(place.project_id, place.api_key_id));
    if (!project) return;
    if (project.current) this.retire(project, project.current);
    await Promise.all([...this.returns]);
  }

  /**
   * Settles a call admitted from a lease: gives back what it did not spend;
   * the record goes with the lease's return. Without a record (a failed
   * call, or an agent turn's hold whose model calls are billed on their
   * own) the estimate stays used until the lease goes back: the turn's
   * spending reaches the ledger without passing through the lease, so the
   * lease must not admit others on that money meanwhile.
   */
  settle(ticket: LeaseTicket, record: UsageRecord | undefined): void {
    const lease = ticket.lease;
    lease.inFlight -= 1;
    if (record) {
      lease.used += record.cost_nanos - ticket.estimate;
      lease.unapplied.set(record.usage_key, record);
      this.awaitingLedger.set(record.usage_key, lease);
    }
    if (lease.retired && lease.inFlight === 0) this.startReturn(this.projectOf(ticket), lease);
  }

  /**
   * Gives back a ticket whose call never started (the other budget of a call
   * under two refused it): its estimate was never spent, so unlike a failed
   * call's it returns to the lease at once.
   */
  cancel(ticket: LeaseTicket): void {
    const lease = ticket.lease;
    lease.inFlight -= 1;
    lease.used -= ticket.estimate;
    if (lease.retired && lease.inFlight === 0) this.startReturn(this.projectOf(ticket), lease);
  }

  /** The recorder's append put these records in the ledger: their leases need not carry them. */
  applied(records: readonly UsageRecord[]): void {
    if (this.awaitingLedger.size === 0) return;
    for (const record of records) {
      const lease = this.awaitingLedger.get(record.usage_key);
      if (!lease || lease.reservation.project_id !== record.project_id) continue;
      this.awaitingLedger.delete(record.usage_key);
      lease.unapplied.delete(record.usage_key);
    }
  }

  /** A budget changed: its project's lease stops admitting (the next call leases under the new limit). */
  forget(place: BudgetPlace): void {
    const project = this.projects.get(budgetScope(place.project_id, place.api_key_id));
    if (project?.current) this.retire(project, project.current);
    if (project) project.noLeaseUntil = 0;
  }

  /** Shutdown: every lease stops admitting; waits for the returns of those without calls in flight. */
  async close(): Promise<void> {
    for (const project of this.projects.values()) if (project.current) this.retire(project, project.current);
    await Promise.all([...this.returns]);
  }

  private projectOf(place: BudgetPlace): ProjectLeases {
    const scope = budgetScope(place.project_id, place.api_key_id);
    let project = this.projects.get(scope);
    if (!project) {
      project = { current: undefined, acquiring: undefined, retiring: new Set(), noLeaseUntil: 0 };
      this.projects.set(scope, project);
    }
    return project;
  }

  private startAcquiring(project: ProjectLeases, place: BudgetPlace, amount: number, minAmount: number, now: number): void {
    project.acquiring = this.acquire(project, place, amount, minAmount, now)
      .catch((error: unknown) => {
        // The caller falls back to a per-call reservation, which reports the ledger's error itself.
        this.deps.log.warn("budget lease not taken", { project_id: place.project_id, api_key_id: place.api_key_id, error });
        project.noLeaseUntil = this.deps.clock.now() + noLeaseForMs;
      })
      .finally(() => {
        project.acquiring = undefined;
      });
  }

  private async acquire(project: ProjectLeases, place: BudgetPlace, amount: number, minAmount: number, now: number): Promise<void> {
    const period = periodOf(isoTime(now));
    const expiresAt = now + this.deps.holdTtlMs;
    const where = place.api_key_id ? { project_id: place.project_id, api_key_id: place.api_key_id, period } : { project_id: place.project_id, period };
    let size = amount;
    for (let attempt = 0; attempt < 2; attempt++) {
      const reservation: Reservation = { ...where, id: prefixedId("lse", now) };
      const outcome = await this.deps.ledger.reserveParts(where, [{ id: reservation.id, amount_nanos: size }], expiresAt, now, false);
      if (outcome.admitted) {
        const lease = new Lease(reservation, size, now, expiresAt);
        if (project.current) this.retire(project, project.current);
        project.current = lease;
        // An idle lease goes back on time too, not at the next call.
        lease.timer = setTimeout(() => this.retire(project, lease), Math.max(0, lease.admitsUntil - now));
        lease.timer.unref();
        return;
      }
      size = Math.floor((outcome.limit_nanos - outcome.spent_nanos - outcome.reserved_nanos) * leaseShareOfRemaining);
      if (size < minAmount) break;
    }
    project.noLeaseUntil = now + noLeaseForMs;
  }

  private retire(project: ProjectLeases, lease: Lease): void {
    if (lease.retired) return;
    lease.retired = true;
    clearTimeout(lease.timer);
    if (project.current === lease) project.current = undefined;
    project.retiring.add(lease);
    if (lease.inFlight === 0) this.startReturn(project, lease);
  }

  private startReturn(project: ProjectLeases, lease: Lease): void {
    if (lease.returning) return;
    lease.returning = true;
    const done = this.returnLease(project, lease).finally(() => this.returns.delete(done));
    this.returns.add(done);
  }

  /**
   * Appends the records the ledger may not have and settles the lease's
   * hold in the same step (the last one): spent has them all once the hold
   * stops counting. A failure is retried until the hold expires anyway.
   */
  private async returnLease(project: ProjectLeases, lease: Lease): Promise<void> {
    // The recorder's appends already on their way carry most of the records: not sent twice (the
    // ledger would skip them, at the cost of its thread's work per record).
    await this.deps.writesSettled();
    const records = [...lease.unapplied.values()];
    try {
      const { chunk } = this.deps;
      const lastStart = records.length === 0 ? 0 : Math.floor((records.length - 1) / chunk) * chunk;
      for (let i = 0; i < lastStart; i += chunk) await this.deps.publishAlerts(await this.deps.ledger.append(records.slice(i, i + chunk)));
      const alerts = await this.deps.ledger.append(records.slice(lastStart), lease.reservation);
      this.applied(records);
      project.retiring.delete(lease);
      await this.deps.publishAlerts(alerts);
    } catch (error) {
      if (this.deps.clock.now() >= lease.expiresAt) {
        // The ledger dropped the hold; the records still reach it through the usage recorder.
        project.retiring.delete(lease);
        this.applied(records);
        return;
      }
      this.deps.log.warn("budget lease not returned yet; will retry", { project_id: lease.reservation.project_id, error });
      lease.returning = false;
      setTimeout(() => this.startReturn(project, lease), retryReturnMs).unref();
    }
  }
}

/** The first millisecond of the next UTC month: a lease never admits across a period's end. */
function monthEndMs(now: number): number {
  const date = new Date(now);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
}
