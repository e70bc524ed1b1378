// A feature's per-project settings (GET/PATCH /v1/projects/{id}/<feature>):
// one document a project in the data store under `<key>:<project id>`, read
// on the request path from a per-replica copy trusted for `freshMs`, so a busy
// project costs one store read per replica per 5 s. A change is seen on the
// replica that made it at once and on the others when their copy goes stale,
// or at once if the feature broadcasts it and each replica calls `forget`
// (the response cache does, gateway/cache/cache-invalidation.ts). Most
// projects never set anything: their absence is cached too. Each feature
// instantiates it with its schema, key and defaults
// (tenancy/request-log-settings.ts, gateway/cache/project-cache-settings.ts).
import type { z } from "zod";
import type { Clock } from "../core/clock.ts";
import type { DataStore } from "../core/data-store.ts";

/** What makes one feature's settings document. */
export interface ProjectSettingsDocument<T extends object> {
  /** A project's document is stored at `${key}:${projectId}`. */
  key: string;
  /** The whole document (a patch is merged over the current one and must pass it). */
  schema: z.ZodType<T>;
  /** A project that set nothing, or whose stored document no longer passes the schema. */
  defaults: Readonly<T>;
}

/** 5 s: the bound on a copy another replica changed (and, where changes are broadcast, on a lost broadcast). */
const freshMs = 5_000;
/** Bounded: a replica serving many projects forgets the oldest copies first. */
const maxCopies = 10_000;

export class ProjectSettingsDocuments<T extends object> {
  private readonly store: DataStore;
  private readonly clock: Clock;
  private readonly document: ProjectSettingsDocument<T>;
  private readonly copies = new Map<string, { settings: T; readMs: number }>();

  constructor(store: DataStore, clock: Clock, document: ProjectSettingsDocument<T>) {
    this.store = store;
    this.clock = clock;
    this.document = document;
  }

  /** The project's settings: synchronous while this replica's copy is fresh. */
  settingsOf(projectId: string): T | Promise<T> {
    const copy = this.copies.get(projectId);
    if (copy && this.clock.now() - copy.readMs < freshMs) return copy.settings;
    return this.read(projectId);
  }

  /** Merges `patch` over the stored settings (read from the store, not the copy); throws a ZodError if the result fails the schema. */
  async update(projectId: string, patch: Partial<T>): Promise<T> {
    const next = this.document.schema.parse({ ...(await this.read(projectId)), ...patch });
    await this.store.apply([{ op: "put", key: this.keyOf(projectId), value: next }]);
    this.copies.set(projectId, { settings: next, readMs: this.clock.now() });
    return next;
  }

  /** Drops this replica's copies (another replica changed or removed them): the next read goes to the store. */
  forget(projectIds: readonly string[]): void {
    for (const id of projectIds) this.copies.delete(id);
  }

  /** Forgets projects' settings (their organization's deletion). */
  async remove(projectIds: readonly string[]): Promise<void> {
    if (projectIds.length === 0) return;
    await this.store.apply(projectIds.map((id) => ({ op: "delete" as const, key: this.keyOf(id) })));
    this.forget(projectIds);
  }

  private keyOf(projectId: string): string {
    return `${this.document.key}:${projectId}`;
  }

  private async read(projectId: string): Promise<T> {
    const raw = await this.store.get(this.keyOf(projectId));
    // Over the defaults: a document stored before a setting existed keeps its values and takes that setting's default.
    const stored = this.document.schema.safeParse(raw !== null && typeof raw === "object" ? { ...this.document.defaults, ...raw } : raw);
    const settings = stored.success ? stored.data : { ...this.document.defaults };
    this.copies.set(projectId, { settings, readMs: this.clock.now() });
    if (this.copies.size > maxCopies) this.copies.delete(this.copies.keys().next().value ?? "");
    return settings;
  }
}
