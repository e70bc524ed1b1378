// The semantic cache as a router decorator around the exact cache's
// (caching-router.ts), so the cache feature adds it in one line:
// `semanticRouter(cachingRouter(router, cache), { cache, step })`. For a
// chat call of a project with semantic on, after an exact miss, it looks the
// request up by meaning (semantic-step.ts); a hit is announced and billed as
// an exact hit is (`troupe-cache: hit`, its age, the cache price) and a
// stream is replayed by the exact cache's replay; otherwise the exact cache
// answers (and stores) as usual, and the answer's vector is kept beside the
// exact entry. Embeddings calls pass straight through.
import { currentModelAllowlist, type ModelFilter } from "../../providers/router-allowlist.ts";
import type { ChatRequest } from "../../providers/chat-request.ts";
import type { ChatCallContext, Router } from "../../providers/router.ts";
import type { ChatResult, StreamEvent } from "../../providers/types.ts";
import { chatCacheKey } from "./cache-key.ts";
import { entryJsonBytes } from "./entry-codec.ts";
import { announce, currentCacheRequest, type CacheRequest } from "./cache-request.ts";
import type { ResponseCache } from "./response-cache.ts";
import { announceSemanticHit, semanticStep, type SemanticStepDeps } from "./semantic-step.ts";
import { replayEvents, storable, StreamFold } from "./stream-replay.ts";
import type { CachedAnswer, CacheEntry } from "./types.ts";

export interface SemanticRouterDeps {
  cache: ResponseCache;
  step: SemanticStepDeps;
}

/** What the semantic layer decided before the exact cache runs: serve `entry`, or keep the answer's vector with `keep`. */
type Decision = { entry: CacheEntry & { answer: { kind: "chat"; result: ChatResult } } } | { entry?: undefined; keep?: ((answer: CachedAnswer) => void) | undefined };

export function semanticRouter(inner: Router, deps: SemanticRouterDeps): Router {
  const usable = (entry: CacheEntry, ctx: ChatCallContext): boolean => {
    if (entry.answer.kind !== "chat") return false;
    // A hit never bypasses the calling key's model allowlist (as the exact cache's does not).
    const allow: ModelFilter | null = ctx.allowModel === undefined ? (currentModelAllowlist() ?? null) : ctx.allowModel;
    const model = inner.catalogue.get(entry.answer.result.model);
    return !allow || (model !== undefined && allow(model));
  };

  const decide = async (req: ChatRequest, ctx: ChatCallContext): Promise<Decision> => {
    const request: CacheRequest | undefined = currentCacheRequest();
    if (!request) return {};
    const read = deps.cache.settings.settingsOf(request.owner.project_id);
    const settings = read instanceof Promise ? await read : read;
    if (!settings.enabled || !settings.semantic_enabled || request.mode === "bypass") return {};
    const key = chatCacheKey(request.owner, req, ctx.category);
    // An exact hit is the exact cache's to serve: no embedding is paid for it.
    if (request.mode === "use" && (await deps.cache.store.get(request.owner, key).catch(() => undefined))) return {};
    // The project's semantic_embedding_model, or (null) the step's default.
    const outcome = await semanticStep(deps.step, request, settings, req, ctx.category, ctx.signal);
    if (!outcome) return {};
    if (outcome.entry) {
      const entry = outcome.entry;
      if (entry.answer.kind === "chat" && usable(entry, ctx)) {
        announce(request, "hit", deps.cache.ageSeconds(entry));
        announceSemanticHit(request, outcome.hit);
        deps.cache.metrics.outcome("hit", entryJsonBytes(entry));
        return { entry: entry as CacheEntry & { answer: { kind: "chat"; result: ChatResult } } };
      }
      return {};
    }
    return { keep: (answer) => outcome.keep(key, answer) };
  };

  const chat = async (req: ChatRequest, ctx: ChatCallContext = {}): Promise<ChatResult> => {
    const decision = await decide(req, ctx);
    if (decision.entry) return decision.entry.answer.result;
    const result = await inner.chat(req, ctx);
    if (decision.keep && storable(result)) decision.keep({ kind: "chat", result });
    return result;
  };

  async function* chatStream(req: ChatRequest, ctx: ChatCallContext = {}): AsyncGenerator<StreamEvent> {
    // Decided before the first event, so the SSE head carries the outcome.
    const decision = await decide(req, ctx);
    if (decision.entry) return yield* replayEvents(decision.entry.answer.result);
    if (!decision.keep) return yield* inner.chatStream(req, ctx);
    const fold = new StreamFold();
    for await (const event of inner.chatStream(req, ctx)) {
      const result = fold.add(event);
      if (result && storable(result)) decision.keep({ kind: "chat", result });
      yield event;
    }
  }

  // The exact cache's router underneath (and the provider router under it); only chat and streams are replaced.
  const decorated = Object.create(inner) as Router;
  return Object.assign(decorated, { chat, chatStream });
}
