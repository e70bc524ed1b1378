// Live job events (status and progress changes), published on the tenancy
// store's broadcast channel like the conversation events (actors/event-bus.ts).
import type { DataStore } from "../../core/data-store.ts";
import { storeResourceEventBus, type ResourceEventBus } from "../event-bus.ts";
import type { Job } from "./types.ts";

export interface JobEvent {
  type: "job.updated";
  job_id: string;
  job: Job;
}

/** One channel per job. */
export type JobEventBus = ResourceEventBus<JobEvent>;

export function storeJobEventBus(store: DataStore, onError: (error: unknown) => void): JobEventBus {
  return storeResourceEventBus<JobEvent>(store, "job-events", (event) => event.job_id, onError);
}
