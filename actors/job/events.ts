// Live job events (status and progress changes), published on the tenancy
// store's broadcast channel like the conversation events: in process when
// embedded, Redis pub/sub in the cluster, so a WebSocket on any replica sees
// what a JobActor on any other replica does.
import type { DataStore } from "../../tenancy/data-store.ts";
import type { Job } from "./types.ts";

export interface JobEvent {
  type: "job.updated";
  job_id: string;
  job: Job;
}

const channel = "job-events";

export interface JobEventBus {
  publish(event: JobEvent): void;
  /** One subscription per process; the caller fans out by job id. `wanted` is asked first, so unwatched events are never parsed. */
  subscribe(onEvent: (event: JobEvent, json: string) => void, wanted?: () => boolean): Promise<void>;
}

export function storeJobEventBus(store: DataStore, onError: (error: unknown) => void): JobEventBus {
  return {
    publish(event) {
      store.publish(channel, JSON.stringify(event)).catch(onError);
    },
    async subscribe(onEvent, wanted) {
      await store.subscribe(channel, (message) => {
        if (wanted && !wanted()) return;
        try {
          onEvent(JSON.parse(message) as JobEvent, message);
        } catch (error) {
          onError(error);
        }
      });
    },
  };
}
