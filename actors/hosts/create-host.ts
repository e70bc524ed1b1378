// Picks the actor host for the configured mode. The gateway calls this once
// at start; nothing else needs to know which host runs the actors. The Dapr
// host (undici, a second uWS server) is imported only in dapr mode: the
// embedded start must not pay for it (its cold start is measured by
// bench/startup.ts, target ≤ 300 ms).
import type { Clock } from "../../core/clock.ts";
import type { ActorsConfig } from "../../core/config.ts";
import type { Logger } from "../../core/log.ts";
import type { Tracing } from "../../core/tracing.ts";
import type { IdSource } from "../actor.ts";
import type { ActorHost } from "../host.ts";
import { EmbeddedActorHost } from "./embedded/embedded-host.ts";

export interface CreateActorHostOptions {
  mode: "embedded" | "dapr";
  dataDir: string;
  actors: ActorsConfig;
  clock: Clock;
  ids?: IdSource;
  log: Logger;
  tracing?: Tracing;
}

export async function createActorHost(options: CreateActorHostOptions): Promise<ActorHost> {
  if (options.mode === "dapr") {
    const { DaprActorHost } = await import("./dapr/dapr-host.ts");
    return new DaprActorHost({ ...options.actors, clock: options.clock, ids: options.ids, log: options.log, tracing: options.tracing });
  }
  return new EmbeddedActorHost({
    dataDir: options.dataDir,
    idleTimeoutMs: options.actors.idleTimeoutMs,
    maxResident: options.actors.maxResident,
    clock: options.clock,
    ids: options.ids,
    log: options.log,
    tracing: options.tracing,
  });
}
