// The console's "webhook failures": failed delivery attempts of the
// organization's newest webhooks, newest first. Same path as
// GET /v1/webhooks and GET /v1/webhooks/{id}/deliveries (the directory, then
// each WebhookActor's "deliveries"), bounded so a glance stays cheap: the
// newest `webhooksScanned` webhooks × their newest `deliveriesScanned`
// attempts, at most `shown` rows.
import { callActor, type ActorHost } from "../../actors/host.ts";
import type { WebhookDirectory } from "../../actors/webhooks/directory.ts";
import type { WebhookActorDefinition } from "../../actors/webhooks/webhook-actor.ts";
import type { ConsoleWebhookFailure } from "./console-data.ts";

const webhooksScanned = 20;
const deliveriesScanned = 20;
const shown = 50;

export interface WebhookFailureSources {
  actors: ActorHost;
  webhook: WebhookActorDefinition;
  directory: WebhookDirectory;
}

export async function webhookFailures(sources: WebhookFailureSources, organizationId: string): Promise<ConsoleWebhookFailure[]> {
  const webhooks = (await sources.directory.list(organizationId, webhooksScanned, null)).data;
  const perWebhook = await Promise.all(
    webhooks.map(async (hook) => {
      const page = await callActor(sources.actors, sources.webhook, hook.id, "deliveries", { organization_id: organizationId, limit: deliveriesScanned, cursor: null });
      return page.data
        .filter((d) => d.status === "failed")
        .map((d) => ({ webhook_id: hook.id, url: hook.url, event_type: d.event_type, attempt: d.attempt, response_status: d.response_status, error: d.error, created_at: d.created_at }));
    }),
  );
  return perWebhook
    .flat()
    .sort((a, b) => b.created_at.localeCompare(a.created_at))
    .slice(0, shown);
}
