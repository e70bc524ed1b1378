// Serves a declared WebSocket route (route.ts `defineWsRoute`) on the uWS
// app: the upgrade request goes through the same admission as an HTTP
// request (admission.ts), then the route's `accept`, then the upgrade; a
// refusal is answered in the gateway's one error body. Browsers cannot set
// an Authorization header on a WebSocket, so a credential may also come as
// the subprotocol `bearer.<credential>`.
import type { TemplatedApp, WebSocketBehavior } from "uWebSockets.js";
import { errorBody, isTroupeError, TroupeError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { refusalOf, type Metrics } from "../core/metrics.ts";
import { statusLine } from "../core/http-status.ts";
import type { Admission } from "./admission.ts";
import { decodePathParam } from "./request-guards.ts";
import { pickRequestId } from "./request-id.ts";
import { paramNamesOf, type AuthMode, type PathParams, type WsRouteDefinition } from "./route.ts";

/** What the socket does once open; uWS's behaviour minus the upgrade, which the route's `accept` replaces. */
export type WsBehaviour<Data> = Omit<WebSocketBehavior<Data>, "upgrade">;

export interface WsRouteDeps {
  admission: Admission;
  log: Logger;
  /** Counts refused upgrades (rate limit, budget) like refused HTTP requests. */
  metrics?: Metrics;
}

const bearerProtocol = "bearer.";

export function attachWsRoute<P extends string, A extends AuthMode, Data>(
  app: TemplatedApp,
  route: WsRouteDefinition<P, A, Data>,
  behaviour: WsBehaviour<Data>,
  deps: WsRouteDeps,
): void {
  const paramNames = paramNamesOf(route.path);
  app.ws<Data>(route.path, {
    ...behaviour,
    upgrade: (res, req, context) => {
      // uWS's request object is valid only in this synchronous callback: copy what is needed first.
      const headers: Record<string, string> = {};
      req.forEach((k, v) => (headers[k] = v));
      const rawParams = paramNames.map((_, i) => req.getParameter(i) ?? "");
      const secKey = headers["sec-websocket-key"] ?? "";
      const extensions = headers["sec-websocket-extensions"] ?? "";
      const protocols = (headers["sec-websocket-protocol"] ?? "").split(",").map((p) => p.trim()).filter(Boolean);
      const offeredBearer = protocols.find((p) => p.startsWith(bearerProtocol));
      if (!headers["authorization"] && offeredBearer) headers["authorization"] = `Bearer ${offeredBearer.slice(bearerProtocol.length)}`;
      const aborted = new AbortController();
      res.onAborted(() => aborted.abort());
      const requestId = pickRequestId(headers["x-request-id"]);
      void (async () => {
        const admitted = deps.admission.admit(route, "GET", headers);
        const auth = admitted instanceof Promise ? await admitted : admitted;
        // Decoded after admission, as the HTTP routes' are: a malformed escape is a 400 naming the parameter.
        const params: Record<string, string> = {};
        paramNames.forEach((name, i) => (params[name] = decodePathParam(name, rawParams[i] ?? "")));
        // Every key of the path was filled above, which is what PathParams<P> promises.
        const data = await route.accept({ requestId, params: params as PathParams<P>, headers, auth, signal: aborted.signal });
        if (aborted.signal.aborted) return;
        // The answer must be one the client offered: the route's own when given (keeps the credential out of the response).
        const selected = route.subprotocol && protocols.includes(route.subprotocol) ? route.subprotocol : (protocols[0] ?? "");
        res.cork(() => res.upgrade<Data>(data, secKey, selected, extensions, context));
      })().catch((error: unknown) => {
        if (aborted.signal.aborted) return;
        const troupe = isTroupeError(error) ? error : new TroupeError("internal_error");
        if (!isTroupeError(error)) deps.log.error("websocket upgrade failed", { path: route.path, error });
        const refusal = refusalOf(troupe.code);
        if (refusal) deps.metrics?.refusal(refusal, route.path);
        res.cork(() => {
          res.writeStatus(statusLine(troupe.status));
          res.writeHeader("content-type", "application/json");
          res.writeHeader("x-request-id", requestId);
          if (troupe.retryAfterSeconds !== undefined) res.writeHeader("retry-after", String(troupe.retryAfterSeconds));
          res.end(JSON.stringify(errorBody(troupe, requestId)));
        });
      });
    },
  });
}
