// GET /metrics (Prometheus text) on its own listener (METRICS_PORT), so the
// public gateway port never exposes it: Prometheus scrapes each replica's
// metrics port directly (a pod annotation in Kubernetes).
import * as uWS from "uWebSockets.js";
import type { Logger } from "../core/log.ts";
import type { MetricsExposition } from "../core/metrics.ts";
import { listenExclusive } from "./exclusive-listen.ts";

export interface MetricsServer {
  port: number;
  close(): void;
}

export async function startMetricsServer(metrics: MetricsExposition, host: string, port: number, log: Logger): Promise<MetricsServer> {
  const app = uWS.App();
  app.get("/metrics", (res) => {
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    metrics.render().then(
      ({ contentType, body }) => {
        if (!aborted) res.cork(() => res.writeHeader("content-type", contentType).end(body));
      },
      (error: unknown) => {
        log.error("metrics rendering failed", { error });
        if (!aborted) res.cork(() => res.writeStatus("500 Internal Server Error").end());
      },
    );
  });
  app.any("/*", (res) => {
    res.writeStatus("404 Not Found").writeHeader("content-type", "text/plain").end("only GET /metrics is served here\n");
  });
  // Exclusive, like the gateway's port: a second Troupe with the same METRICS_PORT must not start and share it.
  const socket = await listenExclusive(app, host, port, () => new Error(`metrics: could not listen on port ${port} of ${host} (METRICS_PORT): the port is in use (or not available to this process)`));
  return {
    port: uWS.us_socket_local_port(socket as unknown as uWS.us_socket),
    close: () => {
      uWS.us_listen_socket_close(socket);
      app.close();
    },
  };
}
