// A project's cache settings (GET/PATCH /v1/projects/{id}/cache), kept in the
// data store and read on the request path from a per-replica copy that is
// trusted for a few seconds, as the key cache trusts its keys: a setting
// changed on one replica is seen here at once and on the others within
// `freshMs`. Most projects never set anything: their absence is cached too.
import { z } from "zod";
import type { Clock } from "../../core/clock.ts";
import type { DataStore } from "../../core/data-store.ts";
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

const settingsKey = (projectId: string): string => `project-cache-settings:${projectId}`;
/** 5 s: a change reaches every replica quickly; a busy project costs one store read per replica per 5 s. */
const freshMs = 5_000;

export class ProjectCacheSettingsStore {
  private readonly store: DataStore;
  private readonly clock: Clock;
  private readonly copies = new Map<string, { settings: ProjectCacheSettings; readMs: number }>();

  constructor(store: DataStore, clock: Clock) {
    this.store = store;
    this.clock = clock;
  }

  /** The project's settings: synchronous while this replica's copy is fresh. */
  settingsOf(projectId: string): ProjectCacheSettings | Promise<ProjectCacheSettings> {
    const copy = this.copies.get(projectId);
    if (copy && this.clock.now() - copy.readMs < freshMs) return copy.settings;
    return this.read(projectId);
  }

  async update(projectId: string, patch: ProjectCachePatch): Promise<ProjectCacheSettings> {
    const current = await this.read(projectId);
    const next = projectCacheSettingsSchema.parse({ ...current, ...patch });
    await this.store.apply([{ op: "put", key: settingsKey(projectId), value: next }]);
    this.copies.set(projectId, { settings: next, readMs: this.clock.now() });
    return next;
  }

  /** Forgets a project's settings (its organization's deletion). */
  async remove(projectIds: readonly string[]): Promise<void> {
    if (projectIds.length === 0) return;
    await this.store.apply(projectIds.map((id) => ({ op: "delete" as const, key: settingsKey(id) })));
    for (const id of projectIds) this.copies.delete(id);
  }

  private async read(projectId: string): Promise<ProjectCacheSettings> {
    const raw = await this.store.get(settingsKey(projectId));
    // Over the defaults: settings stored before a setting existed keep their values and take its default.
    const stored = projectCacheSettingsSchema.safeParse(raw !== null && typeof raw === "object" ? { ...defaultProjectCacheSettings, ...raw } : raw);
    const settings = stored.success ? stored.data : { ...defaultProjectCacheSettings };
    this.copies.set(projectId, { settings, readMs: this.clock.now() });
    // Bounded: a replica serving many projects forgets the oldest copies first.
    if (this.copies.size > 10_000) this.copies.delete(this.copies.keys().next().value ?? "");
    return settings;
  }
}
