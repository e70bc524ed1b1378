// Checks on what uWS hands over before the pipeline runs: path parameters
// decoded without throwing, the URL length (414), and message framing that
// two parsers could read differently (request smuggling). The answers:
// docs/api/errors-and-limits.md, "HTTP hardening and limits".
import { TroupeError } from "../core/errors.ts";

/**
 * Path + query, in bytes as uWS hands them over (still percent-encoded).
 * uWS accepts a request head up to UWS_HTTP_MAX_HEADERS_SIZE (uws-settings.ts,
 * 16 KiB) and answers 431 beyond it; a longer URL than this gets 414 here.
 */
export const maxUrlBytes = 8 * 1024;

/**
 * decodeURIComponent throws on a malformed escape (`%ff`, a cut UTF-8
 * sequence): thrown from a uWS callback that ended the process. A bad
 * escape is the client's mistake, so it is a 400 naming the parameter.
 */
export function decodePathParam(name: string, raw: string): string {
  if (!raw.includes("%")) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new TroupeError("invalid_request", `path parameter ${name} is not valid percent-encoded UTF-8`, {
      details: [{ path: `path.${name}`, message: "malformed percent-escape" }],
    });
  }
}

export function uriTooLong(url: string, query: string): TroupeError | undefined {
  const length = url.length + query.length;
  if (length <= maxUrlBytes) return undefined;
  return new TroupeError("uri_too_long", `the request URL is ${length} bytes; the limit is ${maxUrlBytes}`, { details: { max_bytes: maxUrlBytes } });
}

const digits = /^\d+$/;

/** Why a request's body framing is refused, and which header is at fault. */
export interface FramingProblem {
  header: "content-length" | "transfer-encoding" | "host" | CredentialHeader;
  message: string;
}

/** The headers a credential may come in (Anthropic's x-api-key, Google's x-goog-api-key, beside Authorization). */
const credentialHeaders = ["authorization", "x-api-key", "x-goog-api-key"] as const;
type CredentialHeader = (typeof credentialHeaders)[number];

function isCredentialHeader(name: string): name is CredentialHeader {
  return (credentialHeaders as readonly string[]).includes(name);
}

/**
 * A credential header sent twice: uWS's getHeader answers the first, a
 * header map keeps the last, a proxy may pass either on, so which key a
 * request ran as would depend on who read it. Refused like ambiguous
 * framing (as two credentials on a WebSocket upgrade are). Two Host
 * headers are refused the same way: RFC 9112 §3.2 makes them a 400, and
 * which host a request was for would again depend on the reader.
 */
export function credentialConflict(name: string, seen: Readonly<Record<string, string>>): FramingProblem | undefined {
  if (name === "host") return seen.host === undefined ? undefined : { header: "host", message: "more than one Host header" };
  if (!isCredentialHeader(name) || seen[name] === undefined) return undefined;
  return { header: name, message: `more than one ${name === "authorization" ? "Authorization" : name} header: send one credential` };
}

/**
 * uWS frames a body by the first Content-Length it sees, and reads any
 * Transfer-Encoding at all (`identity`, `gzip`, `chunked, identity`, a
 * second header) as chunked; a proxy in front may take another reading, and
 * then the bytes one reads as body the other reads as a second request. So
 * any framing two parsers could disagree on is refused: Content-Length twice
 * with different values, a value that is not plain digits, Content-Length
 * together with Transfer-Encoding, and any Transfer-Encoding but exactly one
 * header whose value is `chunked` (transfer-coding names are
 * case-insensitive, RFC 9112 §7). Called for Content-Length and
 * Transfer-Encoding headers only, with the headers seen before this one.
 */
export function framingConflict(name: string, value: string, seen: Readonly<Record<string, string>>): FramingProblem | undefined {
  const length = seen["content-length"];
  if (name === "transfer-encoding") {
    if (seen["transfer-encoding"] !== undefined) return { header: "transfer-encoding", message: "more than one Transfer-Encoding header" };
    if (value.toLowerCase() !== "chunked") return { header: "transfer-encoding", message: `Transfer-Encoding ${JSON.stringify(value)}: only chunked is accepted` };
    return length === undefined ? undefined : { header: "transfer-encoding", message: "Content-Length together with Transfer-Encoding" };
  }
  if (length !== undefined && length !== value) return { header: "content-length", message: `conflicting Content-Length headers (${length}, ${value})` };
  if (seen["transfer-encoding"] !== undefined) return { header: "content-length", message: "Content-Length together with Transfer-Encoding" };
  if (!digits.test(value)) return { header: "content-length", message: `malformed Content-Length ${JSON.stringify(value)}` };
  return undefined;
}

export function framingError(problem: FramingProblem): TroupeError {
  const what = isCredentialHeader(problem.header)
    ? "the request's credential is ambiguous"
    : problem.header === "host"
      ? "the request's target host is ambiguous"
      : "the request framing is ambiguous";
  return new TroupeError("invalid_request", `${problem.message}: ${what}; the connection is closed`, {
    details: [{ path: `headers.${problem.header}`, message: problem.message }],
  });
}
