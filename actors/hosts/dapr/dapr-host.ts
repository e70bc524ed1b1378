// The Dapr actor host: the same actor definitions on Dapr's virtual actor
// runtime (placement decides which replica hosts an actor, daprd's per-actor
// lock makes turns one at a time, reminders go through the scheduler).
// Hand-rolled instead of @dapr/dapr, whose actor hosting (3.18.0) needs its
// own Express server, takes the type from constructor.name and lacks error
// handling in timers and reminders (docs/decisions.md): daprd calls
// our own loopback uWS listener (callback-server.ts), we call daprd's HTTP
// API over keep-alive (daprd-client.ts).
//
// Performance rule (measured: every daprd call is a round trip): an active actor's state stays in
// this process's memory after activation (one state read), and a turn writes
// it back once, transactionally, only when it changed.
import type { Clock } from "../../../core/clock.ts";
import { TroupeError } from "../../../core/errors.ts";
import type { Logger } from "../../../core/log.ts";
import { noTracing, type Tracing } from "../../../core/tracing.ts";
import { actorSpanAttributes } from "../../actor-spans.ts";
import type { AnyActorDefinition, IdSource } from "../../actor.ts";
import type { ActiveActorCount, ActorHost, CallOptions } from "../../host.ts";
import { Activation, defaultMaxResident, dropLeastRecent, markUsed, randomIds, type ActorServices } from "../activation.ts";
import { ActorRegistry, initialStateJson } from "../registry.ts";
import { CallbackServer } from "./callback-server.ts";
import { DaprdClient } from "./daprd-client.ts";
import { goDuration, parseScheduledCall } from "./wire.ts";

export interface DaprHostOptions {
  daprHost: string;
  daprHttpPort: number;
  /** Loopback port daprd's --app-port points at; 0 picks a free one. */
  callbackPort: number;
  idleTimeoutMs: number;
  /**
   * On stop(): how long the callbacks keep being served after /healthz turned
   * 503, before new ones are refused. daprd's app health check sees the 503
   * (probe interval × threshold), unregisters the actor types and placement
   * moves the actors to other replicas while their calls still succeed here;
   * without it, calls routed here in the meantime fail (default: 0).
   */
  handOffMs?: number;
  /**
   * On stop(), after the hand-off: how long turns still running may take to
   * commit before their state writes are abandoned (default 5 s). daprd
   * holds the write of a turn whose actor is moving away and, with this
   * app unhealthy, may never answer it: found by `npm run rolling-restart`,
   * whose stops took 10–20 s, ending in SIGKILL before the ledger and the
   * rest of Troupe could close.
   */
  commitWaitMs?: number;
  clock: Clock;
  /** Ids the actors mint (default: random UUIDs). */
  ids?: IdSource;
  log: Logger;
  /** How long daprd waits for in-flight turns when it moves actors away. */
  drainOngoingCallTimeoutMs?: number;
  /**
   * An event-loop stall this long may have made daprd's health probes fail
   * (daprd's default probe timeout is 500 ms) and its actors move away:
   * in-memory copies are re-read after one.
   */
  stallThresholdMs?: number;
  /**
   * Most actors kept in memory (ACTOR_MAX_RESIDENT; default
   * defaultMaxResident). daprd deactivates idle actors after idleTimeoutMs,
   * at its own pace; beyond this many, the least recently used copies that
   * are between turns leave memory sooner (evictOverCap).
   */
  maxResident?: number;
  /** Spans for calls (this side) and turns (the hosting replica's side), linked through daprd (default: off). */
  tracing?: Tracing;
}

const stallTickMs = 100;

type Phase = "new" | "running" | "stopping" | "stopped";

export class DaprActorHost implements ActorHost {
  private readonly options: DaprHostOptions;
  private readonly registry = new ActorRegistry();
  /**
   * In least-recently-used order (a call moves its actor to the end).
   * `evicted` aborts the copy's state write in flight: once forgotten, it must never commit.
   */
  private readonly activations = new Map<string, { activation: Activation; epoch: number; evicted: AbortController }>();
  private readonly activating = new Map<string, Promise<Activation>>();
  /**
   * In-memory copies from an older epoch may be stale: daprd may have moved
   * their actors to another replica meanwhile (it restarted, or it saw this
   * app miss health probes) and back. They are dropped lazily, once idle.
   */
  private epoch = 0;
  private stallWatch: NodeJS.Timeout | undefined;
  private lastTickMs = 0;
  private readonly daprd: DaprdClient;
  private readonly server: CallbackServer;
  private readonly services: ActorServices;
  private readonly log: Logger;
  private readonly tracing: Tracing;
  private readonly maxResident: number;
  private phase: Phase = "new";
  /** The callback port actually listened on (differs from options when 0). */
  callbackPort = 0;

  constructor(options: DaprHostOptions) {
    this.options = options;
    this.log = options.log.child({ component: "actors", host: "dapr" });
    this.tracing = options.tracing ?? noTracing;
    this.maxResident = options.maxResident ?? defaultMaxResident;
    if (!Number.isInteger(this.maxResident) || this.maxResident < 1) throw new Error(`maxResident must be a positive integer, got ${this.maxResident}`);
    this.daprd = new DaprdClient({ daprHost: options.daprHost, daprHttpPort: options.daprHttpPort });
    this.services = {
      clock: options.clock,
      ids: options.ids ?? randomIds,
      log: options.log,
      call: (type, id, method, input) => this.outputThroughDapr(type, id, method, input),
      setTimer: (type, id, s) => this.daprd.setTimer(type, id, s.name, s.dueMs, s.periodMs, { method: s.method, input: s.input }),
      clearTimer: (type, id, name) => this.daprd.clearTimer(type, id, name),
      setReminder: (type, id, s) => this.daprd.setReminder(type, id, s.name, s.dueMs, s.periodMs, { method: s.method, input: s.input }),
      clearReminder: (type, id, name) => this.daprd.clearReminder(type, id, name),
    };
    this.server = new CallbackServer({
      config: () => this.daprConfig(),
      invoke: (type, id, method, body, trace) => {
        const turn = async (): Promise<string> => {
          const activation = await this.activate(type, id);
          const output = await activation.invoke(method, body === "" ? undefined : (JSON.parse(body) as unknown));
          return output === undefined ? "" : JSON.stringify(output);
        };
        if (!this.tracing.enabled) return turn();
        // The turn's span continues the caller's trace, whichever replica called.
        return this.tracing.inSpan(`actor ${type}.${method}`, { kind: "server", carrier: trace, attributes: actorSpanAttributes(type, id, method) }, turn);
      },
      timer: (type, id, name, body) => this.fireScheduled("timer", type, id, name, body),
      reminder: (type, id, name, body) => this.fireScheduled("reminder", type, id, name, body),
      deactivate: (type, id) => this.deactivate(type, id),
      activeActorIds: () => this.activeActorIds(),
    });
  }

  register(definitions: readonly AnyActorDefinition[]): void {
    if (this.phase !== "new") throw new Error("register actor types before start()");
    this.registry.add(definitions);
  }

  async start(): Promise<void> {
    if (this.phase !== "new") throw new Error(`cannot start an actor host that is ${this.phase}`);
    this.callbackPort = await this.server.listen(this.options.callbackPort);
    this.phase = "running";
    this.lastTickMs = performance.now();
    this.stallWatch = setInterval(() => {
      this.checkStall();
      if (this.activations.size > this.maxResident) this.evictOverCap();
    }, stallTickMs);
    this.stallWatch.unref();
    this.log.info("dapr actor host listening for daprd", {
      callback_port: this.callbackPort,
      daprd: `${this.options.daprHost}:${this.options.daprHttpPort}`,
      types: this.registry.names(),
    });
  }

  /** daprd answers, its actor runtime runs, and placement is connected. */
  async ready(): Promise<boolean> {
    if (this.phase !== "running") return false;
    try {
      const meta = await this.daprd.metadata();
      const runtime = meta.actorRuntime;
      return runtime?.runtimeStatus === "RUNNING" && runtime.hostReady === true && (runtime.placement ?? "").endsWith("connected");
    } catch {
      return false;
    }
  }

  async call(type: string, id: string, method: string, input?: unknown, options: CallOptions = {}): Promise<unknown> {
    if (this.phase !== "running") throw new TroupeError("service_unavailable", "The actor host is not running.", { retryAfterSeconds: 1 });
    return this.outputThroughDapr(type, id, method, input, options.signal);
  }

  async callJson(type: string, id: string, method: string, input?: unknown, options: CallOptions = {}): Promise<string> {
    if (this.phase !== "running") throw new TroupeError("service_unavailable", "The actor host is not running.", { retryAfterSeconds: 1 });
    const text = await this.invokeThroughDapr(type, id, method, input, options.signal);
    return text === "" ? "null" : text;
  }

  /** daprd's own count (it omits types with none active): zero for every registered type daprd does not list. */
  async runtimeActiveActors(): Promise<ActiveActorCount[]> {
    const meta = await this.daprd.metadata();
    const reported = new Map((meta.actorRuntime?.activeActors ?? []).map((a) => [a.type, a.count]));
    return this.registry.names().map((type) => ({ type, count: reported.get(type) ?? 0 }));
  }

  activeActors(): ActiveActorCount[] {
    const counts = new Map<string, number>(this.registry.names().map((name) => [name, 0]));
    for (const { activation } of this.activations.values()) {
      counts.set(activation.definition.type, (counts.get(activation.definition.type) ?? 0) + 1);
    }
    return [...counts].map(([type, count]) => ({ type, count }));
  }

  /** Ids in memory here, by registered type (sorted): GET /troupe/active-actors on the callback port. */
  activeActorIds(): Record<string, string[]> {
    const ids: Record<string, string[]> = Object.fromEntries(this.registry.names().map((name) => [name, []]));
    for (const { activation } of this.activations.values()) (ids[activation.definition.type] ??= []).push(activation.id);
    for (const list of Object.values(ids)) list.sort();
    return ids;
  }

  /** Refuses new callbacks, lets running and queued turns finish (each wrote its state), closes. */
  async stop(): Promise<void> {
    if (this.phase !== "running") return;
    const handOffMs = this.options.handOffMs ?? 0;
    if (handOffMs > 0) {
      this.server.failHealth();
      this.log.info("handing actors off: /healthz answers 503 so daprd moves them", { hand_off_ms: handOffMs });
      await new Promise((resolve) => setTimeout(resolve, handOffMs));
    }
    this.phase = "stopping";
    if (this.stallWatch) clearInterval(this.stallWatch);
    await this.turnsEnded(this.options.commitWaitMs ?? 5_000);
    await this.server.close();
    this.activations.clear();
    await this.daprd.close();
    this.phase = "stopped";
    this.log.info("dapr actor host stopped");
  }

  /**
   * Waits for every running or queued turn; past `waitMs`, the turns still
   * running have their state writes aborted: they fail uncommitted, as when
   * daprd moves an actor away mid-turn (deactivate).
   */
  private async turnsEnded(waitMs: number): Promise<void> {
    const entries = [...this.activations.values()];
    const allIdle = Promise.all(entries.map((entry) => entry.activation.whenIdle()));
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), waitMs)));
    const outcome = await Promise.race([allIdle, waited]);
    clearTimeout(timer);
    if (outcome !== "late") return;
    const busy = entries.filter((entry) => !entry.activation.idle);
    this.log.warn("turns still running at shutdown: their state writes are abandoned, uncommitted", {
      wait_ms: waitMs,
      actors: busy.map((entry) => `${entry.activation.definition.type}/${entry.activation.id}`),
    });
    for (const entry of busy) entry.evicted.abort(new TroupeError("service_unavailable", "This replica stopped before the turn could be saved.", { retryAfterSeconds: 1 }));
    await allIdle;
  }

  private daprConfig(): unknown {
    // daprd asks for this once, when it (re)starts: a daprd that just started
    // holds no actors, and placement may have moved ours elsewhere meanwhile,
    // so copies kept in memory from before may be stale. Forget them; the
    // next call reads the state store again.
    if (this.activations.size > 0) this.forgetInMemoryActors("daprd (re)connected");
    return {
      entities: this.registry.names(),
      actorIdleTimeout: goDuration(this.options.idleTimeoutMs),
      // Older daprd scan for idle actors at this interval; newer ones ignore it.
      actorScanInterval: goDuration(Math.min(30_000, Math.max(1_000, this.options.idleTimeoutMs / 4))),
      // Well below placement's dissemination timeout (8 s in Dapr 1.18):
      // while daprd drains in-flight calls of rebalanced actors (or calls
      // still held toward a replica just killed) it cannot acknowledge the new
      // table; placement then closes daprd's stream and daprd 1.18.3 never
      // reconnects (dapr/dapr#10423): its actors stop for good (found by
      // `npm run chaos` with 10 s: a replica rejoining under load). Waiting
      // longer gains nothing: a turn's state write needs daprd's placement
      // lock, which the rebalance holds, so a turn cannot finish meanwhile.
      drainOngoingCallTimeout: goDuration(this.options.drainOngoingCallTimeoutMs ?? 3_000),
      drainRebalancedActors: true,
      reentrancy: { enabled: false },
    };
  }

  /** A turn's output through daprd, parsed (the callback server answers an undefined output with an empty body). */
  private async outputThroughDapr(type: string, id: string, method: string, input: unknown, signal?: AbortSignal): Promise<unknown> {
    const text = await this.invokeThroughDapr(type, id, method, input, signal);
    return text === "" ? undefined : (JSON.parse(text) as unknown);
  }

  /** A turn's output through daprd, as daprd answered it (JSON text, or empty for undefined). */
  private async invokeThroughDapr(type: string, id: string, method: string, input: unknown, signal?: AbortSignal): Promise<string> {
    const text = this.tracing.enabled
      ? await this.tracing.inSpan(`actor call ${type}.${method}`, { kind: "client", attributes: actorSpanAttributes(type, id, method) }, () => {
          const headers: Record<string, string> = {};
          this.tracing.inject(headers);
          return this.daprd.invoke(type, id, method, input, signal, headers);
        })
      : await this.daprd.invoke(type, id, method, input, signal);
    return text;
  }

  /** Marks every in-memory copy as possibly stale; each is re-read on its next call. */
  private forgetInMemoryActors(reason: string): void {
    this.epoch++;
    if (this.activations.size > 0) this.log.warn(`${reason}; actors kept in memory will be re-read from the state store`, { actors: this.activations.size });
  }

  /** Notices event-loop stalls (also checked on each activation, in case daprd's callbacks run before this timer). */
  private checkStall(): void {
    const now = performance.now();
    const lagMs = now - this.lastTickMs - stallTickMs;
    this.lastTickMs = now;
    if (lagMs >= (this.options.stallThresholdMs ?? 400)) this.forgetInMemoryActors(`event loop stalled for ${Math.round(lagMs)} ms`);
  }

  private async activate(type: string, id: string): Promise<Activation> {
    if (this.phase !== "running") throw new TroupeError("service_unavailable", "This replica is shutting down.", { retryAfterSeconds: 1 });
    this.checkStall();
    const key = `${type}\u0000${id}`;
    for (;;) {
      const entry = this.activations.get(key);
      if (entry && entry.epoch === this.epoch) {
        markUsed(this.activations, key, entry);
        return entry.activation;
      }
      const pending = this.activating.get(key);
      if (pending) return pending;
      if (!entry) break;
      // A possibly stale copy: let its queued turns finish, then read the store again.
      await entry.activation.whenIdle();
      if (this.activations.get(key) === entry) this.activations.delete(key);
    }
    const definition = this.registry.get(type);
    const epoch = this.epoch;
    const promise = (async () => {
      const stateJson = initialStateJson(definition, await this.daprd.readState(type, id), id);
      const evicted = new AbortController();
      const activation = new Activation(definition, id, stateJson, this.services, (json) => this.daprd.writeState(type, id, json, evicted.signal));
      this.activations.set(key, { activation, epoch, evicted });
      return activation;
    })();
    this.activating.set(key, promise);
    try {
      return await promise;
    } finally {
      this.activating.delete(key);
    }
  }

  /**
   * Drops the least recently used copies between turns (nothing running or
   * queued: their state is committed through daprd) until at most
   * maxResident remain. daprd still places these actors here; the next call
   * reads the state again, as after a deactivation. Only on the timer, never
   * inside a callback: a callback's activate() and its invoke() run in one
   * chain of microtasks, so no copy is dropped between the two (a dropped
   * copy still turning beside a fresh one would lose a commit). Why not
   * leave it to daprd: creating a million conversations on a 2-replica
   * cluster, the busier sidecar had 209,000 still active at the end where
   * the other had 24,000, at the same idle timeout (docs/benchmarks.md).
   */
  private evictOverCap(): void {
    dropLeastRecent(this.activations, this.maxResident, (_key, entry) => entry.activation.idle);
  }

  private async deactivate(type: string, id: string): Promise<void> {
    const key = `${type}\u0000${id}`;
    // Forgotten at once, even mid-turn. daprd deactivates while it moves the
    // actor away and acknowledges placement's new table only once we answer;
    // a turn still running here is blocked on its state write (daprd's
    // placement lock) and, once the table changed, is refused it (the actor
    // is no longer hosted here: 400), so it never commits. Waiting for it
    // deadlocked the rebalance until placement gave up (npm run chaos).
    // Its write, if already sent, is aborted: daprd may have retried the
    // same call elsewhere meanwhile, and a late commit here would repeat the
    // turn or overwrite a newer one (both seen by npm run chaos). The next
    // call activates afresh from the stored state.
    const entry = this.activations.get(key);
    if (!entry) return;
    entry.evicted.abort(new TroupeError("service_unavailable", "The actor moved to another replica.", { retryAfterSeconds: 1 }));
    this.activations.delete(key);
  }

  private async fireScheduled(kind: "timer" | "reminder", type: string, id: string, name: string, body: string): Promise<void> {
    const call = parseScheduledCall(body);
    if (!call) {
      this.log.warn(`${kind} without a method to run`, { actor_type: type, actor_id: id, name, body: body.slice(0, 200) });
      return;
    }
    const activation = await this.activate(type, id);
    await activation.invoke(call.method, call.input);
  }
}
