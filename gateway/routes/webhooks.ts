// Webhooks (docs/api/webhooks.md): each webhook is a
// WebhookActor; the organization's list lives in the WebhookDirectory.
// Managed by the organization's owners and admins (a session; a member's is
// 403 forbidden) or by an unscoped API key (empty scope list: every
// category; a key limited to some is 403 insufficient_scope). A webhook made
// with a session receives the organization's events and is seen by its
// sessions only; one made with a key receives its key's environment's
// events and is seen by that environment's keys (and the sessions). A
// session's user may be in several organizations: it names one with
// `?organization_id=`, else it acts for the first organization the user
// joined. Another organization's webhook or delivery answers 404.
import { z } from "zod";
import { invalidRequest, TroupeError, type ErrorCode } from "../../core/errors.ts";
import { prefixedId } from "../../core/ids.ts";
import { callActor, type ActorHost } from "../../actors/host.ts";
import type { DeliveryWatcher } from "../../actors/webhooks/delivery-events.ts";
import { subscribableEvents } from "../../actors/webhooks/events.ts";
import { deliverySchema, webhookSchema, type Delivery, type EventPayload } from "../../actors/webhooks/types.ts";
import type { WebhookActorDefinition } from "../../actors/webhooks/webhook-actor.ts";
import type { WebhookDirectory } from "../../actors/webhooks/directory.ts";
import { newWebhookSecret } from "../../actors/webhooks/signing.ts";
import type { Clock } from "../../core/clock.ts";
import { isoTime } from "../../core/clock.ts";
import { decodeCursor, encodeCursor } from "../../core/data-store.ts";
import type { AccountService } from "../../tenancy/accounts.ts";
import { isOutboundFetchError, type OutboundFetcher } from "../../media/outbound-fetch.ts";
import { roleAtLeast } from "../../tenancy/access.ts";
import type { ApiKeyAuth, SessionAuth } from "../auth-context.ts";
import { formBodyMaxBytes } from "../body-limits.ts";
import { defineRoute, json } from "../route.ts";
import { listOf, pageQuery } from "../schemas.ts";

export interface WebhookRouteDeps {
  actors: ActorHost;
  webhook: WebhookActorDefinition;
  directory: WebhookDirectory;
  accounts: AccountService;
  fetcher: OutboundFetcher;
  clock: Clock;
  /** Where the test and retry routes hear their attempt's outcome. */
  deliveries: DeliveryWatcher;
  /** WEBHOOK_TIMEOUT_MS: how long the test and retry routes wait for their attempt's outcome. */
  timeoutMs: number;
}

const ulidBody = "[0-9A-HJKMNP-TV-Z]{26}";
const webhookIdPattern = new RegExp(`^whk_${ulidBody}$`);
const deliveryIdPattern = new RegExp(`^dlv_${ulidBody}$`);
const orgIdField = z
  .string()
  .regex(new RegExp(`^org_${ulidBody}$`), "an organization id (org_…)")
  .optional()
  .describe("With a session: the organization whose webhooks these are (default: the first one you joined). With an API key: optional, must be the key's.");
const orgQuery = z.object({ organization_id: orgIdField }).strict();
const listQuery = pageQuery.extend({ organization_id: orgIdField }).strict();

const createBody = z
  .object({
    url: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).max(2048),
    events: z
      .array(z.enum(subscribableEvents, { error: `must be one of ${subscribableEvents.join(", ")}` }))
      .min(1, "subscribe to at least one event kind")
      .max(subscribableEvents.length)
      .refine((events) => new Set(events).size === events.length, "each event kind at most once")
      .meta({ uniqueItems: true }),
  })
  .strict();

const createdSchema = z.object({ webhook: webhookSchema, secret: z.string().describe("whsec_…: shown only now; signs every delivery") });

function webhookId(id: string): string {
  if (!webhookIdPattern.test(id)) throw new TroupeError("not_found", "webhook not found");
  return id;
}

function deliveryId(id: string): string {
  if (!deliveryIdPattern.test(id)) throw new TroupeError("not_found", "delivery not found");
  return id;
}

/** Who calls: the organization, and for an API key its environment (null for a session: the whole organization). */
type Caller = { organization_id: string; environment_id: string | null };
/** What every route's context has that names the caller. */
type CallerContext = { auth: SessionAuth | ApiKeyAuth; query: { organization_id?: string | undefined } };

export function webhookRoutes(deps: WebhookRouteDeps) {
  const { actors, webhook } = deps;

  /**
   * Who the call acts as: the organization (the key's, or the session
   * user's named or first one, where the user must be an owner or admin)
   * and, for a key, its environment (null for a session: the whole
   * organization). The key's scopes were checked by admission (`scope: "all"`).
   */
  const callerOf = async (ctx: CallerContext): Promise<Caller> => {
    const { auth } = ctx;
    const named = ctx.query.organization_id;
    if (auth.kind === "api_key") {
      if (named !== undefined && named !== auth.key.organization_id) throw new TroupeError("not_found", "organization not found");
      return { organization_id: auth.key.organization_id, environment_id: auth.key.environment_id };
    }
    const { memberships } = await deps.accounts.account(auth.userId);
    // Unnamed: the first organization the user joined (the one signup made); memberships are listed newest first.
    const membership = named === undefined ? memberships.at(-1) : memberships.find((m) => m.organization.id === named);
    if (!membership) throw new TroupeError("not_found", "organization not found");
    if (!roleAtLeast(membership.role, "admin")) throw new TroupeError("forbidden", `managing webhooks requires the admin role or higher; you are ${membership.role}`);
    return { organization_id: membership.organization.id, environment_id: null };
  };

  /**
   * The test and retry routes: `start` has the actor send an attempt (it
   * answers the attempt's pending record); the answer is that attempt's
   * record once its outcome is announced, or the pending record when the
   * receiver's deadline (plus a second to report) passes first.
   */
  const sendNow = async (ctx: CallerContext & { params: { webhook_id: string } }, start: (id: string, caller: Caller) => Promise<Delivery>) => {
    const caller = await callerOf(ctx);
    const id = webhookId(ctx.params.webhook_id);
    // Watching before the call: an outcome announced before it returns is not missed.
    const watch = deps.deliveries.watch(id);
    try {
      const queued = await start(id, caller);
      if (queued.status !== "pending") return json(200, queued); // a retry of an attempt that has its outcome already
      return json(200, (await watch.outcome(queued.id, deps.timeoutMs + 1000)) ?? queued);
    } finally {
      watch.close();
    }
  };

  /** GET and DELETE of one webhook: an actor method that takes only the organization, answered as it returns. */
  const webhookMethod = (method: "get" | "deactivate") => async (ctx: CallerContext & { params: { webhook_id: string } }) =>
    json(200, await callActor(actors, webhook, webhookId(ctx.params.webhook_id), method, await callerOf(ctx)));

  // scope "all": a key must grant every category (its scope list is empty). A body is at most a URL and a few event names.
  const common = { tag: "webhooks", auth: "any" as const, scope: "all" as const, maxBodyBytes: formBodyMaxBytes };
  /** What the two lists (webhooks, deliveries) share: a GET of one page, newest first. */
  const onePage = { ...common, method: "get" as const, query: listQuery, errors: ["not_found", "forbidden"] satisfies ErrorCode[] };
  /** What one webhook's GET and DELETE share. */
  const oneWebhook = { ...common, path: "/v1/webhooks/:webhook_id" as const, query: orgQuery, responses: { 200: webhookSchema }, errors: ["not_found", "forbidden"] satisfies ErrorCode[] };
  /** What the test and retry routes share: a POST answered with the attempt's delivery record (sendNow). */
  const sendsNow = { ...common, method: "post" as const, query: orgQuery, responses: { 200: deliverySchema }, errors: ["not_found", "conflict", "forbidden"] satisfies ErrorCode[] };
  return [
    defineRoute({
      ...common,
      method: "post",
      path: "/v1/webhooks",
      summary: "Register a URL to receive the organization's events (with a session) or the key's environment's (with an API key); the secret is shown only now",
      query: orgQuery,
      body: createBody,
      responses: { 201: createdSchema },
      // quota_exceeded: WEBHOOK_ENDPOINTS_PER_ORGANIZATION active webhooks reached.
      errors: ["not_found", "forbidden", "quota_exceeded"],
      handler: async (ctx) => {
        const caller = await callerOf(ctx);
        try {
          await deps.fetcher.checkUrl(ctx.body.url);
        } catch (error) {
          if (isOutboundFetchError(error)) throw invalidRequest([{ path: "body.url", message: error.message }]);
          throw error;
        }
        const secret = newWebhookSecret();
        const { key } = ctx.auth.kind === "api_key" ? ctx.auth : { key: undefined };
        const created = await callActor(actors, webhook, prefixedId("whk", deps.clock.now()), "create", {
          ...caller,
          url: ctx.body.url,
          events: ctx.body.events,
          secret,
          audience: key ? { environment_id: key.environment_id, project_id: key.project_id, live: key.live } : null,
        });
        return json(201, { webhook: created, secret });
      },
    }),
    defineRoute({
      ...onePage,
      path: "/v1/webhooks",
      summary: "The organization's webhooks (a session), or those made by the key's environment (an API key), newest first",
      responses: { 200: listOf(webhookSchema) },
      handler: async (ctx) => {
        const caller = await callerOf(ctx);
        return json(200, await deps.directory.list(caller.organization_id, ctx.query.limit, ctx.query.cursor, caller.environment_id));
      },
    }),
    defineRoute({ ...oneWebhook, method: "get", summary: "One webhook, with the reason when it was disabled", handler: webhookMethod("get") }),
    defineRoute({
      ...oneWebhook,
      method: "delete",
      summary: "Deactivate a webhook: status inactive, pending retries cancelled, no further deliveries",
      handler: webhookMethod("deactivate"),
    }),
    defineRoute({
      ...onePage,
      path: "/v1/webhooks/:webhook_id/deliveries",
      summary: "Delivery history: one record per attempt, newest first",
      responses: { 200: listOf(deliverySchema) },
      handler: async (ctx) => {
        const caller = await callerOf(ctx);
        const after = ctx.query.cursor ? (decodeCursor(ctx.query.cursor)?.member ?? null) : null;
        const page = await callActor(actors, webhook, webhookId(ctx.params.webhook_id), "deliveries", {
          ...caller,
          limit: ctx.query.limit,
          cursor: after,
        });
        return json(200, { data: page.data, next_cursor: page.next_cursor === null ? null : encodeCursor(0, page.next_cursor) });
      },
    }),
    defineRoute({
      ...sendsNow,
      path: "/v1/webhooks/:webhook_id/test",
      summary: "Send a signed webhook.test event now; answers with the attempt's delivery record",
      handler: (ctx) =>
        sendNow(ctx, (id, caller) => {
          const now = deps.clock.now();
          const event: EventPayload = { id: prefixedId("evt", now), type: "webhook.test", created_at: isoTime(now), data: { webhook_id: id } };
          return callActor(actors, webhook, id, "test", { ...caller, event });
        }),
    }),
    defineRoute({
      ...sendsNow,
      path: "/v1/webhooks/:webhook_id/deliveries/:delivery_id/retry",
      summary: "Send that delivery's event again now (same event id); answers with the new attempt's record",
      handler: (ctx) => sendNow(ctx, (id, caller) => callActor(actors, webhook, id, "retry", { ...caller, delivery_id: deliveryId(ctx.params.delivery_id) })),
    }),
  ];
}
