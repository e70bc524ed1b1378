// Webhooks: a WebhookActor per webhook holding its outbox; attempts leave
// outside the actor's turn (the dispatcher) and their results are settled
// back; the publisher is where every organization event goes (budget alerts,
// job ends); the /v1/webhooks routes.
import { WebhookDirectory } from "../../actors/webhooks/directory.ts";
import { DeliveryLog } from "../../actors/webhooks/delivery-log.ts";
import { startDeliveryWatcher } from "../../actors/webhooks/delivery-events.ts";
import { WebhookDispatcher } from "../../actors/webhooks/dispatcher.ts";
import { WebhookPublisher } from "../../actors/webhooks/publisher.ts";
import { createSecretBox, webhookSecretKey } from "../../actors/webhooks/secret-box.ts";
import { createWebhookActor, WEBHOOK_ACTOR, type WebhookActorDefinition } from "../../actors/webhooks/webhook-actor.ts";
import { actorRef, eraseDefinition } from "../../actors/actor.ts";
import { webhookRoutes } from "../routes/webhooks.ts";
import type { Feature } from "./feature.ts";
import type { SharedServices } from "./shared-services.ts";

export interface WebhooksFeature extends Feature {
  webhook: WebhookActorDefinition;
  directory: WebhookDirectory;
  publisher: WebhookPublisher;
}

export async function webhooksFeature(s: SharedServices): Promise<WebhooksFeature> {
  const { config, actors, fetcher } = s;
  const directory = new WebhookDirectory(s.store, config.webhooks.endpointsPerOrganization);
  await directory.start();
  // The test and retry routes wait for their attempt's outcome here (announced after the turn commits).
  const deliveries = await startDeliveryWatcher(s.store, (error) => s.log.warn("webhook delivery announcement failed", { error }));
  const secrets = createSecretBox(webhookSecretKey(config.webhooks.secretKey, config.dataDir));
  // Built against the flow, so each is whole when made: the publisher calls the actor by name, the dispatcher
  // reports to the publisher, and the actor dispatches through the dispatcher.
  const publisher = new WebhookPublisher({ actors, actor: actorRef<WebhookActorDefinition>(WEBHOOK_ACTOR), directory });
  // The publisher batches the results: they ride in the webhook's next accept when one is on its way (one turn instead of two), else settle alone.
  const dispatcher = new WebhookDispatcher({
    post: (url, body, headers, timeoutMs) => fetcher.post(url, body, headers, timeoutMs),
    settle: (id, results) => publisher.report(id, results),
    timeoutMs: config.webhooks.timeoutMs,
    log: s.log,
    clock: s.clock,
    metrics: s.metrics,
  });
  const webhook = createWebhookActor({ dispatch: (id, attempts) => dispatcher.dispatch(id, attempts), announce: (id, record) => deliveries.announce(id, record), directory, log: new DeliveryLog(s.store), config: config.webhooks, secrets });
  return {
    webhook,
    directory,
    publisher,
    actors: [eraseDefinition(webhook)],
    routes: webhookRoutes({ actors, webhook, directory, accounts: s.accounts, fetcher, clock: s.clock, deliveries, timeoutMs: config.webhooks.timeoutMs }),
    async drain() {
      await publisher.idle();
      await dispatcher.idle();
    },
  };
}
