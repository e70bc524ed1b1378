// The in-process actor host: Dapr's actor semantics inside one Node process,
// for `npm start` with nothing else installed. Turns run one
// at a time per actor id (FIFO), actors activate on first call from the
// lmdb store and deactivate after idleTimeoutMs, or sooner when more than
// maxResident are in memory (least recently used first, only between turns
// and without armed timers: memory follows the active set, not the total
// ever created), timers live in memory,
// reminders are persisted and re-armed on start (one that fell due while
// the process was down fires once right away). It never spans machines.
import type { Clock } from "../../../core/clock.ts";
import { TroupeError } from "../../../core/errors.ts";
import type { Logger } from "../../../core/log.ts";
import type { Tracing } from "../../../core/tracing.ts";
import { actorSpanAttributes } from "../../actor-spans.ts";
import type { AnyActorDefinition, IdSource } from "../../actor.ts";
import type { ActiveActorCount, ActorHost, CallOptions } from "../../host.ts";
import { Activation, asJsonText, defaultMaxResident, dropLeastRecent, markUsed, randomIds, jsonCopy, type ActorServices, type ScheduleSpec } from "../activation.ts";
import { ActorRegistry, initialStateJson } from "../registry.ts";
import { ActorStore, type StoredReminder } from "./store.ts";

export interface EmbeddedHostOptions {
  dataDir: string;
  idleTimeoutMs: number;
  clock: Clock;
  /** Ids the actors mint (default: random UUIDs). */
  ids?: IdSource;
  log: Logger;
  /** A span per turn, child of the caller's (default: off). */
  tracing?: Tracing;
  /** Most actors kept in memory (ACTOR_MAX_RESIDENT; default defaultMaxResident). */
  maxResident?: number;
}

/** Resident actors looked at per eviction pass: busy ones are skipped, the sweeper retries what is left over. */
const evictionScanLimit = 1_000;

// setTimeout's ceiling (~24.8 days); longer delays re-arm in steps.
const maxTimeoutMs = 2 ** 31 - 1;

type Phase = "new" | "running" | "stopping" | "stopped";

interface ArmedTimer {
  handle: NodeJS.Timeout | undefined;
}

export class EmbeddedActorHost implements ActorHost {
  private readonly options: EmbeddedHostOptions;
  private readonly registry = new ActorRegistry();
  /** In least-recently-used order: a call moves its actor to the end. */
  private readonly activations = new Map<string, Activation>();
  private readonly maxResident: number;
  private readonly timers = new Map<string, Map<string, ArmedTimer>>();
  private readonly reminders = new Map<string, ArmedTimer>();
  private readonly services: ActorServices;
  private store: ActorStore | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private phase: Phase = "new";
  private readonly log: Logger;

  constructor(options: EmbeddedHostOptions) {
    this.options = options;
    this.maxResident = options.maxResident ?? defaultMaxResident;
    if (!Number.isInteger(this.maxResident) || this.maxResident < 1) throw new Error(`maxResident must be a positive integer, got ${this.maxResident}`);
    this.log = options.log.child({ component: "actors", host: "embedded" });
    this.services = {
      clock: options.clock,
      ids: options.ids ?? randomIds,
      log: options.log,
      // Turns still draining during stop() may call other actors.
      call: (type, id, method, input) => this.callInternal(type, id, method, input),
      setTimer: async (type, id, spec) => this.setTimer(type, id, spec),
      clearTimer: async (type, id, name) => this.clearTimer(type, id, name),
      setReminder: (type, id, spec) => this.setReminder(type, id, spec),
      clearReminder: (type, id, name) => this.clearReminder(type, id, name),
    };
  }

  register(definitions: readonly AnyActorDefinition[]): void {
    if (this.phase !== "new") throw new Error("register actor types before start()");
    this.registry.add(definitions);
  }

  async start(): Promise<void> {
    if (this.phase !== "new") throw new Error(`cannot start an actor host that is ${this.phase}`);
    this.store = new ActorStore(this.options.dataDir);
    this.phase = "running";
    const now = this.options.clock.now();
    const stored = this.store.allReminders((key, error) => this.log.warn("skipping an unreadable reminder", { key, error: error.message }));
    for (const reminder of stored) {
      if (!this.registry.has(reminder.type)) {
        this.log.warn("reminder for an unregistered actor type kept but not armed", { actor_type: reminder.type, name: reminder.name });
        continue;
      }
      // A reminder due while the process was down fires once, now.
      this.armReminder(reminder, Math.max(0, reminder.dueAtMs - now));
    }
    const sweepMs = Math.max(50, Math.min(1_000, Math.floor(this.options.idleTimeoutMs / 4)));
    this.sweeper = setInterval(() => this.deactivateIdle(), sweepMs);
    this.sweeper.unref();
    this.log.info("embedded actor host started", { types: this.registry.names(), reminders: stored.length });
  }

  async ready(): Promise<boolean> {
    return this.phase === "running";
  }

  async call(type: string, id: string, method: string, input?: unknown, options: CallOptions = {}): Promise<unknown> {
    if (this.phase !== "running") throw new TroupeError("service_unavailable", "The actor host is not running.", { retryAfterSeconds: 1 });
    return this.callInternal(type, id, method, input, options.signal);
  }

  async callJson(type: string, id: string, method: string, input?: unknown, options: CallOptions = {}): Promise<string> {
    if (this.phase !== "running") throw new TroupeError("service_unavailable", "The actor host is not running.", { retryAfterSeconds: 1 });
    return this.turnOutput(type, id, method, input, options.signal, asJsonText);
  }

  private callInternal(type: string, id: string, method: string, input: unknown, signal?: AbortSignal): Promise<unknown> {
    return this.turnOutput(type, id, method, input, signal, jsonCopy);
  }

  /** Runs the turn (in a span when tracing) and hands its output over through `handOver`: never the actor's own objects. */
  private async turnOutput<T>(type: string, id: string, method: string, input: unknown, signal: AbortSignal | undefined, handOver: (output: unknown) => T): Promise<T> {
    if (this.phase !== "running" && this.phase !== "stopping") {
      throw new TroupeError("service_unavailable", "The actor host is not running.", { retryAfterSeconds: 1 });
    }
    const tracing = this.options.tracing;
    if (!tracing?.enabled) return handOver(await this.enqueue(type, id, method, input, signal));
    return tracing.inSpan(`actor ${type}.${method}`, { kind: "internal", attributes: actorSpanAttributes(type, id, method) }, async () =>
      handOver(await this.enqueue(type, id, method, input, signal)),
    );
  }

  /**
   * Finds (or activates) the actor and queues the turn in one synchronous
   * step: eviction runs only between turns, so no activation can be evicted
   * between being found and holding the turn (a second activation of the
   * same id would read a state the first is about to overwrite).
   */
  private enqueue(type: string, id: string, method: string, input: unknown, signal: AbortSignal | undefined): Promise<unknown> {
    return this.activate(type, id).invoke(method, jsonCopy(input), signal);
  }

  async runtimeActiveActors(): Promise<ActiveActorCount[]> {
    return this.activeActors();
  }

  activeActors(): ActiveActorCount[] {
    const counts = new Map<string, number>(this.registry.names().map((name) => [name, 0]));
    for (const activation of this.activations.values()) {
      counts.set(activation.definition.type, (counts.get(activation.definition.type) ?? 0) + 1);
    }
    return [...counts].map(([type, count]) => ({ type, count }));
  }

  /** Whether (type, id) is in memory now (tests; the cap's eviction is otherwise invisible). */
  isActive(type: string, id: string): boolean {
    return this.activations.has(actorKey(type, id));
  }

  async stop(): Promise<void> {
    if (this.phase !== "running") return;
    this.phase = "stopping";
    if (this.sweeper) clearInterval(this.sweeper);
    for (const armed of this.reminders.values()) clearTimeout(armed.handle);
    this.reminders.clear();
    for (const key of [...this.timers.keys()]) this.dropTimers(key);
    // Every committed turn has already been written; wait for the ones in flight.
    await Promise.all([...this.activations.values()].map((a) => a.whenIdle()));
    this.activations.clear();
    await this.store?.close();
    this.phase = "stopped";
    this.log.info("embedded actor host stopped");
  }

  private activate(type: string, id: string): Activation {
    const key = actorKey(type, id);
    const existing = this.activations.get(key);
    if (existing) {
      markUsed(this.activations, key, existing);
      return existing;
    }
    const definition = this.registry.get(type);
    const store = this.requireStore();
    const stateJson = initialStateJson(definition, store.readState(type, id), id);
    const activation = new Activation(definition, id, stateJson, this.services, (json) => (json === null ? store.deleteState(type, id) : store.writeState(type, id, json)));
    this.activations.set(key, activation);
    if (this.activations.size > this.maxResident) this.evictOverCap();
    return activation;
  }

  private deactivateIdle(): void {
    const cutoff = this.options.clock.now() - this.options.idleTimeoutMs;
    for (const [key, activation] of this.activations) {
      if (activation.idle && activation.lastUsedMs <= cutoff) {
        this.activations.delete(key);
        this.dropTimers(key);
      }
    }
    if (this.activations.size > this.maxResident) this.evictOverCap();
  }

  /**
   * Deactivates the least recently used actors until at most maxResident
   * remain. Only an actor between turns (nothing running or queued: its
   * state is committed and stored) and without armed timers (they live in
   * memory and would die with it; reminders are stored and re-activate it) is
   * evicted; the next call activates it again from the store. Synchronous,
   * so no turn can start on an actor while it is being evicted.
   */
  private evictOverCap(): void {
    dropLeastRecent(this.activations, this.maxResident, (key, activation) => activation.idle && (this.timers.get(key)?.size ?? 0) === 0, {
      scanLimit: evictionScanLimit,
      dropped: (key) => this.timers.delete(key),
    });
  }

  private setTimer(type: string, id: string, spec: ScheduleSpec): void {
    const key = actorKey(type, id);
    if (!this.activations.has(key)) throw new Error(`timers belong to an active actor; ${key} is not active`);
    let perActor = this.timers.get(key);
    if (!perActor) {
      perActor = new Map();
      this.timers.set(key, perActor);
    }
    const previous = perActor.get(spec.name);
    if (previous) clearTimeout(previous.handle);
    const armed: ArmedTimer = { handle: undefined };
    perActor.set(spec.name, armed);
    const fire = (): void => {
      const activation = this.activations.get(key);
      if (!activation || this.phase !== "running" || perActor.get(spec.name) !== armed) return;
      if (spec.periodMs === undefined) perActor.delete(spec.name);
      else armed.handle = setTimeout(fire, Math.min(spec.periodMs, maxTimeoutMs));
      activation.invoke(spec.method, jsonCopy(spec.input)).catch((error: unknown) => {
        this.log.warn("timer turn failed", { actor_type: type, actor_id: id, timer: spec.name, error });
      });
    };
    armed.handle = setTimeout(fire, Math.min(spec.dueMs, maxTimeoutMs));
  }

  private clearTimer(type: string, id: string, name: string): void {
    const perActor = this.timers.get(actorKey(type, id));
    const armed = perActor?.get(name);
    if (armed) clearTimeout(armed.handle);
    perActor?.delete(name);
  }

  private dropTimers(key: string): void {
    const perActor = this.timers.get(key);
    if (!perActor) return;
    for (const armed of perActor.values()) clearTimeout(armed.handle);
    this.timers.delete(key);
  }

  private async setReminder(type: string, id: string, spec: ScheduleSpec): Promise<void> {
    const reminder: StoredReminder = {
      type,
      id,
      name: spec.name,
      method: spec.method,
      input: jsonCopy(spec.input),
      dueAtMs: this.options.clock.now() + spec.dueMs,
      ...(spec.periodMs === undefined ? {} : { periodMs: spec.periodMs }),
    };
    await this.requireStore().putReminder(reminder);
    this.armReminder(reminder, spec.dueMs);
  }

  private async clearReminder(type: string, id: string, name: string): Promise<void> {
    const key = reminderKey(type, id, name);
    const armed = this.reminders.get(key);
    if (armed) clearTimeout(armed.handle);
    this.reminders.delete(key);
    await this.requireStore().removeReminder(type, id, name);
  }

  private armReminder(reminder: StoredReminder, delayMs: number): void {
    const key = reminderKey(reminder.type, reminder.id, reminder.name);
    const previous = this.reminders.get(key);
    if (previous) clearTimeout(previous.handle);
    const armed: ArmedTimer = { handle: undefined };
    this.reminders.set(key, armed);
    const fire = (): void => {
      if (this.phase !== "running" || this.reminders.get(key) !== armed) return;
      const remainingMs = reminder.dueAtMs - this.options.clock.now();
      if (remainingMs > maxTimeoutMs) {
        armed.handle = setTimeout(fire, maxTimeoutMs);
        return;
      }
      void this.fireReminder(key, armed, reminder);
    };
    armed.handle = setTimeout(fire, Math.min(delayMs, maxTimeoutMs));
  }

  private async fireReminder(key: string, armed: ArmedTimer, reminder: StoredReminder): Promise<void> {
    const store = this.requireStore();
    // Reschedule (or forget) before the turn, so a crash mid-turn fires at most once more.
    if (reminder.periodMs === undefined) {
      this.reminders.delete(key);
      await store.removeReminder(reminder.type, reminder.id, reminder.name);
    } else {
      const next: StoredReminder = { ...reminder, dueAtMs: this.options.clock.now() + reminder.periodMs };
      await store.putReminder(next);
      if (this.reminders.get(key) === armed) this.armReminder(next, reminder.periodMs);
    }
    try {
      await this.call(reminder.type, reminder.id, reminder.method, reminder.input);
    } catch (error) {
      this.log.warn("reminder turn failed", { actor_type: reminder.type, actor_id: reminder.id, reminder: reminder.name, error });
    }
  }

  private requireStore(): ActorStore {
    if (!this.store) throw new TroupeError("service_unavailable", "The actor host is not running.");
    return this.store;
  }
}

function actorKey(type: string, id: string): string {
  return `${type}\u0000${id}`;
}

function reminderKey(type: string, id: string, name: string): string {
  return `${type}\u0000${id}\u0000${name}`;
}
