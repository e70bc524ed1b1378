// What a feature module hands the composition root (gateway/app.ts): its
// actor types, its HTTP routes, its WebSocket routes, what it attaches to the
// uWS app directly, and its start and stop. A feature is built whole from the
// shared services (./shared-services.ts) and the features it depends on; the
// root registers the actors, starts the features in list order once the
// gateway listens, and drains and stops them in reverse order around the
// actor host's stop.
import type { TemplatedApp } from "uWebSockets.js";
import type { AnyActorDefinition } from "../../actors/actor.ts";
import type { PlainPage, SocketRoute } from "../server.ts";
import type { RawPath } from "../openapi.ts";
import type { RouteDefinition } from "../route.ts";

export type { SocketRoute } from "../server.ts";

export interface Feature {
  /** Actor types the host runs (registered before the host starts). */
  actors?: readonly AnyActorDefinition[];
  routes?: readonly RouteDefinition[];
  sockets?: readonly SocketRoute[];
  /** Paths served by handlers attached to the app directly (documented, 405 answers). */
  rawPaths?: readonly RawPath[];
  /** Attaches those handlers. */
  attachRaw?(app: TemplatedApp): void;
  /** HTML pages (docs, console). */
  pages?: readonly PlainPage[];
  /** Runs after the gateway listens (the public URL is known) and the actor host started. */
  start?(): void | Promise<void>;
  /** Before the actor host stops (work leaving the process finishes; nothing new starts). */
  drain?(): void | Promise<void>;
  /** After the actor host stopped (no turn can use what this closes). */
  stop?(): void | Promise<void>;
}
