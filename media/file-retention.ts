// File retention (docs/api/media.md, "Retention"): an organization's files
// are deleted once the day they were stored on is older than its
// `file_retention_days` (else FILE_RETENTION_DAYS; neither set: kept until
// deleted). A sweeper, not a timer per file: everything it needs (the file
// index, the organizations' settings) is in the data store, so a restart
// loses nothing — each replica sweeps at start and then every
// FILE_RETENTION_SWEEP_INTERVAL_MS, and a shared counter lets one replica
// per interval do the work (deleting twice would be harmless, only wasted).
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/log.ts";
import type { DataStore } from "../core/data-store.ts";
import { dayMs, type IndexedFileStore } from "./indexed-file-store.ts";

export interface RetentionSettings {
  /** The default for organizations without their own setting; undefined: keep files. */
  defaultDays: number | undefined;
  sweepIntervalMs: number;
}

/** An organization's own retention: a number of days, null for "the default", undefined when the organization is gone. */
export type ReadRetention = (orgId: string) => Promise<number | null | undefined>;

export class FileRetentionSweeper {
  private readonly files: IndexedFileStore;
  private readonly store: DataStore;
  private readonly retentionOf: ReadRetention;
  private readonly settings: RetentionSettings;
  private readonly clock: Clock;
  private readonly log: Logger;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(deps: { files: IndexedFileStore; store: DataStore; retentionOf: ReadRetention; settings: RetentionSettings; clock: Clock; log: Logger }) {
    this.files = deps.files;
    this.store = deps.store;
    this.retentionOf = deps.retentionOf;
    this.settings = deps.settings;
    this.clock = deps.clock;
    this.log = deps.log;
  }

  start(): void {
    const tick = (): void => {
      void this.sweepIfDue().catch((error: unknown) => this.log.warn("file retention sweep failed", { error }));
    };
    tick();
    this.timer = setInterval(tick, this.settings.sweepIntervalMs);
    this.timer.unref();
  }

  /** One sweep, unless another replica (or this one) took this interval's turn already. */
  async sweepIfDue(): Promise<number> {
    const turn = await this.store.hit("file-retention-sweep", this.settings.sweepIntervalMs);
    if (turn.count > 1) return 0;
    return this.sweep();
  }

  /** Deletes every file past its organization's retention; answers how many. One sweep at a time. */
  sweep(): Promise<number> {
    this.running ??= this.sweepOnce().finally(() => (this.running = undefined));
    return this.running;
  }

  private async sweepOnce(): Promise<number> {
    let deleted = 0;
    const now = this.clock.now();
    for (const orgId of await this.files.organizations()) {
      const own = await this.retentionOf(orgId);
      // No organization record: deleting the organization deletes its files itself; a sweep never guesses.
      if (own === undefined) continue;
      const days = own ?? this.settings.defaultDays;
      if (days === undefined) continue;
      deleted += await this.files.deleteOrganizationFiles(orgId, now - days * dayMs);
    }
    if (deleted > 0) this.log.info("file retention: files deleted", { files: deleted });
    return deleted;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }
}
