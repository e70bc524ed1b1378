// A project's request log (docs/operations/request-log.md): session only;
// owners and admins read every key's entries, members only their own keys'
// (tenancy/request-log-access.ts); another organization's project, and an
// entry the caller may not read, are 404. Newest first, cursor-paginated.
// The list carries metadata only; one entry read alone also shows its
// content (prompt and answer) when the project logged it. The project's
// request-log settings (content logging and its retention): any member reads
// them, owners and admins change them.
import { z } from "zod";
import { cursorPattern, type DataStore } from "../../core/data-store.ts";
import { TroupeError } from "../../core/errors.ts";
import { requireRole } from "../../tenancy/access.ts";
import { requestLogReader } from "../../tenancy/request-log-access.ts";
import { entryBody, entryWithContentBody, requestLogEntrySchema, requestLogEntryWithContentSchema } from "../../tenancy/request-log-entry.ts";
import { requestLogSettingsPatchSchema, requestLogSettingsSchema, type RequestLogSettingsStore } from "../../tenancy/request-log-settings.ts";
import type { RequestLogReads } from "../../tenancy/request-log-replicas.ts";
import type { OrganizationService } from "../../tenancy/organizations.ts";
import { formBodyMaxBytes } from "../body-limits.ts";
import { defineRoute, json, routeGroup } from "../route.ts";

const short = z.string().min(1).max(200);

export const requestLogQuery = z
  .object({
    from: z.iso.datetime({ offset: true }).optional().describe("first arrival time, inclusive (ISO 8601)"),
    to: z.iso.datetime({ offset: true }).optional().describe("last arrival time, inclusive (ISO 8601)"),
    api_key_id: short.optional(),
    model: short.optional(),
    provider: short.optional(),
    status: z.coerce.number().int().min(100).max(599).optional().describe("the HTTP status answered"),
    error_code: short.optional().describe("the error code answered (docs/api/errors-and-limits.md)"),
    after: z.string().regex(cursorPattern, "not a cursor this API returned (next_cursor)").optional().describe("next_cursor of the previous page"),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  })
  .strict();
export type RequestLogQuery = z.infer<typeof requestLogQuery>;

const pageSchema = z.object({
  data: z.array(requestLogEntrySchema),
  next_cursor: z.string().nullable().describe("null once the filtered log is read to its end; a page may hold fewer than `limit` entries and still have one (a rare filter combination is read in bounded steps)"),
});

// service_unavailable: with several replicas, one that holds part of the log did not answer (tenancy/request-log-replicas.ts).
const logRoute = routeGroup({ tag: "requests", auth: "session", errors: ["not_found", "service_unavailable"] });
const settingsRoute = routeGroup({ tag: "requests", auth: "session", maxBodyBytes: formBodyMaxBytes, errors: ["not_found", "forbidden"] });

export interface RequestLogRouteDeps {
  store: DataStore;
  orgs: OrganizationService;
  /** This replica's store, or with several replicas every one's. */
  log: RequestLogReads;
  /** Reads the project's settings; an update is seen by every replica at once (gateway/features/request-log.ts). */
  settings: Pick<RequestLogSettingsStore, "settingsOf" | "update">;
}

/** The store's filter from the query (times as epoch ms). */
export function filterOf(q: RequestLogQuery) {
  return {
    fromMs: q.from === undefined ? undefined : Date.parse(q.from),
    toMs: q.to === undefined ? undefined : Date.parse(q.to),
    api_key_id: q.api_key_id,
    model: q.model,
    provider: q.provider,
    status: q.status,
    error_code: q.error_code,
  };
}

export function requestLogRoutes(deps: RequestLogRouteDeps) {
  return [
    defineRoute({
      ...logRoute("get", "/v1/projects/:project_id/requests"),
      summary: "A project's request log, newest first: one entry per API-key call, filtered by time, key, model, provider, status, error code",
      query: requestLogQuery,
      responses: { 200: pageSchema },
      handler: async (ctx) => {
        const reader = await requestLogReader(deps.store, deps.orgs, ctx.auth.userId, ctx.params.project_id);
        const page = await deps.log.page(reader.project.id, { ...filterOf(ctx.query), keyIds: reader.keyIds }, ctx.query.limit, ctx.query.after);
        return json(200, { data: page.entries.map(entryBody), next_cursor: page.nextCursor });
      },
    }),
    defineRoute({
      ...logRoute("get", "/v1/projects/:project_id/requests/:request_id"),
      summary: "One entry of a project's request log, with its prompt and answer when the project logged content",
      responses: { 200: requestLogEntryWithContentSchema },
      handler: async (ctx) => {
        const reader = await requestLogReader(deps.store, deps.orgs, ctx.auth.userId, ctx.params.project_id);
        const entry = await deps.log.get(reader.project.id, ctx.params.request_id);
        if (!entry || (reader.keyIds && !reader.keyIds.has(entry.api_key_id))) throw new TroupeError("not_found", "request not found");
        return json(200, entryWithContentBody(entry));
      },
    }),
    defineRoute({
      ...settingsRoute("get", "/v1/projects/:project_id/request-log"),
      summary: "A project's request-log settings: content logging (off by default) and its retention",
      responses: { 200: requestLogSettingsSchema },
      handler: async (ctx) => {
        const { project } = await deps.orgs.projectFor(ctx.auth.userId, ctx.params.project_id);
        return json(200, await deps.settings.settingsOf(project.id));
      },
    }),
    defineRoute({
      ...settingsRoute("patch", "/v1/projects/:project_id/request-log"),
      summary: "Change a project's request-log settings: turn content logging on or off, set its retention in days (owners and admins)",
      body: requestLogSettingsPatchSchema,
      responses: { 200: requestLogSettingsSchema },
      handler: async (ctx) => {
        const { project, membership } = await deps.orgs.projectFor(ctx.auth.userId, ctx.params.project_id);
        requireRole(membership, "admin", "changing the request-log settings");
        return json(200, await deps.settings.update(project.id, ctx.body));
      },
    }),
  ];
}
