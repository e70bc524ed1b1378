// The provider router (docs/api/models-and-routing.md): picks the models that may serve
// a request (manual, auto, cost, latency), checks capabilities before any
// call, then runs a bounded chain of attempts: a deadline for the whole
// request, a shorter one per attempt, retries with jittered exponential
// backoff only on retryable failures, fallback to equivalent models on other
// providers, and a circuit breaker per provider (a provider with deployments,
// deployment-pool.ts, has one per deployment instead; an organization's own
// key, own-credentials.ts, goes first when it stored one). Streams are never retried
// once they have emitted an event. Results name the model that served.
// Its parts: router-plan.ts (which models, in which order), router-health.ts
// (breakers, latency), router-failures.ts (classifying a failed attempt),
// router-video.ts (video tasks).
import { BrokenCircuitError } from "cockatiel";
import { invalidRequest, TroupeError } from "../core/errors.ts";
import { parseRetryAfterMs } from "../core/retry-after.ts";
import type { Catalogue, Category, ModelEntry, ModelListing, Need } from "./catalogue.ts";
import { ProviderCallError } from "./errors.ts";
import { Deadline, sleep } from "./deadline.ts";
import { asProviderFailure, attemptOutcome, toTroupeError, type AttemptOutcome } from "./router-failures.ts";
import { breakerOptionsOf, LatencyTracker, ProviderHealth, type BreakerOptions, type HealthView } from "./router-health.ts";
import { isDeploymentPool, type DeploymentReading } from "./deployment-pool.ts";
import type { Deployments } from "./deployments.ts";
import type { OwnCredential, OwnCredentialResolver } from "./own-credentials.ts";
import { currentModelAllowlist, type ModelFilter } from "./router-allowlist.ts";
import { adapterServes, planModels, type PlanSource } from "./router-plan.ts";
import { RouterVideo, type RoutedVideoRequest } from "./router-video.ts";
import type { ChatRequest } from "./chat-request.ts";
import type { ChatResult, EmbedResult, ProviderAdapter, RoutingStrategy, StreamEvent } from "./types.ts";
import { isFinish } from "./types.ts";
import { validateConversation } from "./validate-chat.ts";
import type { VideoTask, VideoTaskStatus } from "./video.ts";

export interface RouterOptions {
  catalogue: Catalogue;
  /** Configured providers, keyed by provider name. A provider absent here is unavailable. */
  adapters: ReadonlyMap<string, ProviderAdapter>;
  /** Deadline of a whole request, every attempt and backoff included (streams: until the last event). */
  timeoutMs: number;
  /** Attempts per request across the whole fallback chain. */
  maxAttempts: number;
  /**
   * Deadline of one attempt (streams: until the first event). Default: half
   * the request deadline, so a hanging provider still leaves time to fall back.
   */
  attemptTimeoutMs?: number;
  breaker?: Partial<BreakerOptions>;
  backoff?: { initialDelayMs?: number; maxDelayMs?: number };
  random?: () => number;
  now?: () => number;
  /**
   * The settings that configure a provider (its credentials), to name in the
   * 400 a request for a model of an unconfigured provider gets; default: none named.
   */
  settingsOf?: (provider: string) => readonly string[];
  /** Told about each attempt (one observer; the composition root combines metrics and traces); default: none. */
  observer?: AttemptObserver | undefined;
  /**
   * Says which organization's own key a call uses (docs/operations/byok.md):
   * asked before each attempt, inside the request's async context; default: none.
   */
  ownCredentials?: OwnCredentialResolver | undefined;
  /** The deployments file's deployments (TROUPE_DEPLOYMENTS_FILE), installed in `adapters` (providers/index.ts builds them). */
  deployments?: Deployments | undefined;
}

/**
 * Told about every provider attempt (the gateway wires metrics and traces
 * here). `attempt` is called as the attempt starts, inside the caller's
 * async context; the function it returns is called once when it ends.
 */
export interface AttemptObserver {
  attempt(provider: string, model: string): (outcome: AttemptOutcome, error?: unknown) => void;
}

export interface RoutedEmbedRequest {
  model?: string | null | undefined;
  routing_strategy?: RoutingStrategy | undefined;
  input: string[];
  dimensions?: number | null | undefined;
  input_type?: "search_document" | "search_query" | undefined;
}

export interface CallContext {
  /** The caller's signal: a client disconnect aborts the upstream call. */
  signal?: AbortSignal | undefined;
  /**
   * The calling key's model allowlist (router-allowlist.ts); null: every
   * model, whatever the async context holds (a call made for a key without
   * one outside its request); absent: the request's, if its key has one.
   */
  allowModel?: ModelFilter | null | undefined;
}

export interface ChatCallContext extends CallContext {
  /** Which catalogue category must serve it; default: vision when a message carries images, else text. */
  category?: "text" | "vision" | "translation";
}

/** The allowlist a call applies: its own (null: none), else the request's. */
function allowOf(ctx: CallContext): ModelFilter | null {
  return ctx.allowModel === undefined ? (currentModelAllowlist() ?? null) : ctx.allowModel;
}

/** One attempt of a routed call: the candidate, its adapter, the attempt's signal. */
export type AttemptRun<T> = (entry: ModelEntry, adapter: ProviderAdapter, signal: AbortSignal) => Promise<T>;
/** A routed call's first success, the candidate that gave it, and whether the organization's own key served it. */
export interface Attempted<T> {
  value: T;
  entry: ModelEntry;
  byok?: true;
}

export class Router {
  readonly catalogue: Catalogue;
  private readonly adapters: ReadonlyMap<string, ProviderAdapter>;
  private readonly health = new Map<string, ProviderHealth>();
  readonly latency = new LatencyTracker();
  private readonly timeoutMs: number;
  private readonly attemptTimeoutMs: number;
  private readonly maxAttempts: number;
  /** The breakers' settings (the deployments' breakers take the same). */
  readonly breakerOptions: BreakerOptions;
  private readonly initialDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly random: () => number;
  readonly now: () => number;
  /** The deployments file's deployments, when TROUPE_DEPLOYMENTS_FILE is set (SIGHUP reloads them). */
  readonly deployments: Deployments | undefined;
  private readonly observer: AttemptObserver | undefined;
  private readonly ownCredentials: OwnCredentialResolver | undefined;
  private readonly planSource: PlanSource;
  private readonly video: RouterVideo;

  constructor(opts: RouterOptions) {
    this.catalogue = opts.catalogue;
    this.adapters = opts.adapters;
    this.timeoutMs = opts.timeoutMs;
    this.maxAttempts = Math.max(1, opts.maxAttempts);
    this.attemptTimeoutMs = opts.attemptTimeoutMs ?? (this.maxAttempts > 1 ? Math.ceil(opts.timeoutMs / 2) : opts.timeoutMs);
    this.breakerOptions = breakerOptionsOf(opts.breaker);
    // 200 ms doubling to 5 s: typical provider 429/503 recovery times.
    this.initialDelayMs = opts.backoff?.initialDelayMs ?? 200;
    this.maxDelayMs = opts.backoff?.maxDelayMs ?? 5_000;
    this.random = opts.random ?? Math.random;
    this.now = opts.now ?? Date.now;
    this.observer = opts.observer;
    this.ownCredentials = opts.ownCredentials;
    this.deployments = opts.deployments;
    this.planSource = {
      catalogue: this.catalogue,
      adapters: this.adapters,
      latency: this.latency,
      healthOf: (provider) => this.viewOf(provider),
      settingsOf: opts.settingsOf ?? (() => []),
    };
    this.video = new RouterVideo(this, this.adapters, this.attemptTimeoutMs);
  }

  /** Configured providers and their breaker states on this replica (metrics, the operator's console). */
  breakerStates(): { provider: string; state: "closed" | "open" | "half_open" }[] {
    return [...this.adapters.keys()].map((provider) => ({ provider, state: this.viewOf(provider).state }));
  }

  /** The operator console's providers table: each provider's breaker, then each deployment's as `provider/deployment`. */
  consoleBreakerRows(): { provider: string; state: "closed" | "open" | "half_open" }[] {
    return [...this.breakerStates(), ...this.deploymentReadings().map((d) => ({ provider: `${d.provider}/${d.deployment}`, state: d.state }))];
  }

  /** Each configured deployment (TROUPE_DEPLOYMENTS_FILE) on this replica: breaker, traffic, errors, limit headroom. */
  deploymentReadings(): DeploymentReading[] {
    return [...this.adapters.values()].flatMap((a) => (isDeploymentPool(a) ? a.readings() : []));
  }

  /**
   * A provider's health as planning reads it: a deployment pool's (any of its
   * deployments taking calls, each behind its own breaker), else the
   * provider's breaker.
   */
  viewOf(provider: string): HealthView {
    const adapter = this.adapters.get(provider);
    return adapter && isDeploymentPool(adapter) ? adapter.view() : this.healthOf(provider);
  }

  healthOf(provider: string): ProviderHealth {
    let h = this.health.get(provider);
    if (!h) {
      h = new ProviderHealth(this.breakerOptions, this.now);
      this.health.set(provider, h);
    }
    return h;
  }

  /** Provider configured and its breaker not open. */
  isAvailable(provider: string): boolean {
    return this.adapters.has(provider) && this.viewOf(provider).accepting;
  }

  /** GET /v1/models: the catalogue with availability. */
  listModels(category?: Category): ModelListing[] {
    const models = category ? this.catalogue.ofCategory(category) : this.catalogue.models;
    return models.map((m) => ({
      id: m.id,
      provider: m.provider,
      category: category ?? m.category,
      tier: m.tier,
      available: this.isAvailable(m.provider) && adapterServes(this.adapters, m, category ?? m.category),
      capabilities: m.capabilities,
      pricing: m.pricing,
    }));
  }

  /**
   * The models to try, in order (router-plan.ts). Throws 400 for requests no
   * model could serve as asked and 503 when every capable provider is unavailable.
   */
  plan(model: string | null | undefined, strategy: RoutingStrategy, need: Need, allow: ModelFilter | null = currentModelAllowlist() ?? null): ModelEntry[] {
    // null: every model (an explicit "no allowlist", which the request's context must not override).
    return planModels(this.planSource, model, strategy, need, allow ?? undefined);
  }

  async chat(req: ChatRequest, ctx: ChatCallContext = {}): Promise<ChatResult> {
    const candidates = this.planChat(req, ctx, false);
    const { value, entry, byok } = await this.routeCall(candidates, ctx.signal, async (entry, adapter, signal) =>
      adapter.chat!(req, { signal, upstreamModel: entry.upstream_model ?? entry.id }),
    );
    return { ...value, model: entry.id, provider: entry.provider, ...(byok ? { extras: { ...value.extras, byok } } : {}) };
  }

  /**
   * Streams events. Retries and fallbacks happen only before the first event;
   * afterwards a failure is thrown to the consumer (the route renders it as a
   * final error event). Stopping the iteration aborts the upstream call.
   */
  async *chatStream(req: ChatRequest, ctx: ChatCallContext = {}): AsyncGenerator<StreamEvent> {
    const candidates = this.planChat(req, ctx, true);
    const deadline = this.startDeadline(ctx.signal);
    let iterator: AsyncIterator<StreamEvent> | undefined;
    let finished = false;
    try {
      const { value, entry, byok } = await this.attempts(candidates, deadline, async (entry, adapter, signal) => {
        const it = adapter.chatStream!(req, { signal, upstreamModel: entry.upstream_model ?? entry.id })[Symbol.asyncIterator]();
        const first = await it.next();
        if (first.done) throw new ProviderCallError(entry.provider, "protocol", `${entry.provider} sent an empty stream`);
        return { it, first: first.value };
      });
      iterator = value.it;
      // A consumer usually stops right after the finish event, so `finished`
      // is set before yielding it: the cleanup below then has nothing to abort.
      let event = value.first;
      while (true) {
        if (isFinish(event)) {
          finished = true;
          yield { ...event, model: entry.id, provider: entry.provider, ...(byok ? { extras: { ...event.extras, byok } } : {}) };
          return;
        }
        yield event;
        let next: IteratorResult<StreamEvent>;
        try {
          next = await iterator.next();
        } catch (e) {
          throw toTroupeError(e, deadline.signal, 1);
        }
        if (next.done) throw new TroupeError("provider_error", `${entry.provider} stream ended without a finish event`);
        event = next.value;
      }
    } finally {
      if (!finished) deadline.abort();
      // Ends the adapter generator, closing its upstream body if part of it is
      // still unread; errors there no longer matter.
      await iterator?.return?.().catch(() => undefined);
      deadline.dispose();
    }
  }

  /** `byok`: the organization's own key served it (billed at the BYOK price). */
  async embed(req: RoutedEmbedRequest, ctx: CallContext = {}): Promise<EmbedResult & { byok?: true }> {
    if (req.input.length === 0) throw invalidRequest([{ path: "body.input", message: "at least one text is needed" }]);
    // A fallback must produce vectors of the dimension the named model would
    // have produced: same default dimension, or one it can be asked for.
    const named = req.model ? this.catalogue.get(req.model) : undefined;
    const targetDimensions = req.dimensions ?? named?.capabilities.dimensions;
    const candidates = this.plan(req.model, req.routing_strategy ?? "auto", { category: "embedding", dimensions: targetDimensions }, allowOf(ctx));
    const { value, entry, byok } = await this.routeCall(candidates, ctx.signal, async (entry, adapter, signal) => {
      const dimensions = req.dimensions ?? (entry.capabilities.dimensions !== targetDimensions ? targetDimensions : undefined);
      return adapter.embed!({ model: entry.upstream_model ?? entry.id, input: req.input, dimensions, input_type: req.input_type }, { signal });
    });
    return { ...value, model: entry.id, provider: entry.provider, ...(byok ? { byok } : {}) };
  }

  /**
   * Submits one video segment (docs/api/video-jobs.md): routing, equivalent-model
   * fallback and breakers apply here, per segment. The task names the
   * catalogue model and provider that accepted it and the clip length that
   * model makes (the offered duration nearest the request).
   */
  submitVideo(request: RoutedVideoRequest, ctx: CallContext = {}): Promise<VideoTask> {
    return this.video.submit(request, ctx);
  }

  /**
   * Asks the task's provider how the task is doing. No fallback (the task
   * lives there) and no breaker (an open breaker must not strand paid
   * tasks); a failure is thrown as provider_error/provider_timeout, and the
   * caller polls again later.
   */
  pollVideo(task: VideoTask, ctx: CallContext = {}): Promise<VideoTaskStatus> {
    return this.video.poll(task, ctx);
  }

  /** Cancels the task at its provider (a no-op where the provider cannot). */
  cancelVideo(task: VideoTask, ctx: CallContext = {}): Promise<void> {
    return this.video.cancel(task, ctx);
  }

  /**
   * Looks for the task a submission of this segment made at or after
   * `sinceMs` whose answer was lost (a crash cut the submitting turn short):
   * asks, in routing order, each provider the segment could have gone to
   * that can list its tasks (`VideoAdapter.find`). Undefined when none has
   * it or none can tell.
   */
  findVideo(request: RoutedVideoRequest, sinceMs: number, ctx: CallContext = {}): Promise<VideoTask | undefined> {
    return this.video.find(request, sinceMs, ctx);
  }

  async close(): Promise<void> {
    await this.deployments?.close();
    await Promise.all([...this.adapters.values()].map((a) => a.close?.()));
  }

  private planChat(req: ChatRequest, ctx: ChatCallContext, streaming: boolean): ModelEntry[] {
    validateConversation(req.messages, req.tools, req.tool_choice);
    const category = ctx.category ?? (req.messages.some((m) => m.images && m.images.length > 0) ? "vision" : "text");
    const need = { category, tools: (req.tools?.length ?? 0) > 0, streaming, json: req.response_format !== undefined };
    return this.plan(req.model, req.routing_strategy ?? "auto", need, allowOf(ctx));
  }

  /** The request deadline; public for the video operations' single-provider calls (router-video.ts). */
  startDeadline(client: AbortSignal | undefined): Deadline {
    return new Deadline(this.timeoutMs, client);
  }

  /**
   * One routed call over planned candidates: the request's deadline, the
   * attempt chain, the deadline's disposal. Every non-streamed entry point
   * (chat, embed, video segments, and the media functions in speech.ts,
   * transcription.ts and images.ts) goes through it, so none reassembles the
   * loop; chatStream keeps its deadline past the attempts (the stream's body).
   */
  async routeCall<T>(candidates: ModelEntry[], client: AbortSignal | undefined, run: AttemptRun<T>): Promise<Attempted<T>> {
    const deadline = this.startDeadline(client);
    try {
      return await this.attempts(candidates, deadline, run);
    } finally {
      deadline.dispose();
    }
  }

  /** Runs the attempt chain; resolves with the first success. */
  private async attempts<T>(
    candidates: ModelEntry[],
    deadline: Deadline,
    run: AttemptRun<T>,
  ): Promise<Attempted<T>> {
    const lastFailure = new Map<string, ProviderCallError>();
    let lastError: unknown;
    let attempts = 0;
    for (let round = 0; attempts < this.maxAttempts; round++) {
      let triedThisRound = false;
      for (const entry of candidates) {
        if (attempts >= this.maxAttempts) break;
        const previous = lastFailure.get(entry.id);
        if (round > 0 && (!previous || !previous.retryable)) continue;
        const adapter = this.adapters.get(entry.provider);
        if (!adapter) continue;
        const pooled = isDeploymentPool(adapter);
        const health = this.healthOf(entry.provider);
        if (!(pooled ? adapter.view() : health).accepting) continue;
        if (round > 0) {
          // Retrying the same model: wait Retry-After (a date read on the router's clock) or a full-jitter exponential backoff.
          const delayMs =
            parseRetryAfterMs(previous?.retryAfter, this.now()) ?? this.random() * Math.min(this.maxDelayMs, this.initialDelayMs * 2 ** (round - 1));
          if (delayMs >= deadline.remainingMs()) continue;
          try {
            await sleep(delayMs, deadline.signal);
          } catch (e) {
            throw toTroupeError(e, deadline.signal, attempts);
          }
        }
        triedThisRound = true;
        attempts++;
        const attempt = deadline.attempt(Math.min(this.attemptTimeoutMs, deadline.remainingMs()), entry.provider);
        const startedMs = performance.now();
        const observed = this.observer?.attempt(entry.provider, entry.id);
        try {
          // The organization's own key first (BYOK), when it stored one for this provider.
          // Awaited only when the resolver has to look (an API-key call): otherwise the attempt starts in this tick.
          const resolving = this.ownCredentials?.(entry.provider);
          const own = resolving instanceof Promise ? await resolving : resolving;
          let byok = own !== undefined;
          const call = own
            ? () =>
                ownFirst(own, entry.provider, () => run(entry, own.adapter, attempt.signal), () => {
                  byok = false;
                  return run(entry, adapter, attempt.signal);
                })
            : () => run(entry, adapter, attempt.signal);
          // A deployment pool keeps one breaker per deployment; the provider's would double-count its failures.
          const value = await (pooled ? call() : health.breaker.execute(call));
          attempt.succeeded();
          this.latency.record(entry.id, performance.now() - startedMs);
          observed?.("success");
          return byok ? { value, entry, byok: true } : { value, entry };
        } catch (e) {
          attempt.failed();
          observed?.(attemptOutcome(e, deadline.clientAborted), e);
          if (deadline.clientAborted) throw e;
          if (e instanceof BrokenCircuitError) {
            // A half-open probe is already in flight on this provider: not an attempt.
            attempts--;
            continue;
          }
          const failure = asProviderFailure(e, entry.provider);
          if (!failure) throw e;
          lastError = failure;
          lastFailure.set(entry.id, failure);
          if (!failure.fallbackable || deadline.expired) throw toTroupeError(failure, deadline.signal, attempts);
        }
      }
      if (!triedThisRound) break;
    }
    if (lastError === undefined) {
      throw new TroupeError("no_provider_available", "every capable provider is unavailable (circuit breakers open)");
    }
    throw toTroupeError(lastError, deadline.signal, attempts);
  }
}

/**
 * Runs a call with the organization's own key; the provider refusing that key
 * (401/403) is the organization's to fix: 403 provider_credential_rejected
 * naming the stored credential, or, when the organization allowed it, the
 * same call with Troupe's own key.
 */
async function ownFirst<T>(own: OwnCredential, provider: string, withOwn: () => Promise<T>, withTroupe: () => Promise<T>): Promise<T> {
  try {
    return await withOwn();
  } catch (e) {
    if (!(e instanceof ProviderCallError) || e.kind !== "http" || (e.status !== 401 && e.status !== 403)) throw e;
    if (own.allowFallback) return withTroupe();
    throw new TroupeError(
      "provider_credential_rejected",
      `${provider} rejected the organization's stored credential (${own.label}): replace it with PUT /v1/orgs/{id}/provider-credentials/${provider}, or allow fallback to Troupe's key`,
      { details: { provider, credential: own.label, upstream_status: e.status ?? null }, cause: e },
    );
  }
}
