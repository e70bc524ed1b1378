// The router's video operations (docs/api/video-jobs.md): submitting a
// segment goes through routing, equivalent-model fallback and breakers like
// any call; polling, cancelling and finding a task talk to the one provider
// that holds it, within the attempt timeout and without fallback.
import { invalidRequest, TroupeError } from "../core/errors.ts";
import type { ModelEntry, Need } from "./catalogue.ts";
import type { Deadline } from "./deadline.ts";
import { asProviderFailure, toTroupeError } from "./router-failures.ts";
import type { AttemptRun, CallContext } from "./router.ts";
import type { ProviderAdapter, RoutingStrategy } from "./types.ts";
import type { VideoSegmentRequest, VideoTask, VideoTaskStatus } from "./video.ts";
import { nearestDuration, videoNeed } from "./video-routing.ts";

type VideoAdapter = NonNullable<ProviderAdapter["video"]>;

/** What the video operations use of the router: its planning, a routed call, and a deadline for one provider's call. */
export interface VideoRouting {
  plan(model: string | null | undefined, strategy: RoutingStrategy, need: Need): ModelEntry[];
  routeCall<T>(candidates: ModelEntry[], client: AbortSignal | undefined, run: AttemptRun<T>): Promise<{ value: T; entry: ModelEntry }>;
  startDeadline(client: AbortSignal | undefined): Deadline;
}

export type RoutedVideoRequest = VideoSegmentRequest & { routing_strategy: RoutingStrategy };

export class RouterVideo {
  private readonly routing: VideoRouting;
  private readonly adapters: ReadonlyMap<string, ProviderAdapter>;
  private readonly attemptTimeoutMs: number;

  constructor(routing: VideoRouting, adapters: ReadonlyMap<string, ProviderAdapter>, attemptTimeoutMs: number) {
    this.routing = routing;
    this.adapters = adapters;
    this.attemptTimeoutMs = attemptTimeoutMs;
  }

  /** See Router.submitVideo. */
  async submit(request: RoutedVideoRequest, ctx: CallContext): Promise<VideoTask> {
    if (!(request.duration_seconds > 0)) throw invalidRequest([{ path: "duration_seconds", message: "must be a positive number of seconds" }]);
    const { routing_strategy, ...segment } = request;
    const candidates = this.routing.plan(segment.model, routing_strategy, videoNeed(segment.image !== undefined));
    const { value, entry } = await this.routing.routeCall(candidates, ctx.signal, async (entry, adapter, signal) => {
      const duration = nearestDuration(entry, segment.duration_seconds);
      const task = await adapter.video!.submit({ ...segment, model: entry.upstream_model ?? entry.id, duration_seconds: duration }, signal);
      return { ...task, duration_seconds: duration };
    });
    return { ...value, provider: entry.provider, model: entry.id };
  }

  poll(task: VideoTask, ctx: CallContext): Promise<VideoTaskStatus> {
    return this.onTaskProvider(task, ctx, (adapter, signal) => adapter.poll(task, signal));
  }

  async cancel(task: VideoTask, ctx: CallContext): Promise<void> {
    await this.onTaskProvider(task, ctx, (adapter, signal) => adapter.cancel(task, signal));
  }

  /** See Router.findVideo. */
  async find(request: RoutedVideoRequest, sinceMs: number, ctx: CallContext): Promise<VideoTask | undefined> {
    const { routing_strategy, ...segment } = request;
    for (const entry of this.routing.plan(segment.model, routing_strategy, videoNeed(segment.image !== undefined))) {
      const adapter = this.adapters.get(entry.provider)?.video;
      if (!adapter?.find) continue;
      const duration = nearestDuration(entry, segment.duration_seconds);
      const upstream = { ...segment, model: entry.upstream_model ?? entry.id, duration_seconds: duration };
      const task = await this.onProvider(entry.provider, ctx, (found, signal) => found.find!(upstream, sinceMs, signal));
      if (task) return { ...task, provider: entry.provider, model: entry.id, duration_seconds: duration };
    }
    return undefined;
  }

  private async onTaskProvider<T>(task: VideoTask, ctx: CallContext, run: (adapter: VideoAdapter, signal: AbortSignal) => Promise<T>): Promise<T> {
    if (!this.adapters.get(task.provider)?.video) throw new TroupeError("no_provider_available", `provider ${task.provider} of video task ${task.task_id} is not configured`);
    return this.onProvider(task.provider, ctx, run);
  }

  /** One call to one provider's video adapter, within the attempt timeout; no fallback. */
  private async onProvider<T>(provider: string, ctx: CallContext, run: (adapter: VideoAdapter, signal: AbortSignal) => Promise<T>): Promise<T> {
    const adapter = this.adapters.get(provider)?.video;
    if (!adapter) throw new TroupeError("no_provider_available", `provider ${provider} is not configured for video`);
    const deadline = this.routing.startDeadline(ctx.signal);
    const attempt = deadline.attempt(Math.min(this.attemptTimeoutMs, deadline.remainingMs()), provider);
    try {
      const value = await run(adapter, attempt.signal);
      attempt.succeeded();
      return value;
    } catch (e) {
      attempt.failed();
      if (deadline.clientAborted) throw e;
      throw toTroupeError(asProviderFailure(e, provider) ?? e, deadline.signal, 1);
    } finally {
      deadline.dispose();
    }
  }
}
