// The OpenAI-API conversations of every organization: writes go through the
// conversation's head actor (ConversationItemsActor, one turn at a time),
// reads walk its pages outside the head's turn, bounded by the `next_seq`
// read from it (docs/decisions.md, "Conversations API"). Each conversation's
// id is also in a per-organization index of the data store, written before
// the actor, so deleting the organization finds every one.
import { invalidRequest, isTroupeError, TroupeError } from "../../../../core/errors.ts";
import { indexMembers, type DataStore } from "../../../../core/data-store.ts";
import { prefixedId } from "../../../../core/ids.ts";
import { actorRef } from "../../../../actors/actor.ts";
import { callActor, type ActorHost } from "../../../../actors/host.ts";
import {
  CONVERSATION_ITEMS_ACTOR,
  pageActorId,
  refActorId,
  type ConversationHead,
  type ConversationItemsActorDefinition,
  type ConversationOwner,
  type ConversationReader,
} from "../../../../actors/conversation-items/conversation-items-actor.ts";
import { CONVERSATION_ITEM_PAGE_ACTOR, type ConversationItemPageActorDefinition, type StoredItem } from "../../../../actors/conversation-items/item-page-actor.ts";
import { CONVERSATION_ITEM_REF_ACTOR, type ConversationItemRefActorDefinition } from "../../../../actors/conversation-items/item-ref-actor.ts";
import { itemBytes, type ConversationItem } from "./items.ts";

export interface ConversationLimits {
  /** Items one conversation holds at most; an append past it is 400. */
  maxItems: number;
  /** Bytes (JSON, UTF-8) of one conversation's items at most; an append past it is 400. */
  maxBytes: number;
  /** A conversation is gone this long after its last change. */
  retentionMs: number;
}

const orgIndexKey = (orgId: string) => `org-openai-conversations:${orgId}`;
const headActor = actorRef<ConversationItemsActorDefinition>(CONVERSATION_ITEMS_ACTOR);
const pageActor = actorRef<ConversationItemPageActorDefinition>(CONVERSATION_ITEM_PAGE_ACTOR);
const refActor = actorRef<ConversationItemRefActorDefinition>(CONVERSATION_ITEM_REF_ACTOR);

export const conversationIdPattern = /^conv_[A-Za-z0-9]{10,64}$/;

export function conversationNotFound(id: string): TroupeError {
  return new TroupeError("not_found", `Conversation with id '${id}' not found.`, { details: { openai_code: "conversation_not_found", param: "conversation_id" } });
}

export function itemNotFound(id: string): TroupeError {
  return new TroupeError("not_found", `Item with id '${id}' not found.`, { details: { openai_code: "item_not_found", param: "item_id" } });
}

export interface ItemPage {
  items: ConversationItem[];
  hasMore: boolean;
}

export class OpenAiConversationStore {
  private readonly actors: ActorHost;
  private readonly data: DataStore;
  readonly limits: ConversationLimits;
  private readonly now: () => number;

  constructor(deps: { actors: ActorHost; data: DataStore; limits: ConversationLimits; now: () => number }) {
    this.actors = deps.actors;
    this.data = deps.data;
    this.limits = deps.limits;
    this.now = deps.now;
  }

  private actorLimits() {
    return { max_items: this.limits.maxItems, max_bytes: this.limits.maxBytes, retention_ms: this.limits.retentionMs };
  }

  async create(owner: ConversationOwner, metadata: Record<string, string>, items: ConversationItem[]): Promise<{ id: string; head: ConversationHead; items: ConversationItem[] }> {
    const nowMs = this.now();
    const id = prefixedId("conv", nowMs).toLowerCase();
    await this.data.apply([{ op: "index", key: orgIndexKey(owner.organization_id), member: id, score: nowMs }]);
    const created = await callActor(this.actors, headActor, id, "create", { owner, metadata, items: items.map(newItem), limits: this.actorLimits() }).catch(async (error: unknown) => {
      // Refused (its initial items past the bounds) or failed: nothing was made, so nothing stays listed.
      await this.data.apply([{ op: "unindex", key: orgIndexKey(owner.organization_id), member: id }]);
      throw error;
    });
    return { id, head: created.head, items: created.items.map(itemOf) };
  }

  /** The head of a conversation the reader may see, else 404 (another organization's or environment's is unknown). */
  async head(id: string, reader: ConversationReader): Promise<ConversationHead> {
    if (!conversationIdPattern.test(id)) throw conversationNotFound(id);
    const head = await callActor(this.actors, headActor, id, "read", reader);
    if (!head) throw conversationNotFound(id);
    return head;
  }

  async update(id: string, reader: ConversationReader, metadata: Record<string, string>): Promise<ConversationHead> {
    await this.head(id, reader);
    return callActor(this.actors, headActor, id, "update", { reader, metadata, limits: this.actorLimits() });
  }

  /** Appends items after the conversation's last; `field` names them in a 400 (the request's field). */
  async append(id: string, reader: ConversationReader, items: ConversationItem[], field = "items"): Promise<ConversationItem[]> {
    await this.head(id, reader);
    const appended = await callActor(this.actors, headActor, id, "append", { reader, items: items.map(newItem), limits: this.actorLimits(), field });
    return appended.items.map(itemOf);
  }

  async delete(id: string, reader: ConversationReader): Promise<void> {
    await this.head(id, reader);
    const { deleted } = await callActor(this.actors, headActor, id, "delete", reader);
    if (!deleted) throw conversationNotFound(id);
    await this.data.apply([{ op: "unindex", key: orgIndexKey(reader.organization_id), member: id }]);
  }

  async item(id: string, reader: ConversationReader, itemId: string): Promise<ConversationItem> {
    const head = await this.head(id, reader);
    const stored = await this.storedItem(id, head, itemId);
    if (!stored) throw itemNotFound(itemId);
    return itemOf(stored);
  }

  /** Deletes one item; answers the conversation's head afterwards. */
  async deleteItem(id: string, reader: ConversationReader, itemId: string): Promise<ConversationHead> {
    await this.head(id, reader);
    const { head, deleted } = await callActor(this.actors, headActor, id, "deleteItem", { reader, item_id: itemId, limits: this.actorLimits() });
    if (!deleted) throw itemNotFound(itemId);
    return head;
  }

  /** A page of items in `order`, starting after the item `after` (404 when it is not in the conversation). */
  async list(id: string, reader: ConversationReader, opts: { after?: string | undefined; limit: number; order: "asc" | "desc" }): Promise<ItemPage> {
    const head = await this.head(id, reader);
    const step = opts.order === "asc" ? 1 : -1;
    let page = opts.order === "asc" ? 0 : head.last_page;
    let past = (_: StoredItem) => true;
    if (opts.after !== undefined) {
      const ref = await callActor(this.actors, refActor, refActorId(id, opts.after), "get", {});
      if (!ref || ref.seq >= head.next_seq) throw itemNotFound(opts.after);
      page = ref.page;
      const afterSeq = ref.seq;
      past = (item) => (step === 1 ? item.seq > afterSeq : item.seq < afterSeq);
    }
    const found: StoredItem[] = [];
    // One more than the limit says whether there is more.
    for (; page >= 0 && page <= head.last_page && found.length <= opts.limit; page += step) {
      const items = await callActor(this.actors, pageActor, pageActorId(id, page), "read", { below_seq: head.next_seq });
      const ordered = step === 1 ? items : [...items].reverse();
      for (const item of ordered) if (past(item)) found.push(item);
    }
    return { items: found.slice(0, opts.limit).map(itemOf), hasMore: found.length > opts.limit };
  }

  /**
   * Every item in order (the history a response created with `conversation`
   * continues). A conversation already at its bounds is a 400 naming `field`
   * here, before the response's provider call, rather than after it when its
   * items are appended.
   */
  async allItems(id: string, reader: ConversationReader, field = "conversation"): Promise<ConversationItem[]> {
    const head = await this.head(id, reader);
    if (head.item_count >= this.limits.maxItems || head.item_bytes >= this.limits.maxBytes) {
      throw invalidRequest([{ path: field, message: `the conversation is full: at most ${this.limits.maxItems} items and ${this.limits.maxBytes} bytes of items; delete items to continue it` }]);
    }
    const out: ConversationItem[] = [];
    for (let page = 0; page <= head.last_page; page++) {
      for (const item of await callActor(this.actors, pageActor, pageActorId(id, page), "read", { below_seq: head.next_seq })) out.push(itemOf(item));
    }
    return out;
  }

  private async storedItem(id: string, head: ConversationHead, itemId: string): Promise<StoredItem | undefined> {
    if (!/^[A-Za-z0-9_-]{1,128}$/.test(itemId)) return undefined;
    const ref = await callActor(this.actors, refActor, refActorId(id, itemId), "get", {});
    if (!ref || ref.seq >= head.next_seq) return undefined;
    const items = await callActor(this.actors, pageActor, pageActorId(id, ref.page), "read", { below_seq: head.next_seq });
    return items.find((i) => i.seq === ref.seq);
  }

  /** Deleting an organization: every conversation it has, whatever the environment, with its pages and refs. */
  async eraseOrganization(orgId: string): Promise<number> {
    const ids = await indexMembers(this.data, orgIndexKey(orgId));
    for (const id of ids) {
      await callActor(this.actors, headActor, id, "erase", { organization_id: orgId }).catch((error: unknown) => {
        if (!(isTroupeError(error) && error.code === "not_found")) throw error;
      });
    }
    if (ids.length > 0) await this.data.apply(ids.map((member) => ({ op: "unindex" as const, key: orgIndexKey(orgId), member })));
    return ids.length;
  }
}

function newItem(item: ConversationItem) {
  return { id: item.id, bytes: itemBytes(item), item };
}

function itemOf(stored: StoredItem): ConversationItem {
  return { ...stored.item, id: stored.id, type: String(stored.item["type"]) };
}

/** The conversation object OpenAI answers. */
export function toConversation(id: string, head: ConversationHead) {
  return { id, object: "conversation" as const, created_at: head.created_at, metadata: head.metadata };
}
