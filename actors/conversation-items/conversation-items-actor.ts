// An OpenAI-API conversation (/openai/v1/conversations; docs/decisions.md,
// "Conversations API"): a ConversationItemsActor per `conv_…` id is its
// head — owner, metadata, counters and where the next item goes — and its
// items live in page actors (item-page-actor.ts) with one small ref actor per
// item id (item-ref-actor.ts). Appending N items writes the head, the last
// page (bounded: ITEMS_PER_PAGE items or ~PAGE_BYTES) and N refs, never the
// earlier items, so a conversation of 10,000 items costs an append what one
// of 10 does.
//
// Every write runs in the head's turn (one at a time per conversation), and
// only the head's `next_seq` says which items are committed: a page or a ref
// written by an append whose head did not commit holds a sequence at or past
// `next_seq`, is invisible to reads and is overwritten by the retry.
// Reads (lists, retrieves) run outside the head's turn, bounded by the
// `next_seq` they read from it.
import { z } from "zod";
import { invalidRequest, TroupeError } from "../../core/errors.ts";
import { actorRef, defineActor, type ActorContext } from "../actor.ts";
import { CONVERSATION_ITEM_PAGE_ACTOR, storedItemSchema, type ConversationItemPageActorDefinition, type StoredItem } from "./item-page-actor.ts";
import { CONVERSATION_ITEM_REF_ACTOR, type ConversationItemRefActorDefinition } from "./item-ref-actor.ts";

export const CONVERSATION_ITEMS_ACTOR = "ConversationItemsActor";
const EXPIRE_REMINDER = "expire";
/** A page closes at this many items… */
export const ITEMS_PER_PAGE = 32;
/** …or once it holds this many bytes of items (64 KiB: what an append may rewrite besides its own items). */
export const PAGE_BYTES = 64 * 1024;

export const pageActorId = (conversationId: string, page: number) => `${conversationId}~p${page}`;
export const refActorId = (conversationId: string, itemId: string) => `${conversationId}~i~${itemId}`;

export const ownerSchema = z.object({ organization_id: z.string(), project_id: z.string(), environment_id: z.string() });
export type ConversationOwner = z.infer<typeof ownerSchema>;
export const readerSchema = z.object({ organization_id: z.string(), environment_id: z.string() });
export type ConversationReader = z.infer<typeof readerSchema>;

const metadataSchema = z.record(z.string(), z.string());

export const headSchema = z.object({
  owner: ownerSchema,
  /** Unix seconds, as OpenAI's `created_at`. */
  created_at: z.number().int(),
  metadata: metadataSchema,
  /** The sequence number of the next item; every committed item's is below it. */
  next_seq: z.number().int().min(0),
  item_count: z.number().int().min(0),
  item_bytes: z.number().int().min(0),
  last_page: z.number().int().min(0),
  last_page_count: z.number().int().min(0),
  last_page_bytes: z.number().int().min(0),
  /** Milliseconds since the epoch; past it the conversation is gone (retention counts from the last change). */
  expires_at: z.number().int(),
});
export type ConversationHead = z.infer<typeof headSchema>;

const stateSchema = z.object({ head: headSchema.nullable() });

/** The caller's bounds (configuration), handed in by every writing call. */
const limitsSchema = z.object({ max_items: z.number().int().min(1), max_bytes: z.number().int().min(1), retention_ms: z.number().int().min(1) });
const newItemSchema = storedItemSchema.omit({ seq: true });
export type NewItem = z.infer<typeof newItemSchema>;

const pageActor = actorRef<ConversationItemPageActorDefinition>(CONVERSATION_ITEM_PAGE_ACTOR);
const refActor = actorRef<ConversationItemRefActorDefinition>(CONVERSATION_ITEM_REF_ACTOR);

type Ctx = ActorContext<z.infer<typeof stateSchema>>;

function visible(head: ConversationHead | null, reader: ConversationReader, nowMs: number): ConversationHead | null {
  if (!head || head.expires_at <= nowMs) return null;
  return head.owner.organization_id === reader.organization_id && head.owner.environment_id === reader.environment_id ? head : null;
}

const notFound = (id: string) => new TroupeError("not_found", `Conversation with id '${id}' not found.`, { details: { openai_code: "conversation_not_found", param: "conversation_id" } });

/** Places `items` after the head's last one (pages, then refs) and moves the head on; `field` names the items in a 400. */
async function appendItems(ctx: Ctx, head: ConversationHead, items: readonly NewItem[], limits: z.infer<typeof limitsSchema>, field: string): Promise<StoredItem[]> {
  if (head.item_count + items.length > limits.max_items) {
    throw invalidRequest([{ path: field, message: `a conversation holds at most ${limits.max_items} items (it has ${head.item_count}, ${items.length} more asked)` }]);
  }
  const bytes = items.reduce((sum, i) => sum + i.bytes, 0);
  if (head.item_bytes + bytes > limits.max_bytes) {
    throw invalidRequest([{ path: field, message: `a conversation holds at most ${limits.max_bytes} bytes of items (it has ${head.item_bytes}, ${bytes} more asked)` }]);
  }
  const seen = new Set<string>();
  for (const [i, item] of items.entries()) {
    const ref = seen.has(item.id) ? { seq: 0, page: 0 } : await ctx.call(refActor, refActorId(ctx.id, item.id), "get", {});
    if (ref && ref.seq < head.next_seq) throw invalidRequest([{ path: `${field}[${i}].id`, message: `an item with id '${item.id}' is already in the conversation` }]);
    seen.add(item.id);
  }
  const byPage = new Map<number, StoredItem[]>();
  const stored: { item: StoredItem; page: number }[] = [];
  for (const item of items) {
    if (head.last_page_count >= ITEMS_PER_PAGE || (head.last_page_count > 0 && head.last_page_bytes + item.bytes > PAGE_BYTES)) {
      head.last_page += 1;
      head.last_page_count = 0;
      head.last_page_bytes = 0;
    }
    const placed = { ...item, seq: head.next_seq + stored.length };
    stored.push({ item: placed, page: head.last_page });
    byPage.set(head.last_page, [...(byPage.get(head.last_page) ?? []), placed]);
    head.last_page_count += 1;
    head.last_page_bytes += item.bytes;
  }
  for (const [page, pageItems] of byPage) await ctx.call(pageActor, pageActorId(ctx.id, page), "write", { from_seq: head.next_seq, items: pageItems });
  for (const { item, page } of stored) await ctx.call(refActor, refActorId(ctx.id, item.id), "put", { seq: item.seq, page });
  head.next_seq += stored.length;
  head.item_count += stored.length;
  head.item_bytes += bytes;
  return stored.map((s) => s.item);
}

/** Empties every page and ref of the conversation, then the head (deletion, retention, erasure). */
async function clearAll(ctx: Ctx): Promise<void> {
  const head = ctx.state.head;
  if (!head) return;
  for (let page = 0; page <= head.last_page; page++) {
    const { ids } = await ctx.call(pageActor, pageActorId(ctx.id, page), "clear", {});
    for (const id of ids) await ctx.call(refActor, refActorId(ctx.id, id), "clear", {});
  }
  await ctx.clearReminder(EXPIRE_REMINDER);
  ctx.state = { head: null };
}

async function touch(ctx: Ctx, head: ConversationHead, retentionMs: number): Promise<void> {
  head.expires_at = ctx.clock.now() + retentionMs;
  await ctx.setReminder(EXPIRE_REMINDER, retentionMs, undefined, "expire", {});
}

export function createConversationItemsActor() {
  return defineActor({
    type: CONVERSATION_ITEMS_ACTOR,
    state: stateSchema,
    initialState: () => ({ head: null }),
    methods: {
      create: {
        input: z.object({ owner: ownerSchema, metadata: metadataSchema, items: z.array(newItemSchema), limits: limitsSchema }),
        run: async (ctx, input): Promise<{ head: ConversationHead; items: StoredItem[] }> => {
          if (ctx.state.head) throw new TroupeError("conflict", `conversation ${ctx.id} already exists`);
          const head: ConversationHead = {
            owner: input.owner,
            created_at: Math.floor(ctx.clock.now() / 1000),
            metadata: input.metadata,
            next_seq: 0,
            item_count: 0,
            item_bytes: 0,
            last_page: 0,
            last_page_count: 0,
            last_page_bytes: 0,
            expires_at: 0,
          };
          const items = await appendItems(ctx, head, input.items, input.limits, "items");
          await touch(ctx, head, input.limits.retention_ms);
          ctx.state.head = head;
          return { head, items };
        },
      },
      read: {
        input: readerSchema,
        run: async (ctx, input): Promise<ConversationHead | null> => visible(ctx.state.head, input, ctx.clock.now()),
      },
      update: {
        input: z.object({ reader: readerSchema, metadata: metadataSchema, limits: limitsSchema }),
        run: async (ctx, input): Promise<ConversationHead> => {
          const head = visible(ctx.state.head, input.reader, ctx.clock.now());
          if (!head) throw notFound(ctx.id);
          head.metadata = input.metadata;
          await touch(ctx, head, input.limits.retention_ms);
          return head;
        },
      },
      append: {
        input: z.object({ reader: readerSchema, items: z.array(newItemSchema), limits: limitsSchema, field: z.string() }),
        run: async (ctx, input): Promise<{ head: ConversationHead; items: StoredItem[] }> => {
          const head = visible(ctx.state.head, input.reader, ctx.clock.now());
          if (!head) throw notFound(ctx.id);
          const items = await appendItems(ctx, head, input.items, input.limits, input.field);
          await touch(ctx, head, input.limits.retention_ms);
          return { head, items };
        },
      },
      deleteItem: {
        input: z.object({ reader: readerSchema, item_id: z.string(), limits: limitsSchema }),
        run: async (ctx, input): Promise<{ head: ConversationHead; deleted: boolean }> => {
          const head = visible(ctx.state.head, input.reader, ctx.clock.now());
          if (!head) throw notFound(ctx.id);
          const ref = await ctx.call(refActor, refActorId(ctx.id, input.item_id), "get", {});
          if (!ref || ref.seq >= head.next_seq) return { head, deleted: false };
          const { removed } = await ctx.call(pageActor, pageActorId(ctx.id, ref.page), "remove", { seq: ref.seq });
          await ctx.call(refActor, refActorId(ctx.id, input.item_id), "clear", {});
          if (removed) {
            head.item_count -= 1;
            head.item_bytes -= removed.bytes;
          }
          await touch(ctx, head, input.limits.retention_ms);
          return { head, deleted: removed !== null };
        },
      },
      delete: {
        input: readerSchema,
        run: async (ctx, input): Promise<{ deleted: boolean }> => {
          if (!visible(ctx.state.head, input, ctx.clock.now())) return { deleted: false };
          await clearAll(ctx);
          return { deleted: true };
        },
      },
      /** The organization's erasure: whatever the environment. */
      erase: {
        input: z.object({ organization_id: z.string() }),
        run: async (ctx, input): Promise<{ erased: boolean }> => {
          if (!ctx.state.head || ctx.state.head.owner.organization_id !== input.organization_id) return { erased: false };
          await clearAll(ctx);
          return { erased: true };
        },
      },
      /** Retention: the reminder every change sets again. */
      expire: {
        input: z.object({}),
        run: async (ctx): Promise<{ expired: boolean }> => {
          const head = ctx.state.head;
          if (!head) return { expired: false };
          if (head.expires_at > ctx.clock.now()) {
            await ctx.setReminder(EXPIRE_REMINDER, head.expires_at - ctx.clock.now(), undefined, "expire", {});
            return { expired: false };
          }
          await clearAll(ctx);
          return { expired: true };
        },
      },
    },
  });
}

export type ConversationItemsActorDefinition = ReturnType<typeof createConversationItemsActor>;
