// Which batches an environment has (listing, newest first) and an
// organization has (deletion), in the data store; the batches themselves are
// their BatchActors.
import type { DataStore } from "../../core/data-store.ts";
import { afterCursor } from "./batch-files.ts";

const keys = {
  env: (environmentId: string) => `batches:env:${environmentId}`,
  org: (organizationId: string) => `batches:org:${organizationId}`,
};

export class BatchDirectory {
  private readonly store: DataStore;

  constructor(store: DataStore) {
    this.store = store;
  }

  async add(owner: { organization_id: string; environment_id: string }, batchId: string, createdMs: number): Promise<void> {
    await this.store.apply([
      { op: "index", key: keys.env(owner.environment_id), member: batchId, score: createdMs },
      { op: "index", key: keys.org(owner.organization_id), member: batchId, score: createdMs },
    ]);
  }

  /** Up to `limit` ids after `after` (the previous page's last id), newest first. */
  list(environmentId: string, limit: number, after: string | undefined): Promise<string[]> {
    return afterCursor(this.store, keys.env(environmentId), limit, after);
  }

  /** Up to 100 of the organization's batches (erasure removes them page by page). */
  async ofOrganization(organizationId: string): Promise<string[]> {
    return (await this.store.page(keys.org(organizationId), 100)).members;
  }

  async remove(owner: { organization_id: string; environment_id: string }, batchId: string): Promise<void> {
    await this.store.apply([
      { op: "unindex", key: keys.env(owner.environment_id), member: batchId },
      { op: "unindex", key: keys.org(owner.organization_id), member: batchId },
    ]);
  }
}
