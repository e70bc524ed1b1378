// The actor model Troupe's actors are written against. An actor is one value:
// an explicit type name, a zod state schema, the initial state and its
// methods. Each method declares its input schema and a plain async function
// `run(ctx, input)` that reads and writes `ctx.state`; the input's type is
// inferred from the schema (RivetKit-style), so callers going
// through `callActor` are type-checked against it, and the host parses the
// input with it before the turn runs (a bad input is a 400, the turn never
// runs). Nothing here knows which host runs the actor (embedded or Dapr):
// the same definition runs on both (ARCHITECTURE.md, "The actor model").
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
// - what a turn announces outside the actor (events, listings, calls that
//   must not run inside the turn) goes through `ctx.afterCommit`: it runs
//   only once the turn's state is committed and is dropped when the turn
//   fails, so a failed turn announces nothing it did (an outbox);
// - method inputs and outputs are JSON values.
import type { z } from "zod";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";

/** Ids an actor mints, injected so tests can make them predictable. */
export interface IdSource {
  uuid(): string;
}

/** Each method's input schema, by method name. */
export type MethodInputs = Record<string, z.ZodType>;

/** What an actor sees during one turn; `I` types the methods timers and reminders name. */
export interface ActorContext<S, I extends MethodInputs = MethodInputs> {
  readonly type: string;
  readonly id: string;
  /** This turn's copy of the state; assign or mutate it freely. */
  state: S;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly log: Logger;
  /**
   * Calls a method on another actor and waits for its turn to finish. The
   * callee is named by its definition or an `actorRef` to it, so the method
   * name, its input and its output are typed from the callee's declaration
   * (as `callActor` is); the callee's host still parses the input with the
   * method's schema.
   */
  call<CS, CI extends MethodInputs, CO extends MethodOutputs<CI>, K extends keyof CI & string>(
    callee: ActorRef<CS, CI, CO>,
    id: string,
    method: K,
    input: z.input<CI[K]>,
  ): Promise<CO[K]>;
  /**
   * In-memory timer: calls `method(input)` on this actor after `dueMs`, then
   * every `periodMs` when given. Lost on deactivation and on restart.
   */
  setTimer<K extends keyof I & string>(name: string, dueMs: number, periodMs: number | undefined, method: K, input: z.input<I[K]>): Promise<void>;
  clearTimer(name: string): Promise<void>;
  /** Durable reminder: like a timer, but survives deactivation and restarts. */
  setReminder<K extends keyof I & string>(name: string, dueMs: number, periodMs: number | undefined, method: K, input: z.input<I[K]>): Promise<void>;
  clearReminder(name: string): Promise<void>;
  /**
   * Queues `fn` to run once this turn has committed: after its state was
   * persisted (or when it left the state unchanged), never when the turn
   * throws or its state write fails. Queued functions run in order, right
   * after the commit and before the caller gets the turn's answer; they are
   * not awaited (one may call this actor, whose next turn is queued behind
   * the caller's answer), and what they throw or reject with is logged. At
   * most once: a process killed between the commit and `fn` loses it, so
   * what must not be lost is also recorded in the state and retried by a
   * reminder.
   */
  afterCommit(fn: () => unknown): void;
}

/** Method outputs, by method name. */
export type MethodOutputs<I extends MethodInputs> = { [K in keyof I]: unknown };

export type ActorMethods<S, I extends MethodInputs, O extends MethodOutputs<I>> = {
  readonly [K in keyof I]: {
    readonly input: I[K];
    readonly run: (ctx: ActorContext<S, I>, input: z.output<I[K]>) => Promise<O[K]>;
  };
};

/**
 * An actor type as callers see it: its type name, carrying its definition's
 * types (state, method inputs and outputs) for the compiler only. A
 * definition is one; `actorRef` makes one from the type name where the
 * definition value is not at hand (it is built from dependencies elsewhere,
 * or importing it would make an import cycle).
 */
export interface ActorRef<S, I extends MethodInputs, O extends MethodOutputs<I>, T extends string = string> {
  readonly type: T;
  /** Never set: carries the types. */
  readonly [definitionTypes]?: { state: S; inputs: I; outputs: O };
}
declare const definitionTypes: unique symbol;

export interface ActorDefinition<S, I extends MethodInputs, O extends MethodOutputs<I>, T extends string = string> extends ActorRef<S, I, O, T> {
  /** Explicit constant, never derived from a class or function name. */
  readonly type: T;
  readonly state: z.ZodType<S>;
  readonly initialState: () => S;
  readonly methods: ActorMethods<S, I, O>;
}

/** What hosts hold: a definition with its types erased. */
export interface AnyActorDefinition {
  readonly type: string;
  readonly state: z.ZodType<unknown>;
  readonly initialState: () => unknown;
  readonly methods: Readonly<Record<string, { readonly input: z.ZodType; readonly run: (ctx: ActorContext<unknown>, input: unknown) => Promise<unknown> }>>;
}

/**
 * What `defineActor` accepts. Two views of `methods` are intersected so the
 * compiler infers each method's input schema (I, from `input`, which then
 * types `run`'s parameter) and its output (O, from `run`'s return type)
 * separately; one mapped type cannot infer both.
 */
type MethodsDeclaration<S, I extends MethodInputs, O extends MethodOutputs<I>> = {
  [K in keyof I]: { input: I[K]; run: (ctx: ActorContext<S, I>, input: z.output<I[K]>) => Promise<unknown> };
} & { [K in keyof O]: { run: (...args: never[]) => Promise<O[K]> } };

const typeName = /^[A-Za-z][A-Za-z0-9_]*$/;

export function defineActor<S, I extends MethodInputs, O extends MethodOutputs<I>, T extends string>(definition: {
  type: T;
  state: z.ZodType<S>;
  initialState: () => S;
  methods: MethodsDeclaration<S, I, O>;
}): ActorDefinition<S, I, O, T> {
  if (!typeName.test(definition.type)) throw new Error(`actor type "${definition.type}" must be letters, digits and underscores`);
  const initial = definition.state.safeParse(definition.initialState());
  if (!initial.success) throw new Error(`${definition.type}.initialState() does not match its state schema: ${initial.error.message}`);
  const methods: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(definition.methods as Record<string, { input?: unknown; run?: unknown }>)) {
    if (typeof method.run !== "function") throw new Error(`${definition.type}.${name}.run is not a function`);
    if (typeof (method.input as z.ZodType | undefined)?.safeParse !== "function") throw new Error(`${definition.type}.${name}.input is not a zod schema`);
    methods[name] = Object.freeze({ input: method.input, run: method.run });
  }
  return Object.freeze({ ...definition, methods: Object.freeze(methods) }) as unknown as ActorDefinition<S, I, O, T>;
}

/**
 * A typed reference to the actor type `D` (a definition's type) by its type
 * name, which must be D's: `actorRef<JobActorDefinition>("JobActor")`.
 */
export function actorRef<D extends { readonly type: string }>(type: D["type"]): RefOf<D> {
  return Object.freeze({ type }) as RefOf<D>;
}

/** The reference type of a definition type. */
export type RefOf<D> = D extends ActorDefinition<infer S, infer I, infer O, infer T> ? ActorRef<S, I, O, T> : never;

/** Erases a definition's types for a host's registry. */
export function eraseDefinition<S, I extends MethodInputs, O extends MethodOutputs<I>>(definition: ActorDefinition<S, I, O>): AnyActorDefinition {
  return definition as unknown as AnyActorDefinition;
}

/** Helper types extracted from a definition instead of declared twice. */
export type ActorState<D> = D extends ActorDefinition<infer S, infer _I, infer _O> ? S : never;
export type MethodName<D> = D extends ActorDefinition<unknown, infer I, infer _O> ? keyof I & string : never;
export type MethodInput<D, K extends string> = D extends ActorDefinition<infer _S, infer I, infer _O> ? z.input<I[K]> : never;
export type MethodOutput<D, K extends string> = D extends ActorDefinition<infer _S, infer _I, infer O> ? O[K] : never;
