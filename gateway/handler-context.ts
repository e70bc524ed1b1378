// What a route's handler sees (route.ts RouteContext): the validated
// request, its credential, the SSE switch, cookies, and `bill` for a route
// whose billing the server admitted (route-billing.ts).
import type { HttpResponse } from "uWebSockets.js";
import type { UsageFigures } from "../providers/usage.ts";
import type { AuthContext } from "./auth-context.ts";
import type { ResponseState } from "./http-io.ts";
import type { RouteBill } from "./route-billing.ts";
import type { CookieSpec, RouteContext, SseWriter, StreamFraming } from "./route.ts";
import { openSse } from "./sse.ts";

/**
 * A class, so a request allocates one object and no per-request closures
 * (this is on the hot path of every call).
 */
export class HandlerContext implements RouteContext<unknown, unknown> {
  readonly requestId: string;
  readonly params: Record<string, string>;
  readonly body: unknown;
  readonly query: unknown;
  readonly headers: Readonly<Record<string, string>>;
  readonly auth: AuthContext;
  cookies: string[] | undefined;
  /** Set by the route runner once the route's billing admitted the request. */
  billed: RouteBill | undefined;
  private readonly res: HttpResponse;
  private readonly state: ResponseState;
  private readonly secureCookies: boolean;
  /** Gathers a stream's answer text for the request log (a project that logs content); undefined: nothing gathered. */
  private readonly streamedAnswer: { add(event: unknown): void } | undefined;

  constructor(
    res: HttpResponse,
    state: ResponseState,
    requestId: string,
    params: Record<string, string>,
    body: unknown,
    query: unknown,
    headers: Record<string, string>,
    auth: AuthContext,
    secureCookies: boolean,
    streamedAnswer?: { add(event: unknown): void },
  ) {
    this.res = res;
    this.state = state;
    this.requestId = requestId;
    this.params = params;
    this.body = body;
    this.query = query;
    this.headers = headers;
    this.auth = auth;
    this.secureCookies = secureCookies;
    this.streamedAnswer = streamedAnswer;
    this.cookies = undefined;
    this.billed = undefined;
  }

  get signal(): AbortSignal {
    return this.state.signal;
  }

  get remoteAddress(): string {
    // Read lazily: only login needs it. An aborted response may no longer be touched.
    return this.state.aborted ? "" : Buffer.from(this.res.getRemoteAddressAsText()).toString();
  }

  sse(headers?: readonly [string, string][], framing?: StreamFraming): SseWriter {
    const writer = openSse(this.res, this.state, this.requestId, headers, framing);
    const gathered = this.streamedAnswer;
    if (!gathered) return writer;
    return {
      get closed() {
        return writer.closed;
      },
      send(data, event) {
        if (!writer.closed) gathered.add(data);
        return writer.send(data, event);
      },
      done: () => writer.done(),
      end: () => writer.end(),
    };
  }

  setCookie(cookie: CookieSpec): void {
    (this.cookies ??= []).push(formatCookie(cookie, this.secureCookies));
  }

  bill(figures: UsageFigures): void | Promise<void> {
    if (!this.billed) throw new Error("ctx.bill on a route that declares no billing");
    return this.billed.bill(figures);
  }
}

function formatCookie(cookie: CookieSpec, secure: boolean): string {
  const parts = [`${cookie.name}=${encodeURIComponent(cookie.value)}`, "Path=/", `Max-Age=${cookie.maxAgeSeconds}`, "SameSite=Lax"];
  if (cookie.httpOnly) parts.push("HttpOnly");
  if (secure) parts.push("Secure");
  return parts.join("; ");
}
