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
//
// A webhook made with an API key has an audience (its key's environment,
// types.ts): the fan-out skips it for other environments' events, and it is
// also indexed under its environment, the list such a key sees.
//
// An organization has at most WEBHOOK_ENDPOINTS_PER_ORGANIZATION active
// webhooks: the record is written with a slot of the organization's quota
// (core/quota-slots.ts), exact under concurrent creates on every replica; a
// webhook that is deleted (inactive) or disabled gives its slot up.
import { indexMembers, type DataStore, type StoreOp } from "../../core/data-store.ts";
import { applyWithinQuota, quotaErasureOps, quotaExceeded, type QuotaScope } from "../../core/quota-slots.ts";
import { audienceReceives, webhookAudienceSchema, webhookSchema, type EventOrigin, type Webhook, type WebhookAudience } from "./types.ts";

const recordKey = (id: string) => `webhook:${id}`;
const orgIndexKey = (orgId: string) => `org-webhooks:${orgId}`;
const environmentIndexKey = (envId: string) => `env-webhooks:${envId}`;
/** A record as stored: the public webhook and its audience (absent in records written before audiences: the organization's). */
const entrySchema = webhookSchema.extend({ audience: webhookAudienceSchema.default(null) });
type Entry = Webhook & { audience: WebhookAudience };
/** Index pages read per step while collecting an organization's webhooks for a publish. */
const scanPage = 100;
/** Broadcast channel: the organization id whose webhook list changed. */
const changedChannel = "webhooks-changed";
/** The organization's quota scope (core/quota-slots.ts). */
const quotaScope = (orgId: string) => `webhooks:${orgId}`;

export interface DirectoryEntry extends Webhook {
  organization_id: string;
}

export class WebhookDirectory {
  private readonly store: DataStore;
  /** Organization id → its webhooks (every status), loading or loaded; dropped on any change. */
  private readonly cache = new Map<string, Promise<Entry[]>>();

  /** WEBHOOK_ENDPOINTS_PER_ORGANIZATION; undefined: no limit (tests of the directory alone). */
  private readonly perOrganization: number | undefined;

  constructor(store: DataStore, perOrganization?: number) {
    this.store = store;
    this.perOrganization = perOrganization;
  }

  private quota(organizationId: string, max: number): QuotaScope {
    return {
      scope: quotaScope(organizationId),
      capacity: max,
      counting: async (ids) => new Set((await this.read(ids)).filter((w) => w.status === "active").map((w) => w.id)),
      refusal: () => quotaExceeded("this organization has as many active webhooks as it may", max),
    };
  }

  /** Listens for changes made by other replicas (before serving). */
  async start(): Promise<void> {
    await this.store.subscribe(changedChannel, (organizationId) => this.cache.delete(organizationId));
  }

  async created(organizationId: string, webhook: Webhook, audience: WebhookAudience = null): Promise<void> {
    const score = Date.parse(webhook.created_at);
    const ops: StoreOp[] = [
      { op: "put", key: recordKey(webhook.id), value: { ...webhook, organization_id: organizationId, audience } },
      { op: "index", key: orgIndexKey(organizationId), member: webhook.id, score },
    ];
    if (audience) ops.push({ op: "index", key: environmentIndexKey(audience.environment_id), member: webhook.id, score });
    // Refused (403 quota_exceeded) inside the create's turn: the actor then keeps no webhook.
    if (this.perOrganization === undefined) await this.store.apply(ops);
    else await applyWithinQuota(this.store, this.quota(organizationId, this.perOrganization), webhook.id, ops);
    await this.changed(organizationId);
  }

  async updated(organizationId: string, webhook: Webhook, audience: WebhookAudience = null): Promise<void> {
    await this.store.apply([{ op: "put", key: recordKey(webhook.id), value: { ...webhook, organization_id: organizationId, audience } }]);
    await this.changed(organizationId);
  }

  private async changed(organizationId: string): Promise<void> {
    this.cache.delete(organizationId);
    await this.store.publish(changedChannel, organizationId);
  }

  /** The organization's webhooks (a session's list), or with `environmentId` only those made by that environment's keys (a key's list). */
  async list(organizationId: string, limit: number, cursor: string | null | undefined, environmentId: string | null = null): Promise<{ data: Webhook[]; next_cursor: string | null }> {
    const page = await this.store.page(environmentId === null ? orgIndexKey(organizationId) : environmentIndexKey(environmentId), limit, cursor);
    const data = (await this.read(page.members)).map(({ audience: _audience, ...webhook }) => webhook);
    return { data, next_cursor: page.nextCursor };
  }

  /** Ids of the organization's active webhooks subscribed to `type` whose audience takes an event from `origin`. */
  async subscribed(origin: EventOrigin, type: string): Promise<string[]> {
    const organizationId = origin.organization_id;
    let all = this.cache.get(organizationId);
    if (!all) {
      all = this.readAll(organizationId);
      this.cache.set(organizationId, all);
      // A failed read is not kept: the next event reads again.
      all.catch(() => {
        if (this.cache.get(organizationId) === all) this.cache.delete(organizationId);
      });
    }
    return (await all).filter((w) => w.status === "active" && (w.events as string[]).includes(type) && audienceReceives(w.audience, origin)).map((w) => w.id);
  }

  private async readAll(organizationId: string): Promise<Entry[]> {
    const all: Entry[] = [];
    let cursor: string | null = null;
    do {
      const page = await this.store.page(orgIndexKey(organizationId), scanPage, cursor);
      all.push(...(await this.read(page.members)));
      cursor = page.nextCursor;
    } while (cursor);
    return all;
  }

  private async read(ids: string[]): Promise<Entry[]> {
    const raws = await this.store.getMany(ids.map(recordKey));
    const out: Entry[] = [];
    for (const raw of raws) {
      const parsed = entrySchema.safeParse(raw);
      if (parsed.success) out.push(parsed.data);
    }
    return out;
  }

  /** The organization's webhook ids (deleting the organization erases each actor first). */
  idsOf(organizationId: string): Promise<string[]> {
    return indexMembers(this.store, orgIndexKey(organizationId));
  }

  /** Deleting an organization: removes its webhooks' records and index entries (the organization's and each of `environmentIds`'); answers their ids. */
  async eraseOrganization(organizationId: string, environmentIds: readonly string[]): Promise<string[]> {
    const ids = await this.idsOf(organizationId);
    const ops: StoreOp[] = [];
    for (const id of ids) {
      ops.push({ op: "delete", key: recordKey(id) }, { op: "unindex", key: orgIndexKey(organizationId), member: id });
      for (const env of environmentIds) ops.push({ op: "unindex", key: environmentIndexKey(env), member: id });
    }
    ops.push(...(await quotaErasureOps(this.store, quotaScope(organizationId))));
    if (ops.length > 0) await this.store.apply(ops);
    await this.changed(organizationId);
    return ids;
  }
}
