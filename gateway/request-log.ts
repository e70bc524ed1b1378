// The request line: one info-level JSON line per HTTP request, whoever
// answered it (a route, a page, the files path, the 404/405 fallback), which
// is what an operator greps and graphs. A route's template (`/v1/jobs/:id`)
// stands for its path, so lines group by route and carry no ids (a file's id
// is its capability); only a request no route took logs its concrete path,
// having no template. Clients put credentials in query strings (`?key=`,
// `?api_key=`, presigned `X-Amz-Signature`), so their values are redacted
// before the query is logged.
import type { Logger, LogFields } from "../core/log.ts";

/** What the request line reads of an answered request (ResponseState has these). */
export interface AnsweredState {
  readonly status: number;
  readonly bytes: number;
  readonly aborted: boolean;
}

export interface RequestEntry {
  requestId: string;
  method: string;
  /** The template of the route that took the request; null when none did. */
  route: string | null;
  /** The concrete path: given only when no route took the request. */
  path?: string;
  /** The raw query string (without `?`), redacted here. */
  query: string;
  /** performance.now() when the request arrived. */
  startedMs: number;
}

export interface RequestLog {
  /** False when info lines are dropped: callers then skip reading the clock. */
  readonly enabled: boolean;
  write(state: AnsweredState, entry: RequestEntry): void;
}

// Parameter names whose values are credentials. Whole names: Google-style
// `key`, `sig`, OAuth's `code`; anywhere in the name: `api_key`/`api-key`,
// `access_token`, `client_secret`, `X-Amz-Credential`, `X-Amz-Signature`.
const credentialParam = /^(key|sig|code|auth|pwd)$|api[-_]?key|token|secret|passw|signature|credential|authori[sz]ation|session|cookie/i;

/** The query with every credential parameter's value replaced by `[redacted]`; the rest as sent. */
export function redactQuery(query: string): string {
  if (query === "") return "";
  return query
    .split("&")
    .map((pair) => {
      const eq = pair.indexOf("=");
      if (eq < 0) return pair;
      const raw = pair.slice(0, eq);
      let name = raw;
      try {
        name = decodeURIComponent(raw.replace(/\+/g, " "));
      } catch {
        // A malformed escape: matched as sent.
      }
      return credentialParam.test(name) ? `${raw}=[redacted]` : pair;
    })
    .join("&");
}

export function createRequestLog(log: Logger): RequestLog {
  const enabled = log.enabled("info");
  return {
    enabled,
    write(state, entry) {
      if (!enabled) return;
      const fields: LogFields = { request_id: entry.requestId, method: entry.method, route: entry.route };
      if (entry.path !== undefined) fields["path"] = entry.path;
      fields["query"] = redactQuery(entry.query);
      fields["status"] = state.status;
      // 0.01 ms resolution: enough to compare, short to read.
      fields["duration_ms"] = Math.round((performance.now() - entry.startedMs) * 100) / 100;
      fields["bytes"] = state.bytes;
      fields["aborted"] = state.aborted;
      log.info("request", fields);
    },
  };
}
