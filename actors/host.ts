// The actor host interface the gateway uses. Two implementations share it
// (actors/hosts/embedded, actors/hosts/dapr) and one conformance suite
// (test/actors/conformance.ts) pins their behaviour to each other.
import type { z } from "zod";
import type { ActorRef, AnyActorDefinition, MethodInputs, MethodOutputs } from "./actor.ts";

export interface CallOptions {
  /** Aborting rejects the caller; a turn already running still completes. */
  signal?: AbortSignal;
}

export interface ActiveActorCount {
  type: string;
  count: number;
}

export interface ActorHost {
  /** Adds actor types; call before start(). */
  register(definitions: readonly AnyActorDefinition[]): void;
  start(): Promise<void>;
  /**
   * Runs `method(input)` as one turn of actor (type, id), activating it if
   * needed. The input is parsed with the method's schema first (invalid:
   * TroupeError invalid_request, no turn). Rejects with the method's error: a
   * TroupeError keeps its code, status, message and details on both hosts.
   */
  call(type: string, id: string, method: string, input?: unknown, options?: CallOptions): Promise<unknown>;
  /**
   * The same turn, answering the output as JSON text (an output of undefined
   * is `null`): for a caller that only forwards it, as a route answering a
   * conversation does. It saves the copy `call` makes of the output (a parse
   * of it here, a stringify in the caller), which for a long conversation is
   * most of a turn's JSON work.
   */
  callJson(type: string, id: string, method: string, input?: unknown, options?: CallOptions): Promise<string>;
  /** Actors active in this process, per registered type (zero counts included). */
  activeActors(): ActiveActorCount[];
  /**
   * What the actor runtime reports as active on this replica, per registered
   * type: Dapr: this replica's daprd (`GET /v1.0/metadata`, what operators'
   * tools read); embedded: activeActors().
   */
  runtimeActiveActors(): Promise<ActiveActorCount[]>;
  /** True once the host can run turns (Dapr: daprd healthy, actor runtime running). */
  ready(): Promise<boolean>;
  /** Graceful: refuses new calls, drains running and queued turns (each turn persists as it commits), releases resources. */
  stop(): Promise<void>;
}

/** JSON text of a `T` (what callActorJson answers and `jsonText` answers with). */
export type JsonText<T> = string & { readonly __jsonOf?: T };

/**
 * A typed call through any host: the method name, its input (from the
 * method's input schema) and its output (from `run`) come from the
 * definition (or a reference to it, actorRef), so a misspelled field does
 * not compile. `As` says how the output comes back.
 */
type TypedCall<As extends "value" | "json"> = <S, I extends MethodInputs, O extends MethodOutputs<I>, K extends keyof I & string>(
  host: ActorHost,
  definition: ActorRef<S, I, O>,
  id: string,
  method: K,
  input: z.input<I[K]>,
  options?: CallOptions,
) => Promise<As extends "json" ? JsonText<O[K]> : O[K]>;

/** The output as a value (a copy: never the actor's own objects). */
export const callActor: TypedCall<"value"> = async (host, definition, id, method, input, options) =>
  // The host answers what the method's `run` returned; its type is the definition's.
  (await host.call(definition.type, id, method, input, options)) as never;

/** The output as JSON text, for a caller that only forwards it (ActorHost.callJson). */
export const callActorJson: TypedCall<"json"> = (host, definition, id, method, input, options) => host.callJson(definition.type, id, method, input, options);
