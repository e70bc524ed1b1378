// A project's response-cache settings and its "clear cache" action
// (docs/guides/caching.md; an addition to the spec, docs/decisions.md):
// session only; any member reads, owners and admins change and clear;
// another organization's project is 404. A clear removes the project's exact
// entries and its semantic vectors (the feature's `clearProject`).
import { z } from "zod";
import { invalidRequest } from "../../core/errors.ts";
import type { Catalogue } from "../../providers/catalogue.ts";
import { requireRole } from "../../tenancy/access.ts";
import type { OrganizationService } from "../../tenancy/organizations.ts";
import { formBodyMaxBytes } from "../body-limits.ts";
import { defineRoute, json, routeGroup } from "../route.ts";
import { projectCachePatchSchema, projectCacheSettingsSchema, type ProjectCachePatch } from "./project-cache-settings.ts";
import type { ProjectCacheSettings } from "./types.ts";
import type { ResponseCache } from "./response-cache.ts";

const cacheRoute = routeGroup({ tag: "projects", auth: "session", maxBodyBytes: formBodyMaxBytes, errors: ["not_found", "forbidden"] });
const clearedSchema = z.object({ cleared: z.literal(true), entries: z.number().int().min(0) });

export interface CacheRouteDeps {
  /** Where `semantic_embedding_model` is checked: an embedding model with known dimensions (the vector index needs them). */
  catalogue: Catalogue;
  /** Removes every exact entry and semantic vector of a project, and tells every replica; resolves to the exact entries removed. */
  clearProject(organizationId: string, projectId: string): Promise<number>;
  /** Changes a project's settings and tells every replica (their copies are dropped at once). */
  updateSettings(organizationId: string, projectId: string, patch: ProjectCachePatch): Promise<ProjectCacheSettings>;
}

/** A 400 naming the field unless `model` is null or an embedding model of the catalogue with known dimensions. */
function checkEmbeddingModel(catalogue: Catalogue, model: string | null | undefined): void {
  if (model === null || model === undefined) return;
  const entry = catalogue.get(model);
  if (!entry || entry.category !== "embedding" || !entry.capabilities.dimensions) {
    throw invalidRequest([{ path: "body.semantic_embedding_model", message: `${model} is not an embedding model of the catalogue (GET /v1/models?category=embedding), or null for the default` }]);
  }
}

export function cacheRoutes(orgs: OrganizationService, cache: ResponseCache, deps: CacheRouteDeps) {
  return [
    defineRoute({
      ...cacheRoute("get", "/v1/projects/:project_id/cache"),
      summary: "A project's response-cache settings (off by default)",
      responses: { 200: projectCacheSettingsSchema },
      handler: async (ctx) => {
        await orgs.projectFor(ctx.auth.userId, ctx.params.project_id);
        return json(200, await cache.settings.settingsOf(ctx.params.project_id));
      },
    }),
    defineRoute({
      ...cacheRoute("patch", "/v1/projects/:project_id/cache"),
      summary: "Change a project's response-cache settings: on/off, default and maximum TTL, semantic matching, threshold and embedding model (owners and admins)",
      body: projectCachePatchSchema,
      responses: { 200: projectCacheSettingsSchema },
      handler: async (ctx) => {
        const { project, membership } = await orgs.projectFor(ctx.auth.userId, ctx.params.project_id);
        requireRole(membership, "admin", "changing the cache settings");
        checkEmbeddingModel(deps.catalogue, ctx.body.semantic_embedding_model);
        return json(200, await deps.updateSettings(project.organization_id, project.id, ctx.body));
      },
    }),
    defineRoute({
      ...cacheRoute("post", "/v1/projects/:project_id/cache/clear"),
      summary: "Remove every cached answer and semantic vector of a project, in every environment (owners and admins)",
      responses: { 200: clearedSchema },
      handler: async (ctx) => {
        const { project, membership } = await orgs.projectFor(ctx.auth.userId, ctx.params.project_id);
        requireRole(membership, "admin", "clearing the cache");
        const entries = await deps.clearProject(project.organization_id, project.id);
        return json(200, { cleared: true as const, entries });
      },
    }),
  ];
}
