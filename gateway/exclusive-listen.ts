// Binding a uWS app to a port exclusively. uWS binds with SO_REUSEPORT
// unless told otherwise: a second Troupe on a port in use would start, and
// the kernel would split the connections between the two (for the metrics
// port, each scrape would see one replica or the other at random).
// Exclusive makes the bind fail instead. Shared by the public gateway and
// the metrics listener.
import * as uWS from "uWebSockets.js";
import type { TemplatedApp, us_listen_socket } from "uWebSockets.js";

/**
 * The native listen takes (host, port, options, cb); the typings declare
 * only (port, options, cb), and name the flag in an enum index.mjs does not
 * export (it exports LIBUS_LISTEN_EXCLUSIVE_PORT, = 1, which they omit).
 */
const exclusivePort = (uWS as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT?: number }).LIBUS_LISTEN_EXCLUSIVE_PORT ?? 1;
interface ListenWithOptions {
  listen(host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void): unknown;
}

/** Resolves with the listen socket; rejects with `failure` when the port is taken (or not available to this process). */
export function listenExclusive(app: TemplatedApp, host: string, port: number, failure: () => Error): Promise<us_listen_socket> {
  return new Promise((resolve, reject) => {
    (app as unknown as ListenWithOptions).listen(host, port, exclusivePort, (socket) => {
      if (socket) resolve(socket);
      else reject(failure());
    });
  });
}
