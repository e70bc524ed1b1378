// A project's cache settings (GET/PATCH /v1/projects/{id}/cache), kept in the
// data store and read on the request path from a per-replica copy that is
// trusted for a few seconds, as the key cache trusts its keys. A change on
// one replica is broadcast (cache-invalidation.ts) and every replica drops
// its copy at once (`forget`); the copy's 5 s freshness bounds one whose
// message was lost. Most projects never set anything: their absence is
// cached too. The copy, its freshness and the merge over the defaults are
// tenancy/project-settings-documents.ts, shared with the request-log settings.
import { z } from "zod";
import type { Clock } from "../../core/clock.ts";
import type { DataStore } from "../../core/data-store.ts";
import { ProjectSettingsDocuments } from "../../tenancy/project-settings-documents.ts";
import { defaultProjectCacheSettings, type ProjectCacheSettings } from "./types.ts";

// A day's worth of seconds bounds the default; a year bounds the maximum (an answer older than that is stale for any model).
export const projectCacheSettingsSchema = z
  .object({
    enabled: z.boolean(),
    default_ttl_seconds: z.number().int().min(1).max(365 * 24 * 3600),
    max_ttl_seconds: z.number().int().min(1).max(365 * 24 * 3600),
    semantic_enabled: z.boolean(),
    semantic_threshold: z.number().min(0).max(1),
    // A catalogue id; whether it is an embedding model is checked against the catalogue by the route (cache-routes.ts).
    semantic_embedding_model: z.string().min(1).max(200).nullable(),
  })
  .strict();

export const projectCachePatchSchema = projectCacheSettingsSchema.partial().strict();
export type ProjectCachePatch = z.infer<typeof projectCachePatchSchema>;

/** The document GET/PATCH /v1/projects/{id}/cache read and change; `forget` is called on every replica when one announces a change. */
export class ProjectCacheSettingsStore extends ProjectSettingsDocuments<ProjectCacheSettings> {
  constructor(store: DataStore, clock: Clock) {
    super(store, clock, { key: "project-cache-settings", schema: projectCacheSettingsSchema, defaults: defaultProjectCacheSettings });
  }
}
