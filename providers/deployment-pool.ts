// A provider's deployments (deployments-file.ts) as one adapter in the
// router's map: each call picks a deployment by smooth weighted round robin
// (nginx's: over any run of calls the split follows the weights exactly, with
// no randomness to inject), skips those over their own rpm/tpm, cooling down
// after a 429's Retry-After, or behind an open breaker (one per deployment, deployment-breaker.ts),
// and fails over to the next deployment before the router falls back to
// another model. The router does not wrap a pool in its provider breaker:
// the pool's breakers are the deployments'.
//
// `install` swaps the set (SIGHUP reload): a call holds the set it started
// on, so in-flight calls finish on the old adapters, which close once the
// last of them is done; new calls use the new set. A deployment's breaker,
// window and counters carry over a reload under its name.
import type { ChatRequest } from "./chat-request.ts";
import type { DeploymentSpec } from "./deployments-file.ts";
import { MinuteWindow } from "./deployment-window.ts";
import { isProviderCallError, ProviderCallError } from "./errors.ts";
import { parseRetryAfterMs } from "../core/retry-after.ts";
import type { BreakerOptions, HealthView } from "./router-health.ts";
import { DeploymentBreaker } from "./deployment-breaker.ts";
import type { MediaAdapterMethods } from "./media-types.ts";
import type { ChatCallOptions, ChatResult, EmbedResult, ProviderAdapter, StreamEvent } from "./types.ts";
import { isFinish } from "./types.ts";

/** What a deployment is built from: its entry in the file and the adapter made for it. */
export interface BuiltDeployment {
  spec: DeploymentSpec;
  adapter: ProviderAdapter;
}

/** One deployment's state that outlives a reload (kept by name). */
class DeploymentState {
  readonly health: DeploymentBreaker;
  readonly window: MinuteWindow;
  calls = 0;
  errors = 0;
  coolUntilMs = 0;
  current = 0;
  constructor(breaker: BreakerOptions, now: () => number) {
    this.health = new DeploymentBreaker(breaker, now);
    this.window = new MinuteWindow(now);
  }
}

interface Member {
  spec: DeploymentSpec;
  adapter: ProviderAdapter;
  state: DeploymentState;
}

/** One installed set of deployments, closed once retired and no call holds it. */
class Generation {
  inFlight = 0;
  retired = false;
  closed = false;
  readonly members: readonly Member[];
  constructor(members: readonly Member[]) {
    this.members = members;
  }
  release(): void {
    this.inFlight--;
    this.closeIfIdle();
  }
  closeIfIdle(): void {
    if (this.retired && this.inFlight === 0 && !this.closed) {
      this.closed = true;
      for (const m of this.members) void m.adapter.close?.().catch(() => undefined);
    }
  }
}

/** A deployment as /metrics and the console show it. */
export interface DeploymentReading {
  provider: string;
  deployment: string;
  region: string | undefined;
  weight: number;
  state: "closed" | "open" | "half_open";
  calls: number;
  errors: number;
  rpm_headroom: number | undefined;
  tpm_headroom: number | undefined;
}

export function isDeploymentPool(a: ProviderAdapter): a is DeploymentPool {
  return a instanceof DeploymentPool;
}

export class DeploymentPool implements ProviderAdapter {
  readonly provider: string;
  chat?: ProviderAdapter["chat"];
  chatStream?: ProviderAdapter["chatStream"];
  embed?: ProviderAdapter["embed"];
  speech?: MediaAdapterMethods["speech"];
  transcribe?: MediaAdapterMethods["transcribe"];
  generateImages?: MediaAdapterMethods["generateImages"];
  private generation: Generation;
  private readonly states = new Map<string, DeploymentState>();
  private readonly breaker: BreakerOptions;
  private readonly now: () => number;

  constructor(provider: string, deployments: readonly BuiltDeployment[], breaker: BreakerOptions, now: () => number = Date.now) {
    this.provider = provider;
    this.breaker = breaker;
    this.now = now;
    this.generation = this.generationOf(deployments);
    // Every deployment of a provider is the same adapter kind: the first says which capabilities the pool has.
    const template = deployments[0]!.adapter;
    if (template.chat) this.chat = (req, opts) => this.run((a) => a.chat!(req, opts), chatTokens);
    if (template.chatStream) this.chatStream = (req, opts) => this.stream(req, opts);
    if (template.embed) this.embed = (req, opts) => this.run((a) => a.embed!(req, opts), (r: EmbedResult) => r.input_tokens);
    if (template.speech) this.speech = (req, opts) => this.run((a) => a.speech!(req, opts), () => 0);
    if (template.transcribe) this.transcribe = (req, opts) => this.run((a) => a.transcribe!(req, opts), () => 0);
    if (template.generateImages) this.generateImages = (req, opts) => this.run((a) => a.generateImages!(req, opts), () => 0);
  }

  /** Replaces the set: new calls use it, calls in flight finish on the old one, which then closes. */
  install(deployments: readonly BuiltDeployment[]): void {
    const old = this.generation;
    this.generation = this.generationOf(deployments);
    const kept = new Set(deployments.map((d) => d.spec.name));
    for (const name of [...this.states.keys()]) if (!kept.has(name)) this.states.delete(name);
    old.retired = true;
    old.closeIfIdle();
  }

  /** Names of the installed deployments, in file order. */
  get names(): string[] {
    return this.generation.members.map((m) => m.spec.name);
  }

  /** Health of the whole pool, read fresh each time (the planner asks per request). */
  view(): HealthView {
    const members = this.generation.members;
    const open = members.filter((m) => !this.eligible(m));
    const accepting = open.length < members.length;
    const waits = members.map((m) => this.msUntilEligible(m));
    return {
      accepting,
      state: accepting ? "closed" : "open",
      retryAfterSeconds: () => (accepting ? undefined : Math.max(1, Math.ceil(Math.min(...waits) / 1000))),
    };
  }

  readings(): DeploymentReading[] {
    return this.generation.members.map((m) => {
      const h = m.state.window.headroom(m.spec);
      return {
        provider: this.provider,
        deployment: m.spec.name,
        region: m.spec.region,
        weight: m.spec.weight,
        state: m.state.health.state,
        calls: m.state.calls,
        errors: m.state.errors,
        rpm_headroom: h.rpm,
        tpm_headroom: h.tpm,
      };
    });
  }

  async close(): Promise<void> {
    this.generation.retired = true;
    this.generation.closeIfIdle();
  }

  private generationOf(deployments: readonly BuiltDeployment[]): Generation {
    if (deployments.length === 0) throw new Error(`provider ${this.provider}: a deployment pool needs at least one deployment`);
    return new Generation(
      deployments.map((d) => {
        let state = this.states.get(d.spec.name);
        if (!state) {
          state = new DeploymentState(this.breaker, this.now);
          this.states.set(d.spec.name, state);
        }
        return { spec: d.spec, adapter: d.adapter, state };
      }),
    );
  }

  private eligible(m: Member): boolean {
    return m.state.health.accepting && this.now() >= m.state.coolUntilMs && m.state.window.admits(m.spec);
  }

  private msUntilEligible(m: Member): number {
    const breaker = (m.state.health.retryAfterSeconds() ?? 0) * 1000;
    const cool = Math.max(0, m.state.coolUntilMs - this.now());
    const room = m.state.window.admits(m.spec) ? 0 : m.state.window.msUntilRoom();
    return Math.max(breaker, cool, room, 1000);
  }

  /** The deployments to try, in order: the smooth-weighted pick first, then the others by weight. */
  private order(members: readonly Member[]): Member[] {
    const eligible = members.filter((m) => this.eligible(m));
    if (eligible.length === 0) return [];
    let total = 0;
    let best = eligible[0]!;
    for (const m of eligible) {
      m.state.current += m.spec.weight;
      total += m.spec.weight;
      if (m.state.current > best.state.current) best = m;
    }
    best.state.current -= total;
    return [best, ...eligible.filter((m) => m !== best).sort((a, b) => b.spec.weight - a.spec.weight)];
  }

  private unavailable(members: readonly Member[], lastError: unknown): unknown {
    if (lastError !== undefined) return lastError;
    const waitMs = Math.min(...members.map((m) => this.msUntilEligible(m)));
    // 429: every deployment is at its own limit or cooling down; the router may wait Retry-After or fall back.
    return new ProviderCallError(this.provider, "http", `every deployment of ${this.provider} is at its rpm/tpm limit, cooling down or failing`, {
      status: 429,
      retryAfter: String(Math.max(1, Math.ceil(waitMs / 1000))),
    });
  }

  private noteFailure(m: Member, e: unknown): void {
    m.state.errors++;
    if (isProviderCallError(e) && e.status === 429) {
      const waitMs = parseRetryAfterMs(e.retryAfter, this.now()) ?? 1000;
      m.state.coolUntilMs = this.now() + waitMs;
    }
  }

  /** Runs a one-shot call on the first deployment that answers; a failure another deployment may not share moves on. */
  private async run<T>(call: (a: ProviderAdapter) => Promise<T>, tokensOf: (v: T) => number): Promise<T> {
    const gen = this.generation;
    gen.inFlight++;
    try {
      const order = this.order(gen.members);
      let lastError: unknown;
      for (const m of order) {
        if (!this.eligible(m)) continue;
        m.state.calls++;
        m.state.window.recordRequest();
        try {
          const value = await m.state.health.execute(() => call(m.adapter));
          m.state.window.recordTokens(tokensOf(value));
          return value;
        } catch (e) {
          this.noteFailure(m, e);
          if (!isProviderCallError(e) || !e.fallbackable) throw e;
          lastError = e;
        }
      }
      throw this.unavailable(gen.members, lastError);
    } finally {
      gen.release();
    }
  }

  /** Streams from the first deployment that yields an event; after that, a failure is the caller's (no replay). */
  private async *stream(req: ChatRequest, opts: ChatCallOptions): AsyncGenerator<StreamEvent> {
    const gen = this.generation;
    gen.inFlight++;
    let iterator: AsyncIterator<StreamEvent> | undefined;
    try {
      let lastError: unknown;
      let served: Member | undefined;
      let first: StreamEvent | undefined;
      for (const m of this.order(gen.members)) {
        if (!this.eligible(m)) continue;
        m.state.calls++;
        m.state.window.recordRequest();
        try {
          const it = m.adapter.chatStream!(req, opts)[Symbol.asyncIterator]();
          const next = await m.state.health.execute(() => it.next());
          if (next.done) throw new ProviderCallError(this.provider, "protocol", `${this.provider} deployment ${m.spec.name} sent an empty stream`);
          iterator = it;
          served = m;
          first = next.value;
          break;
        } catch (e) {
          this.noteFailure(m, e);
          if (!isProviderCallError(e) || !e.fallbackable) throw e;
          lastError = e;
        }
      }
      if (!iterator || !served || first === undefined) throw this.unavailable(gen.members, lastError);
      let event: StreamEvent = first;
      while (true) {
        if (isFinish(event)) served.state.window.recordTokens(event.input_tokens + event.output_tokens);
        yield event;
        let next: IteratorResult<StreamEvent>;
        try {
          next = await iterator.next();
        } catch (e) {
          served.state.errors++;
          throw e;
        }
        if (next.done) return;
        event = next.value;
      }
    } finally {
      await iterator?.return?.().catch(() => undefined);
      gen.release();
    }
  }
}

function chatTokens(r: ChatResult): number {
  return r.input_tokens + r.output_tokens;
}

