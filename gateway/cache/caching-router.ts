// The router the text routes are handed when the response cache is on
// (gateway/features/cache.ts): the same object as the provider router, with
// chat, chatStream and embed looked up in the cache first. Caching here, at
// the router boundary, and not per mount: every mount has already
// translated its body into the one internal request, so one key covers
// /v1, /openai/v1, /anthropic and /gemini, and each mount's stream writer
// renders a replay in its own format. The Responses API is given it for a
// stateless call only, agent turns never (docs/guides/caching.md, "What is
// never cached").
import type { ChatRequest } from "../../providers/chat-request.ts";
import { currentModelAllowlist, type ModelFilter } from "../../providers/router-allowlist.ts";
import type { CallContext, ChatCallContext, RoutedEmbedRequest, Router } from "../../providers/router.ts";
import type { ChatResult, EmbedResult, StreamEvent } from "../../providers/types.ts";
import { chatCacheKey, embeddingCacheKey } from "./cache-key.ts";
import { announce } from "./cache-request.ts";
import { entryJsonBytes } from "./entry-codec.ts";
import type { CachePlan, ResponseCache } from "./response-cache.ts";
import { replayEvents, storable, StreamFold } from "./stream-replay.ts";
import type { CacheEntry } from "./types.ts";

export function cachingRouter(router: Router, cache: ResponseCache): Router {
  /** A found entry this call may be answered with: the right kind, and a model the calling key may use (an allowlist is never bypassed by a hit). */
  const usable = (plan: CachePlan, kind: CacheEntry["answer"]["kind"], ctx: CallContext): CacheEntry | undefined => {
    const entry = plan.found;
    if (!entry || entry.answer.kind !== kind) return undefined;
    const allow: ModelFilter | null = ctx.allowModel === undefined ? (currentModelAllowlist() ?? null) : ctx.allowModel;
    const model = router.catalogue.get(entry.answer.result.model);
    if (allow && (!model || !allow(model))) return undefined;
    return entry;
  };

  const served = (plan: CachePlan, entry: CacheEntry): void => {
    announce(plan.request, "hit", cache.ageSeconds(entry), "exact");
    cache.metrics.outcome("hit", entryJsonBytes(entry));
  };

  const live = (plan: CachePlan): void => {
    const outcome = plan.request.mode === "use" ? "miss" : plan.request.mode;
    announce(plan.request, outcome);
    cache.metrics.outcome(outcome);
  };

  const chat = async (req: ChatRequest, ctx: ChatCallContext = {}): Promise<ChatResult> => {
    const plan = await cache.plan((owner) => chatCacheKey(owner, req, ctx.category));
    if (!plan) return router.chat(req, ctx);
    const entry = usable(plan, "chat", ctx);
    if (entry?.answer.kind === "chat") {
      served(plan, entry);
      return entry.answer.result;
    }
    live(plan);
    const result = await router.chat(req, ctx);
    if (storable(result)) cache.keep(plan, { kind: "chat", result });
    return result;
  };

  async function* chatStream(req: ChatRequest, ctx: ChatCallContext = {}): AsyncGenerator<StreamEvent> {
    // Decided before the first event, so the SSE head carries the outcome.
    const plan = await cache.plan((owner) => chatCacheKey(owner, req, ctx.category));
    if (!plan) return yield* router.chatStream(req, ctx);
    const entry = usable(plan, "chat", ctx);
    if (entry?.answer.kind === "chat") {
      served(plan, entry);
      return yield* replayEvents(entry.answer.result);
    }
    live(plan);
    const fold = new StreamFold();
    for await (const event of router.chatStream(req, ctx)) {
      // Stored once the finish arrived, before it is passed on: a consumer stopping at the finish still stores it; one stopping earlier stores nothing.
      const result = fold.add(event);
      if (result && storable(result)) cache.keep(plan, { kind: "chat", result });
      yield event;
    }
  }

  const embed = async (req: RoutedEmbedRequest, ctx: CallContext = {}): Promise<EmbedResult> => {
    const plan = await cache.plan((owner) => embeddingCacheKey(owner, req));
    if (!plan) return router.embed(req, ctx);
    const entry = usable(plan, "embedding", ctx);
    if (entry?.answer.kind === "embedding") {
      served(plan, entry);
      return entry.answer.result;
    }
    live(plan);
    const result = await router.embed(req, ctx);
    cache.keep(plan, { kind: "embedding", result });
    return result;
  };

  // The provider router itself underneath (its catalogue, plans, media calls, breakers…); only the three text calls are replaced.
  const decorated = Object.create(router) as Router;
  return Object.assign(decorated, { chat, chatStream, embed });
}
