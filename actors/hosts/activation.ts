// One active actor: its committed state (kept in memory as JSON), its FIFO
// turn queue, and the turn itself. Shared by both hosts so the commit rule —
// state is persisted and replaces the in-memory copy only when the method
// resolves — is written once — and so is the input check: the method's input
// schema parses what the caller sent before the turn runs. So is the outbox
// rule: what a turn queued with ctx.afterCommit runs only after that commit.
import { AsyncLocalStorage } from "node:async_hooks";
import type { z } from "zod";
import type { Clock } from "../../core/clock.ts";
import type { Logger } from "../../core/log.ts";
import { uuid } from "../../core/ids.ts";
import { invalidRequest, TroupeError, type FieldIssue } from "../../core/errors.ts";
import type { ActorContext, AnyActorDefinition, IdSource } from "../actor.ts";

export interface ScheduleSpec {
  name: string;
  dueMs: number;
  periodMs: number | undefined;
  method: string;
  input: unknown;
}

/** What a host provides to the actors it runs. */
export interface ActorServices {
  clock: Clock;
  ids: IdSource;
  log: Logger;
  call(type: string, id: string, method: string, input: unknown): Promise<unknown>;
  setTimer(type: string, id: string, spec: ScheduleSpec): Promise<void>;
  clearTimer(type: string, id: string, name: string): Promise<void>;
  setReminder(type: string, id: string, spec: ScheduleSpec): Promise<void>;
  clearReminder(type: string, id: string, name: string): Promise<void>;
}

/**
 * 20,000 resident actors (ACTOR_MAX_RESIDENT), on either host: twice the
 * 10,000 conversations a process is meant to keep busy at once (the agents
 * target, docs/benchmarks.md),
 * so an active conversation stays resident between its turns (a new
 * conversation's activation: ~5 KiB, measured as 100,000 in ~650 MiB RSS
 * before the cap; plus its history's JSON). Beyond it the least recently
 * used idle actors leave memory; their state is already stored (every turn
 * commits before it answers).
 */
export const defaultMaxResident = 20_000;

/** Both hosts keep their activations in a Map in least-recently-used order: a call moves its actor to the end. */
export function markUsed<K, V>(activations: Map<K, V>, key: K, value: V): void {
  activations.delete(key);
  activations.set(key, value);
}

/**
 * Deletes the least recently used entries that `droppable` allows until at
 * most `keep` remain, looking at no more than `scanLimit` entries; `dropped`
 * runs for each one deleted.
 */
export function dropLeastRecent<K, V>(
  activations: Map<K, V>,
  keep: number,
  droppable: (key: K, value: V) => boolean,
  { scanLimit = Infinity, dropped }: { scanLimit?: number; dropped?: (key: K) => void } = {},
): void {
  let excess = activations.size - keep;
  let scanned = 0;
  for (const [key, value] of activations) {
    if (excess <= 0 || scanned++ >= scanLimit) return;
    if (!droppable(key, value)) continue;
    activations.delete(key);
    dropped?.(key);
    excess -= 1;
  }
}

/** The ids actors get unless a host is given others (tests): version 7 UUIDs (core/ids.ts). */
export const randomIds: IdSource = { uuid: () => uuid() };

/**
 * Writes the committed state; throwing fails the turn and keeps the previous
 * state. `null`: the turn left the initial state, so the stored state is
 * removed (an actor at its initial state is indistinguishable from one never
 * used; this is how a deleted resource's actor leaves nothing behind).
 */
export type PersistState = (stateJson: string | null) => Promise<void>;

interface QueuedTurn {
  method: string;
  input: unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  signal: AbortSignal | undefined;
  /**
   * Runs a function in the async context of the call that queued the turn.
   * The queue is drained in the context of whichever call found it idle, so
   * without this a turn queued behind another would run with that other
   * call's request context (its trace, its cache control, its key's model
   * allowlist) instead of its own. Undefined for a turn that starts the
   * drain: it runs in its caller's context already (no snapshot to pay for).
   */
  inCallerContext: (<R>(fn: () => R) => R) | undefined;
}

export class Activation {
  readonly definition: AnyActorDefinition;
  readonly id: string;
  lastUsedMs: number;
  private stateJson: string;
  private readonly queue: QueuedTurn[] = [];
  private running = false;
  private readonly services: ActorServices;
  private readonly persist: PersistState;
  private logger: Logger | undefined;
  private idleWaiters: Array<() => void> = [];
  private readonly initialJson: string;

  constructor(definition: AnyActorDefinition, id: string, stateJson: string, services: ActorServices, persist: PersistState) {
    this.definition = definition;
    this.id = id;
    this.stateJson = stateJson;
    this.services = services;
    this.persist = persist;
    this.initialJson = initialJsonOf(definition);
    this.lastUsedMs = services.clock.now();
  }

  /** Made on first use: most activations never log, and a child logger per resident actor is memory held for nothing. */
  private get log(): Logger {
    this.logger ??= this.services.log.child({ actor_type: this.definition.type, actor_id: this.id });
    return this.logger;
  }

  /** Nothing running or queued. */
  get idle(): boolean {
    return !this.running && this.queue.length === 0;
  }

  /** The committed state as JSON (what the store holds). */
  get committedStateJson(): string {
    return this.stateJson;
  }

  /** Queues one turn; turns run one at a time in arrival order. */
  invoke(method: string, input: unknown, signal?: AbortSignal): Promise<unknown> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    return new Promise((resolve, reject) => {
      const turn: QueuedTurn = { method, input, resolve, reject, signal: undefined, inCallerContext: this.running ? AsyncLocalStorage.snapshot() : undefined };
      if (signal) {
        const onAbort = (): void => {
          // Still queued: drop it. Already running: the caller stops waiting, the turn completes.
          const index = this.queue.indexOf(turn);
          if (index >= 0) this.queue.splice(index, 1);
          reject(abortError(signal));
        };
        signal.addEventListener("abort", onAbort, { once: true });
        turn.signal = signal;
        turn.resolve = (value) => {
          signal.removeEventListener("abort", onAbort);
          resolve(value);
        };
        turn.reject = (error) => {
          signal.removeEventListener("abort", onAbort);
          reject(error);
        };
      }
      this.queue.push(turn);
      this.lastUsedMs = this.services.clock.now();
      if (!this.running) void this.drain();
    });
  }

  /** Resolves when the queue is empty and no turn runs. */
  whenIdle(): Promise<void> {
    if (this.idle) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      for (let turn = this.queue.shift(); turn; turn = this.queue.shift()) {
        try {
          const { method: name, input } = turn;
          turn.resolve(await (turn.inCallerContext ? turn.inCallerContext(() => this.runTurn(name, input)) : this.runTurn(name, input)));
        } catch (error) {
          turn.reject(error);
        }
        this.lastUsedMs = this.services.clock.now();
      }
    } finally {
      this.running = false;
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  private async runTurn(method: string, input: unknown): Promise<unknown> {
    const { definition, id, services } = this;
    const declared = Object.hasOwn(definition.methods, method) ? definition.methods[method] : undefined;
    if (!declared) throw new TroupeError("not_found", `Actor type ${definition.type} has no method ${method}.`);
    const parsedInput = declared.input.safeParse(input);
    if (!parsedInput.success) throw invalidInput(definition.type, method, parsedInput.error);
    const announcements: Array<() => unknown> = [];
    let turnOpen = true;
    const activation = this;
    const ctx: ActorContext<unknown> = {
      type: definition.type,
      id,
      state: JSON.parse(this.stateJson) as unknown,
      clock: services.clock,
      ids: services.ids,
      get log() {
        return activation.log;
      },
      // Typed for the caller by the callee's declaration; the callee's host parses the input and answers JSON.
      call: ((callee: { type: string }, targetId: string, targetMethod: string, targetInput: unknown) => {
        // Turns are not reentrant: calling yourself would wait for this turn forever.
        if (callee.type === definition.type && targetId === id) {
          return Promise.reject(new Error(`${definition.type}/${id} cannot call itself (actor turns are not reentrant)`));
        }
        return services.call(callee.type, targetId, targetMethod, targetInput);
      }) as ActorContext<unknown>["call"],
      setTimer: (name, dueMs, periodMs, m, i) => services.setTimer(definition.type, id, checkSpec(definition, { name, dueMs, periodMs, method: m, input: i })),
      clearTimer: (name) => services.clearTimer(definition.type, id, name),
      setReminder: (name, dueMs, periodMs, m, i) =>
        services.setReminder(definition.type, id, checkSpec(definition, { name, dueMs, periodMs, method: m, input: i })),
      clearReminder: (name) => services.clearReminder(definition.type, id, name),
      afterCommit: (fn) => {
        // A promise the method left running may outlive the turn: its announcement has no commit to follow.
        if (!turnOpen) throw new Error(`${definition.type}.${method}: afterCommit called after the turn ended`);
        announcements.push(fn);
      },
    };
    try {
      const output = await declared.run(ctx, parsedInput.data);
      await this.commit(method, ctx.state);
      turnOpen = false;
      this.announce(method, announcements);
      return output;
    } finally {
      // A failed turn drops what it queued.
      turnOpen = false;
    }
  }

  /**
   * Persists the turn's state when it changed; throwing fails the turn.
   * The schema parses the draft first and only its output is serialized: a
   * turn that changes the state (most of them) pays one JSON.stringify of the
   * whole state, not two, and one that changes nothing compares the same
   * text (the committed JSON is itself a parsed state's, so an unchanged
   * draft parses back to it). Only a draft the schema refuses is serialized
   * as it is, to tell an untouched state (no error, as ever) from a broken one.
   */
  private async commit(method: string, state: unknown): Promise<void> {
    const { definition } = this;
    const parsed = definition.state.safeParse(state);
    if (!parsed.success) {
      if (JSON.stringify(state) === this.stateJson) return;
      throw new TroupeError("internal_error", `${definition.type}.${method} left a state that does not match its schema.`, {
        cause: parsed.error,
      });
    }
    const nextJson = JSON.stringify(parsed.data);
    if (nextJson !== this.stateJson) {
      await this.persist(nextJson === this.initialJson ? null : nextJson);
      this.stateJson = nextJson;
    }
  }

  /** Runs a committed turn's afterCommit functions in order; their failures are logged, never the turn's. */
  private announce(method: string, announcements: ReadonlyArray<() => unknown>): void {
    const failed = (error: unknown): void => this.log.warn("an afterCommit function failed", { method, error });
    for (const fn of announcements) {
      try {
        const result = fn();
        if (result instanceof Promise) result.catch(failed);
      } catch (error) {
        failed(error);
      }
    }
  }
}

/** The initial state as JSON, once per definition (parsed with the schema, as a committed state would be). */
const initialJsonByDefinition = new WeakMap<AnyActorDefinition, string>();
function initialJsonOf(definition: AnyActorDefinition): string {
  let json = initialJsonByDefinition.get(definition);
  if (json === undefined) {
    json = JSON.stringify(definition.state.parse(definition.initialState()));
    initialJsonByDefinition.set(definition, json);
  }
  return json;
}

/** 400 naming the fields of the input that failed the method's schema. */
function invalidInput(type: string, method: string, error: z.ZodError): TroupeError {
  const issues: FieldIssue[] = error.issues.map((issue) => ({ path: ["input", ...issue.path.map(String)].join("."), message: issue.message }));
  return invalidRequest(issues, `invalid input for ${type}.${method}: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`);
}

function checkSpec(definition: AnyActorDefinition, spec: ScheduleSpec): ScheduleSpec {
  const target = Object.hasOwn(definition.methods, spec.method) ? definition.methods[spec.method] : undefined;
  if (!target) throw new Error(`${definition.type} has no method ${spec.method} to schedule`);
  // Checked when scheduling too, so a bad input fails the scheduling turn instead of every firing.
  const parsed = target.input.safeParse(spec.input);
  if (!parsed.success) throw invalidInput(definition.type, spec.method, parsed.error);
  if (!spec.name || spec.name.includes("/")) throw new Error(`timer/reminder name "${spec.name}" must be non-empty without "/"`);
  if (!Number.isFinite(spec.dueMs) || spec.dueMs < 0) throw new Error(`dueMs must be a non-negative number, got ${spec.dueMs}`);
  if (spec.periodMs !== undefined && (!Number.isFinite(spec.periodMs) || spec.periodMs <= 0)) {
    throw new Error(`periodMs must be positive when given, got ${spec.periodMs}`);
  }
  return spec;
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The operation was aborted.", "AbortError");
}

/** Deep copy through JSON, so callers and actors never share objects (the Dapr host serializes anyway). */
export function jsonCopy(value: unknown): unknown {
  return value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as unknown);
}

/** An output as JSON text (ActorHost.callJson): undefined is `null`, as it would read back. */
export function asJsonText(value: unknown): string {
  return value === undefined ? "null" : JSON.stringify(value);
}
