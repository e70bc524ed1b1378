// Where jobs are read from: each job's public snapshot and a per-organization
// index in the tenancy store (Redis in the cluster, lmdb embedded), so
// GET /v1/jobs/{id} and the list answer from any replica without queueing
// behind a running step (a composition may take seconds). The JobActor
// writes the entry when it creates the job, inside that turn (the caller
// reads it back at once), and each change's snapshot once the turn that made
// it commits, as the conversation's summaries: a snapshot never shows what a
// failed turn did, and lags the actor's committed state by the write.
//
// A job belongs to the environment of the key that made it (docs/guides/access-control.md): the snapshot names it and a per-environment index lists it, so a
// key of another environment neither reads nor lists it. The per-organization
// index stays for the operator's console.
import type { DataStore } from "../../core/data-store.ts";
import { deleteDocuments, eraseIndexedDocuments, type IndexedDocuments } from "../../tenancy/organization-erasure.ts";
import { jobSchema, openAiVideoFieldsSchema, type Job, type OpenAiVideoFields } from "./types.ts";
import { z } from "zod";

const snapshotKey = (id: string) => `job:${id}`;
const orgIndexKey = (orgId: string) => `org-jobs:${orgId}`;
const environmentIndexKey = (envId: string) => `env-jobs:${envId}`;
const documents: IndexedDocuments = { documentKey: snapshotKey, orgIndexKey, environmentIndexKey };
/** environment_id: null in snapshots written before it was kept (the JobActor's state still knows it). */
const snapshotSchema = z.object({
  organization_id: z.string(),
  environment_id: z.string().nullable().default(null),
  job: jobSchema,
  /** What /openai/v1/videos presents (absent in older snapshots). */
  openai_video: openAiVideoFieldsSchema.nullable().default(null),
});

/** Whose a job is: its organization and environment (the JobActor's owner). */
export interface JobPlace {
  organization_id: string;
  environment_id: string;
}

/** A job as the directory holds it, with the environment it belongs to (null: an old snapshot, ask the actor). */
export interface JobEntry {
  job: Job;
  environment_id: string | null;
  openai_video: OpenAiVideoFields | null;
}

const valueOf = (place: JobPlace, job: Job, openaiVideo: OpenAiVideoFields | null) => ({ ...place, job, ...(openaiVideo ? { openai_video: openaiVideo } : {}) });

export class JobDirectory {
  private readonly store: DataStore;

  constructor(store: DataStore) {
    this.store = store;
  }

  async created(place: JobPlace, job: Job, openaiVideo: OpenAiVideoFields | null = null): Promise<void> {
    const score = Date.parse(job.created_at);
    await this.store.apply([
      { op: "put", key: snapshotKey(job.id), value: valueOf(place, job, openaiVideo) },
      { op: "index", key: orgIndexKey(place.organization_id), member: job.id, score },
      { op: "index", key: environmentIndexKey(place.environment_id), member: job.id, score },
    ]);
  }

  async updated(place: JobPlace, job: Job, openaiVideo: OpenAiVideoFields | null = null): Promise<void> {
    await this.store.apply([{ op: "put", key: snapshotKey(job.id), value: valueOf(place, job, openaiVideo) }]);
  }

  /** The job is deleted: its snapshot and its index entries go, so every replica answers 404 and lists nothing. */
  async removed(place: JobPlace, id: string): Promise<void> {
    await this.store.apply([
      { op: "delete", key: snapshotKey(id) },
      { op: "unindex", key: orgIndexKey(place.organization_id), member: id },
      { op: "unindex", key: environmentIndexKey(place.environment_id), member: id },
    ]);
  }

  /** The job if it exists and belongs to the organization, with its environment (the caller checks it). */
  async get(organizationId: string, id: string): Promise<JobEntry | undefined> {
    const parsed = snapshotSchema.safeParse(await this.store.get(snapshotKey(id)));
    if (!parsed.success || parsed.data.organization_id !== organizationId) return undefined;
    return { job: parsed.data.job, environment_id: parsed.data.environment_id, openai_video: parsed.data.openai_video };
  }

  /** The jobs of one environment (an API key's view). Jobs made before environments were indexed are not listed; they are still read by id. */
  async listEnvironment(environmentId: string, limit: number, cursor: string | null | undefined): Promise<{ data: Job[]; next_cursor: string | null }> {
    const page = await this.listIndex(environmentIndexKey(environmentId), limit, cursor);
    return { data: page.data.map((e) => e.job), next_cursor: page.next_cursor };
  }

  /** The same, as entries (the OpenAI-compatible list presents them). */
  async listEnvironmentEntries(environmentId: string, limit: number, cursor: string | null | undefined): Promise<{ data: JobEntry[]; next_cursor: string | null }> {
    return this.listIndex(environmentIndexKey(environmentId), limit, cursor);
  }

  /** Every job of the organization (the operator's console). */
  async list(organizationId: string, limit: number, cursor: string | null | undefined): Promise<{ data: Job[]; next_cursor: string | null }> {
    const page = await this.listIndex(orgIndexKey(organizationId), limit, cursor);
    return { data: page.data.map((e) => e.job), next_cursor: page.next_cursor };
  }

  private async listIndex(index: string, limit: number, cursor: string | null | undefined): Promise<{ data: JobEntry[]; next_cursor: string | null }> {
    const page = await this.store.page(index, limit, cursor);
    const raws = await this.store.getMany(page.members.map(snapshotKey));
    const data: JobEntry[] = [];
    for (const raw of raws) {
      const parsed = snapshotSchema.safeParse(raw);
      if (parsed.success) data.push({ job: parsed.data.job, environment_id: parsed.data.environment_id, openai_video: parsed.data.openai_video });
    }
    return { data, next_cursor: page.nextCursor };
  }

  /**
   * Deleting an organization: removes its jobs' documents and index entries
   * (the organization's and each of `environmentIds`'); answers their ids.
   */
  eraseOrganization(organizationId: string, environmentIds: readonly string[]): Promise<string[]> {
    return eraseIndexedDocuments(this.store, documents, organizationId, environmentIds);
  }

  /** Deletes these documents (again after their actors are gone: a turn that was in flight may have re-written one). */
  eraseDocuments(ids: readonly string[]): Promise<void> {
    return deleteDocuments(this.store, documents, ids);
  }
}
