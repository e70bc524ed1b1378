// Which webhooks an organization has, in the tenancy DataStore (lmdb
// embedded, Redis in the cluster): one public record per webhook and a
// per-organization index. The routes list from it and the publisher finds
// the active webhooks subscribed to an event kind from it, without waking
// every WebhookActor. The actor writes its record when its status changes,
// inside the turn that changes it, so the list and the fan-out never see a
// stale status for longer than that turn.
//
// The publisher asks for an organization's subscribed webhooks on every
// event, so each process caches the organization's webhook list (a read of
// the index and every record, per event, was a tenth of the gateway's CPU
// at 1,000 events/s). Any change drops the entry here at once and in every
// other replica through the store's broadcast channel (as revoked API keys
// do); a stale entry can only name a webhook that is no longer active, and
// its actor refuses events then.
import type { DataStore } from "../../tenancy/data-store.ts";
import { webhookSchema, type Webhook } from "./types.ts";

const recordKey = (id: string) => `webhook:${id}`;
const orgIndexKey = (orgId: string) => `org-webhooks:${orgId}`;
/** Index pages read per step while collecting an organization's webhooks for a publish. */
const scanPage = 100;
/** Broadcast channel: the organization id whose webhook list changed. */
const changedChannel = "webhooks-changed";

export interface DirectoryEntry extends Webhook {
  organization_id: string;
}

export class WebhookDirectory {
  private readonly store: DataStore;
  /** Organization id → its webhooks (every status), loading or loaded; dropped on any change. */
  private readonly cache = new Map<string, Promise<Webhook[]>>();

  constructor(store: DataStore) {
    this.store = store;
  }

  /** Listens for changes made by other replicas (before serving). */
  async start(): Promise<void> {
    await this.store.subscribe(changedChannel, (organizationId) => this.cache.delete(organizationId));
  }

  async created(organizationId: string, webhook: Webhook): Promise<void> {
    await this.store.apply([
      { op: "put", key: recordKey(webhook.id), value: { ...webhook, organization_id: organizationId } },
      { op: "index", key: orgIndexKey(organizationId), member: webhook.id, score: Date.parse(webhook.created_at) },
    ]);
    await this.changed(organizationId);
  }

  async updated(organizationId: string, webhook: Webhook): Promise<void> {
    await this.store.apply([{ op: "put", key: recordKey(webhook.id), value: { ...webhook, organization_id: organizationId } }]);
    await this.changed(organizationId);
  }

  private async changed(organizationId: string): Promise<void> {
    this.cache.delete(organizationId);
    await this.store.publish(changedChannel, organizationId);
  }

  async list(organizationId: string, limit: number, cursor: string | null | undefined): Promise<{ data: Webhook[]; next_cursor: string | null }> {
    const page = await this.store.page(orgIndexKey(organizationId), limit, cursor);
    return { data: await this.read(page.members), next_cursor: page.nextCursor };
  }

  /** Ids of the organization's active webhooks subscribed to `type`. */
  async subscribed(organizationId: string, type: string): Promise<string[]> {
    let all = this.cache.get(organizationId);
    if (!all) {
      all = this.readAll(organizationId);
      this.cache.set(organizationId, all);
      // A failed read is not kept: the next event reads again.
      all.catch(() => {
        if (this.cache.get(organizationId) === all) this.cache.delete(organizationId);
      });
    }
    return (await all).filter((w) => w.status === "active" && (w.events as string[]).includes(type)).map((w) => w.id);
  }

  private async readAll(organizationId: string): Promise<Webhook[]> {
    const all: Webhook[] = [];
    let cursor: string | null = null;
    do {
      const page = await this.store.page(orgIndexKey(organizationId), scanPage, cursor);
      all.push(...(await this.read(page.members)));
      cursor = page.nextCursor;
    } while (cursor);
    return all;
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
