// The actor model Troupe's actors are written against. An actor is one value:
// an explicit type name, a zod state schema, the initial state and its
// methods. Methods are plain async functions `(ctx, input) => output` that
// read and write `ctx.state`. Nothing here knows which host runs the actor
// (embedded or Dapr): the same definition runs on both (DESIGN.md §1).
//
// Semantics every host honours (Orleans/Dapr virtual actors):
// - an actor is addressed by (type, id); it is activated on first use and
//   deactivated after an idle timeout, never created or destroyed by callers;
// - one turn at a time per actor id, calls queue in order (no reentrancy:
//   an actor that calls itself, directly or through another actor, waits
//   for itself forever);
// - `ctx.state` is a private copy for the turn: it is committed (persisted
//   and kept in memory) only when the method resolves; a throwing turn leaves
//   both the persisted and the in-memory state unchanged;
// - timers live in memory and die with the activation; reminders are durable
//   and fire after a restart (one due while the process was down fires once).
//   Timers and reminders are registered immediately, not at commit;
// - method inputs and outputs are JSON values.
import type { z } from "zod";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";

/** What an actor sees during one turn. */
export interface ActorContext<S> {
  readonly type: string;
  readonly id: string;
  /** This turn's copy of the state; assign or mutate it freely. */
  state: S;
  readonly clock: Clock;
  readonly log: Logger;
  /** Calls a method on another actor and waits for its turn to finish. */
  call(type: string, id: string, method: string, input?: unknown): Promise<unknown>;
  /**
   * In-memory timer: calls `method(input)` on this actor after `dueMs`, then
   * every `periodMs` when given. Lost on deactivation and on restart.
   */
  setTimer(name: string, dueMs: number, periodMs: number | undefined, method: string, input?: unknown): Promise<void>;
  clearTimer(name: string): Promise<void>;
  /** Durable reminder: like a timer, but survives deactivation and restarts. */
  setReminder(name: string, dueMs: number, periodMs: number | undefined, method: string, input?: unknown): Promise<void>;
  clearReminder(name: string): Promise<void>;
}

/**
 * A method's input is typed by the definition (`input: never` in the
 * constraint accepts any parameter type); the host hands it the JSON the
 * caller sent, so methods that take outside input should parse it with zod.
 */
export type ActorMethod<S> = (ctx: ActorContext<S>, input: never) => Promise<unknown>;

export interface ActorDefinition<S = unknown, M extends Record<string, ActorMethod<S>> = Record<string, ActorMethod<S>>> {
  /** Explicit constant, never derived from a class or function name. */
  readonly type: string;
  readonly state: z.ZodType<S>;
  readonly initialState: () => S;
  readonly methods: M;
}

/** What hosts hold: a definition with its types erased. */
export interface AnyActorDefinition {
  readonly type: string;
  readonly state: z.ZodType<unknown>;
  readonly initialState: () => unknown;
  readonly methods: Readonly<Record<string, (ctx: ActorContext<unknown>, input: unknown) => Promise<unknown>>>;
}

const typeName = /^[A-Za-z][A-Za-z0-9_]*$/;

export function defineActor<S, M extends Record<string, ActorMethod<S>>>(definition: ActorDefinition<S, M>): ActorDefinition<S, M> {
  if (!typeName.test(definition.type)) throw new Error(`actor type "${definition.type}" must be letters, digits and underscores`);
  const initial = definition.state.safeParse(definition.initialState());
  if (!initial.success) throw new Error(`${definition.type}.initialState() does not match its state schema: ${initial.error.message}`);
  for (const [name, method] of Object.entries(definition.methods)) {
    if (typeof method !== "function") throw new Error(`${definition.type}.${name} is not a function`);
  }
  return Object.freeze({ ...definition, methods: Object.freeze({ ...definition.methods }) });
}

/** Erases a definition's types for a host's registry. */
export function eraseDefinition<S, M extends Record<string, ActorMethod<S>>>(definition: ActorDefinition<S, M>): AnyActorDefinition {
  return definition as unknown as AnyActorDefinition;
}

export type ActorState<D> = D extends ActorDefinition<infer S, Record<string, ActorMethod<infer S>>> ? S : never;
export type ActorMethods<D> = D extends ActorDefinition<unknown, infer M> ? M : D extends { methods: infer M } ? M : never;
export type MethodInput<D, K extends keyof ActorMethods<D>> = ActorMethods<D>[K] extends (ctx: never, input: infer I) => Promise<unknown> ? I : never;
export type MethodOutput<D, K extends keyof ActorMethods<D>> = ActorMethods<D>[K] extends (...args: never[]) => Promise<infer O> ? O : never;
