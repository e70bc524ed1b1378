// Serves a declared WebSocket route (route.ts `defineWsRoute`) on the uWS
// app: the upgrade request goes through the same admission as an HTTP
// request (admission.ts), then the route's `accept`, then the upgrade; a
// refusal is answered in the gateway's one error body. Browsers cannot set
// an Authorization header on a WebSocket, so a credential may also come as
// the subprotocol `bearer.<credential>`, offered beside the route's own
// subprotocol (upgradeCredential below). A route that declares `billing` is
// admitted against its budget before `accept` (route-billing.ts, as HTTP
// routes are) and what it held is released once `accept` has answered.
import type { TemplatedApp, WebSocketBehavior } from "uWebSockets.js";
import { errorBody, isTroupeError, TroupeError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { refusalOf, type Metrics } from "../core/metrics.ts";
import { statusLine } from "../core/http-status.ts";
import { delivering } from "../core/uws-delivery.ts";
import type { Admission } from "./admission.ts";
import { decodePathParam, framingConflict, framingError, type FramingProblem } from "./request-guards.ts";
import { pickRequestId } from "./request-id.ts";
import { admitRoute } from "./route-billing.ts";
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

/**
 * The Authorization header an upgrade runs as: the header itself, or the one
 * `bearer.<credential>` subprotocol. The server only ever selects the
 * route's own subprotocol (`troupe.v1`), never the credential (a selected
 * subprotocol is echoed in Sec-WebSocket-Protocol, where proxies and
 * browser tools show and log it), so a credential subprotocol is accepted
 * only with the route's offered beside it. Two credentials — the header and
 * a subprotocol, or two subprotocols — are refused whatever they are: which
 * one the socket runs as must never be a guess. Each refusal is 400: the
 * request is malformed before any credential is looked at.
 */
export function upgradeCredential(authorization: string | undefined, protocols: readonly string[], subprotocol: string | undefined): string | undefined {
  const bearers = protocols.filter((p) => p.startsWith(bearerProtocol));
  if (bearers.length === 0) return authorization;
  const refuse = (message: string) =>
    new TroupeError("invalid_request", message, { details: [{ path: "headers.sec-websocket-protocol", message }] });
  if (bearers.length > 1) throw refuse(`${bearers.length} ${bearerProtocol}<credential> subprotocols were offered: send one credential`);
  if (authorization !== undefined) throw refuse(`two credentials: the Authorization header and a ${bearerProtocol}<credential> subprotocol: send one`);
  if (subprotocol === undefined || !protocols.includes(subprotocol)) {
    throw refuse(`a ${bearerProtocol}<credential> subprotocol must be offered together with ${JSON.stringify(subprotocol ?? "the route's subprotocol")}, the one the server selects`);
  }
  return `Bearer ${(bearers[0] ?? "").slice(bearerProtocol.length)}`;
}

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
      delivering(res);
      // uWS's request object is valid only in this synchronous callback: copy what is needed first.
      const headers: Record<string, string> = {};
      let framing: FramingProblem | undefined;
      req.forEach((k, v) => {
        if (k === "content-length" || k === "transfer-encoding") framing ??= framingConflict(k, v, headers);
        headers[k] = v;
      });
      const rawParams = paramNames.map((_, i) => req.getParameter(i) ?? "");
      const secKey = headers["sec-websocket-key"] ?? "";
      const extensions = headers["sec-websocket-extensions"] ?? "";
      const protocols = (headers["sec-websocket-protocol"] ?? "").split(",").map((p) => p.trim()).filter(Boolean);
      const aborted = new AbortController();
      res.onAborted(() => aborted.abort());
      const requestId = pickRequestId(headers["x-request-id"]);
      void (async () => {
        if (framing) {
          // As server.ts refuseFraming: answered once uWS has parsed what it holds, so nothing pipelined behind is served.
          await new Promise((resolve) => setImmediate(resolve));
          throw framingError(framing);
        }
        const authorization = upgradeCredential(headers["authorization"], protocols, route.subprotocol);
        if (authorization !== undefined) headers["authorization"] = authorization;
        const admitted = deps.admission.admit(route, "GET", headers);
        const auth = admitted instanceof Promise ? await admitted : admitted;
        // Decoded after admission, as the HTTP routes' are: a malformed escape is a 400 naming the parameter.
        const params: Record<string, string> = {};
        paramNames.forEach((name, i) => (params[name] = decodePathParam(name, rawParams[i] ?? "")));
        // Every key of the path was filled above, which is what PathParams<P> promises.
        const ctx = { requestId, params: params as PathParams<P>, headers, auth, signal: aborted.signal };
        const bill = route.billing ? await admitRoute(route.billing, ctx) : undefined;
        let data: Data;
        try {
          data = await route.accept(ctx);
        } finally {
          await bill?.release();
        }
        if (aborted.signal.aborted) return;
        // Only the route's own subprotocol is ever selected (never whatever else was offered, never a credential).
        const selected = route.subprotocol && protocols.includes(route.subprotocol) ? route.subprotocol : "";
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
          // Ambiguous framing: what follows on the connection cannot be trusted to be a request.
          res.end(JSON.stringify(errorBody(troupe, requestId)), framing !== undefined);
        });
      });
    },
  });
}
