// The console's "jobs in flight": the organization's unfinished jobs among
// its newest ones (the job list is newest first; a job older than the newest
// `scanned` is not shown — the console is a glance, GET /v1/jobs is the list).
import type { JobDirectory } from "../../actors/job/directory.ts";
import type { ConsoleJob } from "./console-data.ts";

const scanned = 100;

export async function jobsInFlight(directory: JobDirectory, organizationId: string): Promise<ConsoleJob[]> {
  const page = await directory.list(organizationId, scanned, null);
  return page.data
    .filter((job) => job.status === "queued" || job.status === "processing")
    .map((job) => ({ id: job.id, type: job.type, status: job.status, progress: job.progress, created_at: job.created_at }));
}
