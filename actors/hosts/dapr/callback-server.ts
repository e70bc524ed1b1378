// The loopback uWS listener daprd calls (its --app-port): Dapr's actor
// callback protocol and nothing else. It is never the public gateway port.
//   GET    /dapr/config                               actor types and settings
//   GET    /healthz                                   app health
//   GET    /troupe/active-actors                      ids in memory here, by type (local tools only)
//   PUT    /actors/{type}/{id}/method/{method}        one turn
//   PUT    /actors/{type}/{id}/method/timer/{name}    a timer fired
//   PUT    /actors/{type}/{id}/method/remind/{name}   a reminder fired
//   DELETE /actors/{type}/{id}                        deactivate
// uWS rules: onAborted before the first await (or the process aborts), copy
// request fields and body chunks before awaiting (`req` is invalid afterwards
// and uWS reuses chunk buffers), cork writes made after an await (one send
// instead of a syscall per write).
import * as uWS from "uWebSockets.js";
import { errorToWire } from "./wire.ts";
import { statusLine } from "../../../core/http-status.ts";
import { deferredWritesDone, delivering, writeWhenCorkable } from "../../../core/uws-delivery.ts";

export interface CallbackHandlers {
  config(): unknown;
  /** `trace`: the W3C trace context daprd forwarded (traceparent, tracestate), when present. */
  invoke(type: string, id: string, method: string, bodyText: string, trace: Record<string, string>): Promise<string>;
  timer(type: string, id: string, name: string, bodyText: string): Promise<void>;
  reminder(type: string, id: string, name: string, bodyText: string): Promise<void>;
  deactivate(type: string, id: string): Promise<void>;
  /** Ids of the actors in memory on this replica, by type: for local tools (the rolling-restart bench), not public API. */
  activeActorIds(): Record<string, string[]>;
}


export class CallbackServer {
  private readonly app: uWS.TemplatedApp;
  private listenSocket: uWS.us_listen_socket | undefined;
  private inFlight = 0;
  private drainWaiters: Array<() => void> = [];
  /** Cleared when the replica stops: daprd's app health check then moves its actors away. */
  private healthy = true;

  constructor(handlers: CallbackHandlers) {
    const app = uWS.App();
    app.get("/healthz", (res) => {
      if (!this.healthy) res.writeStatus("503 Service Unavailable");
      res.writeHeader("content-type", "application/json").end("{}");
    });
    // Only daprd and tools on this machine reach this loopback port: which
    // actors the replica hosts, so a restart's failures can be attributed.
    app.get("/troupe/active-actors", (res) => {
      res.writeHeader("content-type", "application/json").end(JSON.stringify(handlers.activeActorIds()));
    });
    app.get("/dapr/config", (res) => {
      res.writeHeader("content-type", "application/json").end(JSON.stringify(handlers.config()));
    });
    app.put("/actors/:type/:id/method/timer/:name", (res, req) => {
      const [type, id, name] = params(req, 3);
      this.handle(res, async (body) => {
        await handlers.timer(type, id, name, body);
        return "";
      });
    });
    app.put("/actors/:type/:id/method/remind/:name", (res, req) => {
      const [type, id, name] = params(req, 3);
      this.handle(res, async (body) => {
        await handlers.reminder(type, id, name, body);
        return "";
      });
    });
    app.put("/actors/:type/:id/method/:method", (res, req) => {
      const [type, id, method] = params(req, 3);
      const trace = traceHeaders(req);
      this.handle(res, (body) => handlers.invoke(type, id, method, body, trace));
    });
    app.del("/actors/:type/:id", (res, req) => {
      const [type, id] = params(req, 2);
      this.handle(res, async () => {
        await handlers.deactivate(type, id);
        return "";
      });
    });
    app.any("/*", (res) => {
      res.writeStatus("404 Not Found").end();
    });
    this.app = app;
  }

  /** Listens on 127.0.0.1; port 0 picks a free one. Resolves with the port. */
  listen(port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.app.listen("127.0.0.1", port, (socket) => {
        if (!socket) {
          reject(new Error(`actor callback server could not listen on 127.0.0.1:${port}`));
          return;
        }
        this.listenSocket = socket;
        resolve(uWS.us_socket_local_port(socket as unknown as uWS.us_socket));
      });
    });
  }

  /** /healthz answers 503 from now on; callbacks are still served. */
  failHealth(): void {
    this.healthy = false;
  }

  /** Stops accepting connections, waits for in-flight callbacks, closes the app. */
  async close(): Promise<void> {
    if (this.listenSocket) uWS.us_listen_socket_close(this.listenSocket);
    this.listenSocket = undefined;
    if (this.inFlight > 0) await new Promise<void>((resolve) => this.drainWaiters.push(resolve));
    await deferredWritesDone();
    this.app.close();
  }

  private handle(res: uWS.HttpResponse, work: (bodyText: string) => Promise<string>): void {
    delivering(res);
    const state = { aborted: false };
    res.onAborted(() => {
      state.aborted = true;
    });
    this.inFlight++;
    const chunks: Buffer[] = [];
    res.onData((chunk, isLast) => {
      delivering(res);
      chunks.push(Buffer.from(chunk.slice(0)));
      if (!isLast) return;
      const body = chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8");
      work(body).then(
        (text) => {
          if (!state.aborted) writeWhenCorkable(res, state, () => res.cork(() => res.writeHeader("content-type", "application/json").end(text)));
        },
        (error: unknown) => {
          const { status, body: errorBody } = errorToWire(error);
          if (!state.aborted) {
            writeWhenCorkable(res, state, () =>
              res.cork(() =>
                res
                  .writeStatus(statusLine(status))
                  .writeHeader("content-type", "application/json")
                  .end(JSON.stringify(errorBody)),
              ),
            );
          }
        },
      ).finally(() => {
        this.inFlight--;
        if (this.inFlight === 0) {
          const waiters = this.drainWaiters;
          this.drainWaiters = [];
          for (const w of waiters) w();
        }
      });
    });
  }
}

/** Copied before the body is read (req is invalid after the handler returns). */
function traceHeaders(req: uWS.HttpRequest): Record<string, string> {
  const trace: Record<string, string> = {};
  const parent = req.getHeader("traceparent");
  if (parent !== "") trace["traceparent"] = parent;
  const state = req.getHeader("tracestate");
  if (state !== "") trace["tracestate"] = state;
  return trace;
}

function params(req: uWS.HttpRequest, count: 2): [string, string];
function params(req: uWS.HttpRequest, count: 3): [string, string, string];
function params(req: uWS.HttpRequest, count: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < count; i++) out.push(decodeURIComponent(req.getParameter(i) ?? ""));
  return out;
}
