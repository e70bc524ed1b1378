// OpenAI's Responses API (/openai/v1/responses, docs/guides/responses.md): a
// ResponseActor per stored response, the reads that walk a response's
// chain, and the routes. Billed through the billing feature's meter and
// budgets, as the chat mount is; a stateless create (store: false, no chain,
// no conversation, not background) is answered through the response
// cache's router, every other call and background runs through the plain one.
import { actorRef, eraseDefinition } from "../../actors/actor.ts";
import { createResponseActor, RESPONSE_ACTOR, type ResponseActorDefinition } from "../../actors/responses/response-actor.ts";
import type { EventPublisher } from "../../core/organization-events.ts";
import { uuid } from "../../core/ids.ts";
import { BackgroundRunner } from "../compat/openai/responses/background.ts";
import { ResponseHistory } from "../compat/openai/responses/history.ts";
import { responseRoutes, type ResponseConversationHook } from "../compat/openai/responses/routes.ts";
import { ResponseStore } from "../compat/openai/responses/store.ts";
import type { BillingFeature } from "./billing.ts";
import type { CacheFeature } from "./cache.ts";
import type { Feature } from "./feature.ts";
import type { SharedServices } from "./shared-services.ts";

const dayMs = 86_400_000;

export interface ResponsesFeature extends Feature {
  /** Deleting an organization erases its stored responses through this. */
  store: ResponseStore;
}

/** Background runs: their watchdog's period, and the heartbeat age past which a runner on another replica is taken for gone. */
const watchMs = 5_000;
const staleMs = 15_000;

/**
 * `conversations`: the Conversations API's hook, when it is served (a request naming a conversation is a 400 until then).
 * `publisher`: where background responses' response.* events go (the webhooks). `collectsUsage`: a test's usage collector sees their records too.
 * `cache`: its router answers stateless creates (gateway/compat/openai/responses/create.ts, statelessCall).
 */
export function responsesFeature(s: SharedServices, billing: BillingFeature, cache: Pick<CacheFeature, "router">, conversations: ResponseConversationHook | undefined, publisher: EventPublisher, collectsUsage: boolean): ResponsesFeature {
  const now = () => s.clock.now();
  // Each start of the process is a new runner: a run recorded under another name is not running here.
  const runnerName = `runner_${uuid(now())}`;
  // By reference: the actor's definition is built below, with the runner its watchdog starts runs on.
  const history = new ResponseHistory(s.actors, actorRef<ResponseActorDefinition>(RESPONSE_ACTOR), now);
  const runner = new BackgroundRunner({
    actors: s.actors,
    router: s.router,
    history,
    meter: billing.meter,
    // Otherwise billed durably and idempotently on the response id (as video segments are).
    bill: collectsUsage
      ? async (record, settles) => {
          billing.usage.record(record);
          for (const part of settles) await s.ledger.release(part);
        }
      : billing.billing.bill,
    budget: billing.billing,
    conversations,
    log: s.log,
    runner: runnerName,
  });
  const actor = createResponseActor({
    start: (id) => runner.start(id),
    runs: (id) => runner.runs(id),
    runner: runnerName,
    singleProcess: s.config.mode === "embedded",
    publisher,
    budget: billing.billing,
    watchMs,
    staleMs,
  });
  const store = new ResponseStore({ actors: s.actors, actor, data: s.store, history });
  const background = { runner, actors: s.actors, actor, budget: billing.billing };
  return {
    store,
    actors: [eraseDefinition(actor)],
    routes: responseRoutes({ router: s.router, cachedRouter: cache.router, usage: billing.meter, billing: billing.billing, now, store, retentionMs: s.config.responses.retentionDays * dayMs, conversations, background }),
    // Runs still going stop with the process; their watchdogs fail them after the restart (they are never run twice).
    drain: () => runner.stop(),
  };
}
