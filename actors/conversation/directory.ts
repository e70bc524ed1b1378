// Which conversations an organization has, for GET /v1/agents/conversations:
// summaries and a per-organization index in the tenancy store, so the list
// works on both hosts (Redis in the cluster, lmdb embedded) without asking
// every actor. Creation is written before the create call returns. The
// summary after each turn is a cache of the actor's state: it is written
// without holding the turn, coalesced per conversation and flushed every
// 100 ms in one batch, so a turn costs one durable commit (the actor's own)
// and the list lags a turn by at most ~100 ms.
//
// A conversation belongs to the environment of the key that made it: the
// list is per environment (an API key's view). Conversations made before the
// environment index existed are only in the organization's index: they are
// no longer listed, and still read by id by their environment's keys.
import type { IndexPage, DataStore } from "../../core/data-store.ts";
import { deleteDocuments, eraseIndexedDocuments, type IndexedDocuments } from "../../tenancy/organization-erasure.ts";
import { conversationSummarySchema, type ConversationSummary } from "./types.ts";

const summaryKey = (id: string) => `conversation-summary:${id}`;
const flushEveryMs = 100;
const orgIndexKey = (orgId: string) => `org-conversations:${orgId}`;
const environmentIndexKey = (envId: string) => `env-conversations:${envId}`;
const documents: IndexedDocuments = { documentKey: summaryKey, orgIndexKey, environmentIndexKey };

export class ConversationDirectory {
  private readonly store: DataStore;
  private readonly onError: (error: unknown) => void;
  private pending = new Map<string, ConversationSummary>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(store: DataStore, onError: (error: unknown) => void) {
    this.store = store;
    this.onError = onError;
  }

  async created(owner: { organization_id: string; environment_id: string }, summary: ConversationSummary): Promise<void> {
    const score = Date.parse(summary.created_at);
    await this.store.apply([
      { op: "put", key: summaryKey(summary.id), value: summary },
      { op: "index", key: orgIndexKey(owner.organization_id), member: summary.id, score },
      { op: "index", key: environmentIndexKey(owner.environment_id), member: summary.id, score },
    ]);
  }

  /** Fire and forget: the newest summary per conversation is written within ~100 ms; a failure is logged. */
  updated(summary: ConversationSummary): void {
    this.pending.set(summary.id, summary);
    this.timer ??= setTimeout(() => void this.flush(), flushEveryMs);
  }

  /** Writes the pending summaries (also called on shutdown). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    if (batch.length === 0) return this.flushing;
    // Chained, so batches land in order even if one write is slow.
    this.flushing = this.flushing
      .then(() => this.store.apply(batch.map((summary) => ({ op: "put" as const, key: summaryKey(summary.id), value: summary }))))
      .catch(this.onError);
    return this.flushing;
  }

  /** The model a conversation was created with (null: routed, or unknown). */
  async model(id: string): Promise<string | null> {
    const parsed = conversationSummarySchema.safeParse(await this.store.get(summaryKey(id)));
    return parsed.success ? parsed.data.model : null;
  }

  /** The conversations of one environment, newest first. */
  async list(environmentId: string, limit: number, cursor: string | null | undefined): Promise<{ data: ConversationSummary[]; next_cursor: string | null }> {
    const page: IndexPage = await this.store.page(environmentIndexKey(environmentId), limit, cursor);
    const raws = await this.store.getMany(page.members.map(summaryKey));
    const data: ConversationSummary[] = [];
    for (const raw of raws) {
      const parsed = conversationSummarySchema.safeParse(raw);
      if (parsed.success) data.push(parsed.data);
    }
    return { data, next_cursor: page.nextCursor };
  }

  /**
   * Deleting an organization: removes its conversations' documents and index entries
   * (the organization's and each of `environmentIds`'); answers their ids.
   */
  eraseOrganization(organizationId: string, environmentIds: readonly string[]): Promise<string[]> {
    return eraseIndexedDocuments(this.store, documents, organizationId, environmentIds);
  }

  /** Deletes these documents (again after their actors are gone: a turn that was in flight may have re-written one). */
  eraseDocuments(ids: readonly string[]): Promise<void> {
    return deleteDocuments(this.store, documents, ids);
  }
}
