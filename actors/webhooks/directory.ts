// Which webhooks an organization has, in the tenancy DataStore (lmdb
// embedded, Redis in the cluster): one public record per webhook and a
// per-organization index. The routes list from it and the publisher finds
// the active webhooks subscribed to an event kind from it, without waking
// every WebhookActor. The actor writes its record when its status changes,
// inside the turn that changes it, so the list and the fan-out never see a
// stale status for longer than that turn.
import type { DataStore } from "../../tenancy/data-store.ts";
import { webhookSchema, type Webhook } from "./types.ts";

const recordKey = (id: string) => `webhook:${id}`;
const orgIndexKey = (orgId: string) => `org-webhooks:${orgId}`;
/** Index pages read per step while collecting an organization's webhooks for a publish. */
const scanPage = 100;

export interface DirectoryEntry extends Webhook {
  organization_id: string;
}

export class WebhookDirectory {
  private readonly store: DataStore;

  constructor(store: DataStore) {
    this.store = store;
  }

  async created(organizationId: string, webhook: Webhook): Promise<void> {
    await this.store.apply([
      { op: "put", key: recordKey(webhook.id), value: { ...webhook, organization_id: organizationId } },
      { op: "index", key: orgIndexKey(organizationId), member: webhook.id, score: Date.parse(webhook.created_at) },
    ]);
  }

  async updated(organizationId: string, webhook: Webhook): Promise<void> {
    await this.store.apply([{ op: "put", key: recordKey(webhook.id), value: { ...webhook, organization_id: organizationId } }]);
  }

  async list(organizationId: string, limit: number, cursor: string | null | undefined): Promise<{ data: Webhook[]; next_cursor: string | null }> {
    const page = await this.store.page(orgIndexKey(organizationId), limit, cursor);
    return { data: await this.read(page.members), next_cursor: page.nextCursor };
  }

  /** Ids of the organization's active webhooks subscribed to `type`. */
  async subscribed(organizationId: string, type: string): Promise<string[]> {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await this.store.page(orgIndexKey(organizationId), scanPage, cursor);
      for (const webhook of await this.read(page.members)) {
        if (webhook.status === "active" && (webhook.events as string[]).includes(type)) ids.push(webhook.id);
      }
      cursor = page.nextCursor;
    } while (cursor);
    return ids;
  }

  private async read(ids: string[]): Promise<Webhook[]> {
    const raws = await this.store.getMany(ids.map(recordKey));
    const out: Webhook[] = [];
    for (const raw of raws) {
      const parsed = webhookSchema.safeParse(raw);
      if (parsed.success) out.push(parsed.data);
    }
    return out;
  }
}
