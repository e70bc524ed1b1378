// OpenAI's Conversations API on /openai/v1/conversations
// (docs/guides/conversations-api.md): create (with up to 20 initial items and
// metadata), retrieve, update metadata, delete; and a conversation's items:
// list (cursor pages in either order), create (up to 20), retrieve, delete.
// Stored on actors by store.ts. The scope is `chat` (a Responses call that
// continues a conversation is `chat` too); `agents` stays the scope of
// Troupe's own agent conversations on /v1/agents/conversations.
import { z } from "zod";
import type { ApiKeyRecord } from "../../../../tenancy/types.ts";
import { defineRoute, json } from "../../../route.ts";
import { openAiMount } from "../mount.ts";
import { conversationItemSchema, inputItemsSchema, MAX_ITEMS_PER_CALL, toConversationItem } from "./items.ts";
import { toConversation, type OpenAiConversationStore } from "./store.ts";

/** OpenAI's metadata bounds: 16 pairs, keys up to 64 characters, values up to 512. */
export const metadataSchema = z
  .record(z.string().min(1).max(64, "a metadata key has at most 64 characters"), z.string().max(512, "a metadata value has at most 512 characters"))
  .refine((m) => Object.keys(m).length <= 16, "at most 16 metadata pairs");

const conversationSchema = z.object({ id: z.string(), object: z.literal("conversation"), created_at: z.number().int(), metadata: z.record(z.string(), z.string()) });

const createBody = z.looseObject({
  items: inputItemsSchema.nullish().describe(`initial items, at most ${MAX_ITEMS_PER_CALL}`),
  metadata: metadataSchema.nullish(),
});

const updateBody = z.looseObject({ metadata: metadataSchema.nullable() });

const itemsBody = z.looseObject({ items: inputItemsSchema.min(1) });

// `include` is taken and not needed: a stored item is always answered whole (image URLs, encrypted reasoning…).
const includeFields = { include: z.string().optional(), "include[]": z.string().optional() };

const listQuery = z
  .object({
    after: z.string().optional().describe("an item id: the page starts after it"),
    limit: z.coerce.number().int().min(1).max(100).default(20),
    order: z.enum(["asc", "desc"]).default("desc"),
    ...includeFields,
  })
  .strict();

const includeQuery = z.object(includeFields).strict();

const itemListSchema = z.object({ object: z.literal("list"), data: z.array(conversationItemSchema), first_id: z.string().nullable(), last_id: z.string().nullable(), has_more: z.boolean() });

const ownerOf = (key: ApiKeyRecord) => ({ organization_id: key.organization_id, project_id: key.project_id, environment_id: key.environment_id });
const readerOf = (key: ApiKeyRecord) => ({ organization_id: key.organization_id, environment_id: key.environment_id });

function itemList(data: Record<string, unknown>[], hasMore: boolean) {
  const ids = data.map((i) => String(i["id"]));
  return { object: "list" as const, data, first_id: ids[0] ?? null, last_id: ids.at(-1) ?? null, has_more: hasMore };
}

export function openAiConversationRoutes(deps: { store: OpenAiConversationStore; now: () => number }) {
  const { store } = deps;
  // Their own tag in the document, beside the Responses API's; the mount's credential and error dialect.
  const common = { ...openAiMount, tag: "OpenAI Conversations", scope: "chat" } as const;
  return [
    defineRoute({
      ...common,
      method: "post",
      path: "/openai/v1/conversations",
      summary: "OpenAI-compatible conversation create: a durable conversation (on actors) with up to 20 initial items and metadata",
      body: createBody,
      responses: { 200: conversationSchema },
      errors: ["invalid_request"],
      handler: async (ctx) => {
        const nowMs = deps.now();
        const items = (ctx.body.items ?? []).map((i) => toConversationItem(i, nowMs));
        const created = await store.create(ownerOf(ctx.auth.key), ctx.body.metadata ?? {}, items);
        return json(200, toConversation(created.id, created.head));
      },
    }),
    defineRoute({
      ...common,
      method: "get",
      path: "/openai/v1/conversations/:conversation_id",
      summary: "OpenAI-compatible conversation retrieve",
      responses: { 200: conversationSchema },
      errors: ["not_found"],
      handler: async (ctx) => {
        const id = ctx.params.conversation_id;
        return json(200, toConversation(id, await store.head(id, readerOf(ctx.auth.key))));
      },
    }),
    defineRoute({
      ...common,
      method: "post",
      path: "/openai/v1/conversations/:conversation_id",
      summary: "OpenAI-compatible conversation update: replaces its metadata",
      body: updateBody,
      responses: { 200: conversationSchema },
      errors: ["invalid_request", "not_found"],
      handler: async (ctx) => {
        const id = ctx.params.conversation_id;
        return json(200, toConversation(id, await store.update(id, readerOf(ctx.auth.key), ctx.body.metadata ?? {})));
      },
    }),
    defineRoute({
      ...common,
      method: "delete",
      path: "/openai/v1/conversations/:conversation_id",
      summary: "OpenAI-compatible conversation delete: the conversation and all its items",
      responses: { 200: z.object({ id: z.string(), object: z.literal("conversation.deleted"), deleted: z.literal(true) }) },
      errors: ["not_found"],
      handler: async (ctx) => {
        const id = ctx.params.conversation_id;
        await store.delete(id, readerOf(ctx.auth.key));
        return json(200, { id, object: "conversation.deleted", deleted: true });
      },
    }),
    defineRoute({
      ...common,
      method: "get",
      path: "/openai/v1/conversations/:conversation_id/items",
      summary: "OpenAI-compatible conversation items list: cursor pages (`after`, `limit` 1–100, `order` asc or desc, newest first by default)",
      query: listQuery,
      responses: { 200: itemListSchema },
      errors: ["invalid_request", "not_found"],
      handler: async (ctx) => {
        const { after, limit, order } = ctx.query;
        const page = await store.list(ctx.params.conversation_id, readerOf(ctx.auth.key), { after, limit, order });
        return json(200, itemList(page.items, page.hasMore));
      },
    }),
    defineRoute({
      ...common,
      method: "post",
      path: "/openai/v1/conversations/:conversation_id/items",
      summary: "OpenAI-compatible conversation items create: up to 20 items appended in order",
      query: includeQuery,
      body: itemsBody,
      responses: { 200: itemListSchema },
      errors: ["invalid_request", "not_found"],
      handler: async (ctx) => {
        const nowMs = deps.now();
        const items = ctx.body.items.map((i) => toConversationItem(i, nowMs));
        const appended = await store.append(ctx.params.conversation_id, readerOf(ctx.auth.key), items);
        return json(200, itemList(appended, false));
      },
    }),
    defineRoute({
      ...common,
      method: "get",
      path: "/openai/v1/conversations/:conversation_id/items/:item_id",
      summary: "OpenAI-compatible conversation item retrieve",
      query: includeQuery,
      responses: { 200: conversationItemSchema },
      errors: ["not_found"],
      handler: async (ctx) => json(200, await store.item(ctx.params.conversation_id, readerOf(ctx.auth.key), ctx.params.item_id)),
    }),
    defineRoute({
      ...common,
      method: "delete",
      path: "/openai/v1/conversations/:conversation_id/items/:item_id",
      summary: "OpenAI-compatible conversation item delete: answers the conversation",
      responses: { 200: conversationSchema },
      errors: ["not_found"],
      handler: async (ctx) => {
        const id = ctx.params.conversation_id;
        return json(200, toConversation(id, await store.deleteItem(id, readerOf(ctx.auth.key), ctx.params.item_id)));
      },
    }),
  ];
}
