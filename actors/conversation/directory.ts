// Which conversations an organization has, for GET /v1/agents/conversations:
// summaries and a per-organization index in the tenancy store, so the list
// works on both hosts (Redis in the cluster, lmdb embedded) without asking
// every actor. Creation is written before the create call returns; the
// summary after each turn is written without holding the turn (it is a
// cache of the actor's state, in issue order), so a turn costs one durable
// commit, the actor's own.
import type { IndexPage, TenancyStore } from "../../tenancy/store.ts";
import { conversationSummarySchema, type ConversationSummary } from "./types.ts";

const summaryKey = (id: string) => `conversation-summary:${id}`;
const orgIndexKey = (orgId: string) => `org-conversations:${orgId}`;

export class ConversationDirectory {
  private readonly store: TenancyStore;
  private readonly onError: (error: unknown) => void;

  constructor(store: TenancyStore, onError: (error: unknown) => void) {
    this.store = store;
    this.onError = onError;
  }

  async created(organizationId: string, summary: ConversationSummary): Promise<void> {
    await this.store.apply([
      { op: "put", key: summaryKey(summary.id), value: summary },
      { op: "index", key: orgIndexKey(organizationId), member: summary.id, score: Date.parse(summary.created_at) },
    ]);
  }

  /** Fire and forget: the list catches up within milliseconds; a failure is logged. */
  updated(summary: ConversationSummary): void {
    this.store.apply([{ op: "put", key: summaryKey(summary.id), value: summary }]).catch(this.onError);
  }

  async list(organizationId: string, limit: number, cursor: string | null | undefined): Promise<{ data: ConversationSummary[]; next_cursor: string | null }> {
    const page: IndexPage = await this.store.page(orgIndexKey(organizationId), limit, cursor);
    const raws = await this.store.getMany(page.members.map(summaryKey));
    const data: ConversationSummary[] = [];
    for (const raw of raws) {
      const parsed = conversationSummarySchema.safeParse(raw);
      if (parsed.success) data.push(parsed.data);
    }
    return { data, next_cursor: page.nextCursor };
  }
}
