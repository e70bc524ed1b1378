// One page of an OpenAI-API conversation's items (docs/decisions.md,
// "Conversations API"): a ConversationItemPageActor per `<conv_id>~p<n>`
// holds up to ITEMS_PER_PAGE items (or ~PAGE_BYTES of them) with their
// sequence numbers. Only the conversation's last page is ever appended to,
// so an append rewrites one bounded page and never the earlier items.
//
// The page never decides what is committed: its conversation's head does
// (`next_seq`). A write first drops the items at or past `from_seq` (what a
// failed earlier attempt of the same append left behind), so a retried
// append leaves one copy.
import { z } from "zod";
import { defineActor } from "../actor.ts";

export const CONVERSATION_ITEM_PAGE_ACTOR = "ConversationItemPageActor";

/** An item as the Conversations API shows it (message, function_call, …): the gateway's schemas check its shape. */
export const storedItemSchema = z.object({ seq: z.number().int().min(0), id: z.string(), bytes: z.number().int().min(0), item: z.record(z.string(), z.unknown()) });
export type StoredItem = z.infer<typeof storedItemSchema>;

const stateSchema = z.object({ items: z.array(storedItemSchema) });

export function createConversationItemPageActor() {
  return defineActor({
    type: CONVERSATION_ITEM_PAGE_ACTOR,
    state: stateSchema,
    initialState: () => ({ items: [] }),
    methods: {
      write: {
        input: z.object({ from_seq: z.number().int().min(0), items: z.array(storedItemSchema) }),
        run: async (ctx, input): Promise<{ count: number }> => {
          ctx.state.items = [...ctx.state.items.filter((i) => i.seq < input.from_seq), ...input.items];
          return { count: ctx.state.items.length };
        },
      },
      /** The committed items (sequence below `below_seq`), in order. */
      read: {
        input: z.object({ below_seq: z.number().int().min(0) }),
        run: async (ctx, input): Promise<StoredItem[]> => ctx.state.items.filter((i) => i.seq < input.below_seq),
      },
      remove: {
        input: z.object({ seq: z.number().int().min(0) }),
        run: async (ctx, input): Promise<{ removed: StoredItem | null }> => {
          const removed = ctx.state.items.find((i) => i.seq === input.seq) ?? null;
          if (removed) ctx.state.items = ctx.state.items.filter((i) => i.seq !== input.seq);
          return { removed };
        },
      },
      /** The conversation's deletion, retention or erasure: the page is emptied (both hosts then delete its state); answers the ids it held. */
      clear: {
        input: z.object({}),
        run: async (ctx): Promise<{ ids: string[] }> => {
          const ids = ctx.state.items.map((i) => i.id);
          ctx.state = { items: [] };
          return { ids };
        },
      },
    },
  });
}

export type ConversationItemPageActorDefinition = ReturnType<typeof createConversationItemPageActor>;
