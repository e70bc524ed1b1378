// Where jobs are read from: each job's public snapshot and a per-organization
// index in the tenancy store (Redis in the cluster, lmdb embedded). The
// JobActor writes the snapshot inside its turn, before the turn commits, each
// time the job changes; so GET /v1/jobs/{id} and the list answer from any
// replica without queueing behind a running step (a composition may take
// seconds), and a snapshot is never behind the actor's committed state.
import type { DataStore } from "../../tenancy/data-store.ts";
import { jobSchema, type Job } from "./types.ts";
import { z } from "zod";

const snapshotKey = (id: string) => `job:${id}`;
const orgIndexKey = (orgId: string) => `org-jobs:${orgId}`;
const snapshotSchema = z.object({ organization_id: z.string(), job: jobSchema });

export class JobDirectory {
  private readonly store: DataStore;

  constructor(store: DataStore) {
    this.store = store;
  }

  async created(organizationId: string, job: Job): Promise<void> {
    await this.store.apply([
      { op: "put", key: snapshotKey(job.id), value: { organization_id: organizationId, job } },
      { op: "index", key: orgIndexKey(organizationId), member: job.id, score: Date.parse(job.created_at) },
    ]);
  }

  async updated(organizationId: string, job: Job): Promise<void> {
    await this.store.apply([{ op: "put", key: snapshotKey(job.id), value: { organization_id: organizationId, job } }]);
  }

  /** The job if it exists and belongs to the organization. */
  async get(organizationId: string, id: string): Promise<Job | undefined> {
    const parsed = snapshotSchema.safeParse(await this.store.get(snapshotKey(id)));
    if (!parsed.success || parsed.data.organization_id !== organizationId) return undefined;
    return parsed.data.job;
  }

  async list(organizationId: string, limit: number, cursor: string | null | undefined): Promise<{ data: Job[]; next_cursor: string | null }> {
    const page = await this.store.page(orgIndexKey(organizationId), limit, cursor);
    const raws = await this.store.getMany(page.members.map(snapshotKey));
    const data: Job[] = [];
    for (const raw of raws) {
      const parsed = snapshotSchema.safeParse(raw);
      if (parsed.success) data.push(parsed.data.job);
    }
    return { data, next_cursor: page.nextCursor };
  }
}
