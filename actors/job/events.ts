// Live job events (status and progress changes), published on the tenancy
// store's broadcast channel like the conversation events (actors/event-bus.ts).
import type { DataStore } from "../../tenancy/data-store.ts";
import { storeEventBus, type EventBus } from "../event-bus.ts";
import type { Job } from "./types.ts";

export interface JobEvent {
  type: "job.updated";
  job_id: string;
  job: Job;
}

/** The caller fans out by job id. */
export type JobEventBus = EventBus<JobEvent>;

export function storeJobEventBus(store: DataStore, onError: (error: unknown) => void): JobEventBus {
  return storeEventBus<JobEvent>(store, "job-events", onError);
}
