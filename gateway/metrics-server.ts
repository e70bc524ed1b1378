// GET /metrics (Prometheus text) on its own listener (METRICS_PORT), so the
// public gateway port never exposes it: Prometheus scrapes each replica's
// metrics port directly (a pod annotation in Kubernetes).
import * as uWS from "uWebSockets.js";
import type { Logger } from "../core/log.ts";
import type { Metrics } from "../core/metrics.ts";

export interface MetricsServer {
  port: number;
  close(): void;
}

export function startMetricsServer(metrics: Metrics, host: string, port: number, log: Logger): Promise<MetricsServer> {
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
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (!socket) {
        reject(new Error(`metrics: could not listen on port ${port} of ${host} (METRICS_PORT)`));
        return;
      }
      resolve({
        port: uWS.us_socket_local_port(socket as unknown as uWS.us_socket),
        close: () => {
          uWS.us_listen_socket_close(socket);
          app.close();
        },
      });
    });
  });
}
