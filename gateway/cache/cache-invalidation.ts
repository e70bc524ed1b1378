// How a change to a project's cache on one replica reaches the others'
// memory (docs/guides/caching.md, "What each replica keeps"). The entries
// themselves live in the shared store (Redis in distributed mode), so a clear
// or an organization's deletion empties them for every replica at once; what
// stays per replica is its copy of the projects' settings
// (project-cache-settings.ts), its answers still being written
// (response-cache.ts) and, without Elasticsearch, its own semantic vector
// index (the message names the cleared vector scopes). Each change is published on the data store's channel
// (Redis pub/sub; in embedded mode the one process hears itself) before the
// route answers, and every replica, the sender too, drops those copies and
// deletes those writes once they land. A lost message is bounded by the
// settings copy's 5 s freshness.
import { z } from "zod";
import type { DataStore } from "../../core/data-store.ts";
import type { Logger } from "../../core/log.ts";

export const cacheChangedChannel = "response-cache:changed";

const cacheChangeSchema = z.object({
  organization_id: z.string(),
  project_ids: z.array(z.string()),
  /** settings: only settings changed; project: the projects' entries were cleared; organization: the organization was deleted. */
  scope: z.enum(["settings", "project", "organization"]),
  /** The cleared (project, model) vector scopes: a replica whose vector index is its own deletes them there too. */
  vectors: z.array(z.object({ project_id: z.string(), model: z.string() })).default([]),
});
export type CacheChange = z.infer<typeof cacheChangeSchema>;
export type CacheChangeAnnounced = z.input<typeof cacheChangeSchema>;

export class CacheInvalidation {
  private readonly store: DataStore;
  private readonly log: Logger;
  private handler: ((message: string) => void) | undefined;

  constructor(store: DataStore, log: Logger) {
    this.store = store;
    this.log = log;
  }

  /** Tells every replica (this one too, through its subscription); a failed broadcast is logged, the settings' freshness bounds it. */
  async announce(change: CacheChangeAnnounced): Promise<void> {
    await this.store.publish(cacheChangedChannel, JSON.stringify(change)).catch((error: unknown) => this.log.warn("response cache: the change broadcast failed", { error: String(error) }));
  }

  /** Resolves once subscribed: every change announced after that reaches `onChange`. */
  async start(onChange: (change: CacheChange) => void): Promise<void> {
    this.handler = (message) => {
      let body: unknown;
      try {
        body = JSON.parse(message);
      } catch {
        body = undefined;
      }
      const parsed = cacheChangeSchema.safeParse(body);
      if (!parsed.success) return this.log.warn("response cache: a malformed change message was ignored", { message });
      onChange(parsed.data);
    };
    await this.store.subscribe(cacheChangedChannel, this.handler);
  }

  async stop(): Promise<void> {
    if (this.handler) await this.store.unsubscribe(cacheChangedChannel, this.handler).catch(() => undefined);
    this.handler = undefined;
  }
}
