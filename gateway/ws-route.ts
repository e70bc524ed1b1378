// Serves a declared WebSocket route (route.ts `defineWsRoute`) on the uWS
// app. The upgrade request goes through the same admission as an HTTP
// request (admission.ts), and the upgrade itself always completes inside
// uWS's upgrade callback, never after an await: uWebSockets.js 20.0.8 closes
// a socket upgraded later (inside res.cork, as writes after an await must
// be) now and then right after it opens, with no close frame (code 1006 at
// the client, before any frame). When uWS resizes the socket's memory in
// place on upgrade, cork()'s epilogue takes the socket for the HTTP
// response it was and reads that response's state from bytes that now
// belong to the WebSocket; when they read "close the connection", it does.
//
// So admission is decided in the callback whenever that needs no I/O (a key
// in this replica's cache, a rate limit counted in process, billing that
// holds nothing): a refusal is then an HTTP answer in the gateway's one
// error body. When it needs I/O (a key this replica has not seen
// lately or an unknown one, a rate limit counted in Redis, a budget's
// ledger step), the socket is upgraded at once and admitted once open; a
// refusal then closes it with 4000 + the status (ws-close.ts). The route's
// `accept` (the resource check: found, and the caller's) always runs once
// the socket is open, and closes it the same way when it refuses; the
// route's behaviour starts (`ready`) only with what `accept` answered.
//
// Browsers cannot set an Authorization header on a WebSocket, so a
// credential may also come as the subprotocol `bearer.<credential>`, offered
// beside the route's own subprotocol (upgradeCredential below). A route
// that declares `billing` is admitted against its budget before `accept`
// (route-billing.ts, as HTTP routes are) and what it held is released once
// `accept` has answered.
//
// Each socket leaves one request-log entry when it closes (`callEnded`, as
// an HTTP call does when it ends): status 101, its close code, how long it
// was open, and the payload bytes of the frames each way; an upgrade refused
// before it was upgraded leaves one with its HTTP status.
import type { HttpResponse, TemplatedApp, WebSocket, WebSocketBehavior } from "uWebSockets.js";
import { errorBody, isTroupeError, TroupeError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { refusalOf, type Metrics } from "../core/metrics.ts";
import { statusLine } from "../core/http-status.ts";
import { delivering } from "../core/uws-delivery.ts";
import { refusedKeyOf, type Admission } from "./admission.ts";
import type { AuthContext } from "./auth-context.ts";
import { ResponseState } from "./http-io.ts";
import type { EndedCall } from "./route-runner.ts";
import { credentialConflict, decodePathParam, framingConflict, framingError, type FramingProblem } from "./request-guards.ts";
import { pickRequestId } from "./request-id.ts";
import { admitRoute, type RouteBill } from "./route-billing.ts";
import { paramNamesOf, type AuthMode, type PathParams, type WsRouteDefinition, type WsUpgradeContext } from "./route.ts";
import { wsCloseFor } from "./ws-close.ts";

/** A route's socket as uWS holds it, from the upgrade until it closes. */
export type RouteSocket<Data> = WebSocket<SocketData<Data>>;

/**
 * What a route's sockets do: uWS's settings, and handlers that get the data
 * `accept` answered. The upgrade and uWS's `open` are this file's.
 */
export interface WsBehaviour<Data> extends Pick<WebSocketBehavior<SocketData<Data>>, "idleTimeout" | "sendPingsAutomatically" | "maxPayloadLength" | "maxBackpressure" | "maxLifetime" | "closeOnBackpressureLimit" | "compression"> {
  /**
   * The socket is open, admitted, and `accept` answered `data`. Runs after an
   * await, outside any uWS callback: sends belong in `ws.cork`.
   */
  ready?(ws: RouteSocket<Data>, data: Data): void;
  /** A client frame after `ready` (those before it are dropped). */
  message?(ws: RouteSocket<Data>, data: Data, message: ArrayBuffer, isBinary: boolean): void;
  /** The socket closed after `ready`; it may not be used any more. */
  close?(data: Data, code: number): void;
}

/**
 * uWS copies the user data object it is given onto the socket, so what
 * changes after the upgrade lives one reference away.
 */
interface SocketData<Data> {
  state: SocketState<Data>;
}

interface SocketState<Data> {
  requestId: string;
  /** Called once from `open`: waits for admission if it needed I/O, runs `accept`, then `ready`. */
  start: (ws: RouteSocket<Data>) => void;
  /** Aborted once the socket closes: `accept`'s ctx.signal. */
  closing: AbortController;
  closed: boolean;
  /** Set once `accept` answered and `ready` ran. */
  ready: { data: Data } | undefined;
  /** performance.now() at the upgrade. */
  startedMs: number;
  /** The credential, once admitted (the request log's key). */
  auth: AuthContext | undefined;
  /** Why the socket was refused after it opened. */
  error: unknown;
  /** Payload bytes received and sent. */
  bytesIn: number;
  bytesOut: number;
}

export interface WsRouteDeps {
  admission: Admission;
  log: Logger;
  /** Counts refused upgrades (rate limit, budget) like refused HTTP requests. */
  metrics?: Metrics;
  /** Called once per socket when it closes, and per upgrade refused before it was upgraded (the request log); never awaited. */
  callEnded?: ((call: EndedCall) => void) | undefined;
}

const frameBytes = (message: string | ArrayBuffer | ArrayBufferView): number => (typeof message === "string" ? Buffer.byteLength(message) : message.byteLength);

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

/** `next` at once on a value, after it on a promise: a step that needs no I/O stays synchronous. */
function then<T, U>(value: T | Promise<T>, next: (value: T) => U | Promise<U>): U | Promise<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}

export function attachWsRoute<P extends string, A extends AuthMode, Data>(
  app: TemplatedApp,
  route: WsRouteDefinition<P, A, Data>,
  behaviour: WsBehaviour<Data>,
  deps: WsRouteDeps,
): void {
  const paramNames = paramNamesOf(route.path);
  // Only the settings the behaviour gives reach uWS: it keeps its defaults for the others.
  const { ready, message, close, ...settings } = behaviour;
  type Admitted = { ctx: WsUpgradeContext<P, A>; bill: RouteBill | undefined };

  /** Credential, rate limit, path parameters, billing: synchronous unless one of them needs I/O. Throws (or rejects with) the refusal. */
  const admit = (headers: Record<string, string>, protocols: string[], rawParams: string[], requestId: string, signal: AbortSignal): Admitted | Promise<Admitted> => {
    const authorization = upgradeCredential(headers["authorization"], protocols, route.subprotocol);
    if (authorization !== undefined) headers["authorization"] = authorization;
    return then(deps.admission.admit(route, "GET", headers), (auth) => {
      // Decoded after admission, as the HTTP routes' are: a malformed escape is a 400 naming the parameter.
      const params: Record<string, string> = {};
      paramNames.forEach((name, i) => (params[name] = decodePathParam(name, rawParams[i] ?? "")));
      // Every key of the path was filled above, which is what PathParams<P> promises.
      const ctx: WsUpgradeContext<P, A> = { requestId, params: params as PathParams<P>, headers, auth, signal };
      if (!route.billing) return { ctx, bill: undefined };
      return then(admitRoute(route.billing, ctx), (bill) => ({ ctx, bill }));
    });
  };

  /** The refusal as a TroupeError, logged when it is not one and counted when it is a limit's. */
  const refusal = (error: unknown): TroupeError => {
    const troupe = isTroupeError(error) ? error : new TroupeError("internal_error");
    if (!isTroupeError(error)) deps.log.error("websocket upgrade failed", { path: route.path, error });
    const kind = refusalOf(troupe.code);
    if (kind) deps.metrics?.refusal(kind, route.path);
    return troupe;
  };

  /** One request-log entry: a closed socket (101 and its figures) or an upgrade refused with `status`. */
  const ended = (requestId: string, startedMs: number, status: number, auth: AuthContext | undefined, error: unknown, socket: EndedCall["socket"]): void => {
    if (!deps.callEnded) return;
    const state = new ResponseState();
    state.status = status;
    state.firstByteMs = socket ? socket.upgradedMs : performance.now();
    deps.callEnded({ requestId, method: "GET", route: route.path, auth: auth ?? refusedKeyOf(error), state, startedMs, error, model: undefined, body: undefined, answer: undefined, socket });
  };

  const answer = (res: HttpResponse, error: unknown, requestId: string, closeConnection: boolean, startedMs = performance.now()): void => {
    const troupe = refusal(error);
    ended(requestId, startedMs, troupe.status, undefined, troupe, undefined);
    res.cork(() => {
      res.writeStatus(statusLine(troupe.status));
      res.writeHeader("content-type", "application/json");
      res.writeHeader("x-request-id", requestId);
      if (troupe.retryAfterSeconds !== undefined) res.writeHeader("retry-after", String(troupe.retryAfterSeconds));
      res.end(JSON.stringify(errorBody(troupe, requestId)), closeConnection);
    });
  };

  /** Once open: waits for admission if it needed I/O, runs `accept`, then the behaviour; a refusal closes the socket. */
  const start = async (ws: RouteSocket<Data>, state: SocketState<Data>, admitted: Admitted | Promise<Admitted>): Promise<void> => {
    let data: Data;
    try {
      const { ctx, bill } = await admitted;
      state.auth = ctx.auth;
      try {
        if (state.closed) return;
        data = await route.accept(ctx);
      } finally {
        await bill?.release();
      }
    } catch (error) {
      if (state.closed) return;
      const troupe = refusal(error);
      state.error = troupe;
      const { code, reason } = wsCloseFor(troupe, state.requestId);
      // Not corked: an end() inside cork() left the close frame unsent until the next I/O.
      ws.end(code, reason);
      return;
    }
    // Closed while `accept` ran: whatever it set up is its own to drop (ctx.signal was aborted).
    if (state.closed) return;
    state.ready = { data };
    ready?.(ws, data);
  };

  app.ws<SocketData<Data>>(route.path, {
    ...settings,
    upgrade: (res, req, context) => {
      const startedMs = performance.now();
      delivering(res);
      // uWS's request object is valid only in this synchronous callback: copy what is needed first.
      const headers: Record<string, string> = {};
      let framing: FramingProblem | undefined;
      req.forEach((k, v) => {
        if (k === "content-length" || k === "transfer-encoding") framing ??= framingConflict(k, v, headers);
        else framing ??= credentialConflict(k, headers);
        headers[k] = v;
      });
      const rawParams = paramNames.map((_, i) => req.getParameter(i) ?? "");
      const secKey = headers["sec-websocket-key"] ?? "";
      const extensions = headers["sec-websocket-extensions"] ?? "";
      const protocols = (headers["sec-websocket-protocol"] ?? "").split(",").map((p) => p.trim()).filter(Boolean);
      const requestId = pickRequestId(headers["x-request-id"]);
      if (framing) {
        const problem = framing;
        let gone = false;
        res.onAborted(() => (gone = true));
        // As server.ts refuseFraming: answered once uWS has parsed what it holds, so nothing pipelined behind is served.
        // Ambiguous framing: what follows on the connection cannot be trusted to be a request, so it closes.
        setImmediate(() => gone || answer(res, framingError(problem), requestId, true, startedMs));
        return;
      }
      const closing = new AbortController();
      let admitted: Admitted | Promise<Admitted>;
      try {
        admitted = admit(headers, protocols, rawParams, requestId, closing.signal);
      } catch (error) {
        answer(res, error, requestId, false, startedMs);
        return;
      }
      // Awaited once open; marked handled now so a socket that never opens leaves no unhandled rejection.
      if (admitted instanceof Promise) admitted.catch(() => undefined);
      const state: SocketState<Data> = {
        requestId,
        start: (ws) => void start(ws, state, admitted),
        closing,
        closed: false,
        ready: undefined,
        startedMs,
        auth: undefined,
        error: undefined,
        bytesIn: 0,
        bytesOut: 0,
      };
      // Only the route's own subprotocol is ever selected (never whatever else was offered, never a credential).
      const selected = route.subprotocol && protocols.includes(route.subprotocol) ? route.subprotocol : "";
      res.upgrade<SocketData<Data>>({ state }, secKey, selected, extensions, context);
    },
    // Inside res.upgrade, inside this upgrade callback: nothing is sent from here (`start` awaits first).
    open: (ws) => {
      const { state } = ws.getUserData();
      if (deps.callEnded) {
        // Counted here, whoever sends (the route's handlers hold this same object).
        const send = ws.send.bind(ws);
        ws.send = (message, isBinary, compress) => {
          state.bytesOut += frameBytes(message);
          return send(message, isBinary, compress);
        };
      }
      state.start(ws);
    },
    message: (ws, frame, isBinary) => {
      const { state } = ws.getUserData();
      state.bytesIn += frame.byteLength;
      if (state.ready) message?.(ws, state.ready.data, frame, isBinary);
    },
    close: (ws, code) => {
      const { state } = ws.getUserData();
      state.closed = true;
      state.closing.abort();
      if (state.ready) close?.(state.ready.data, code);
      ended(state.requestId, state.startedMs, 101, state.auth, state.error, { closeCode: code, bytesIn: state.bytesIn, bytesOut: state.bytesOut, upgradedMs: state.startedMs });
    },
  });
}
