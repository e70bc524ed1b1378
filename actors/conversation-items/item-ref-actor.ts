// Where one item of an OpenAI-API conversation is: a ConversationItemRefActor
// per `<conv_id>~i~<item_id>` holds the item's sequence number and page, so a
// retrieve, a delete or a list `after` an item reads one small actor and one
// page instead of scanning the pages (docs/decisions.md, "Conversations API").
// A ref whose sequence is at or past its head's `next_seq` was left by an
// append that did not commit: it counts as absent and is overwritten.
import { z } from "zod";
import { defineActor } from "../actor.ts";

export const CONVERSATION_ITEM_REF_ACTOR = "ConversationItemRefActor";

export const itemRefSchema = z.object({ seq: z.number().int().min(0), page: z.number().int().min(0) });
export type ItemRef = z.infer<typeof itemRefSchema>;

const stateSchema = z.object({ ref: itemRefSchema.nullable() });

export function createConversationItemRefActor() {
  return defineActor({
    type: CONVERSATION_ITEM_REF_ACTOR,
    state: stateSchema,
    initialState: () => ({ ref: null }),
    methods: {
      put: {
        input: itemRefSchema,
        run: async (ctx, input): Promise<ItemRef> => (ctx.state.ref = input),
      },
      get: {
        input: z.object({}),
        run: async (ctx): Promise<ItemRef | null> => ctx.state.ref,
      },
      clear: {
        input: z.object({}),
        run: async (ctx): Promise<{ cleared: boolean }> => {
          const cleared = ctx.state.ref !== null;
          ctx.state = { ref: null };
          return { cleared };
        },
      },
    },
  });
}

export type ConversationItemRefActorDefinition = ReturnType<typeof createConversationItemRefActor>;
