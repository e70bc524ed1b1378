// HTTP status lines for uWS's writeStatus, shared by the public gateway and
// the actor callback server. uWS writes the string as given after
// "HTTP/1.1 ", so it must carry the reason phrase: a bare or made-up one
// ("206 Status") is what clients and proxies log and some show.
import { STATUS_CODES } from "node:http";

const statusText: Record<number, string> = {
  101: "101 Switching Protocols",
  200: "200 OK",
  201: "201 Created",
  202: "202 Accepted",
  204: "204 No Content",
  206: "206 Partial Content",
  304: "304 Not Modified",
  400: "400 Bad Request",
  401: "401 Unauthorized",
  402: "402 Payment Required",
  403: "403 Forbidden",
  404: "404 Not Found",
  405: "405 Method Not Allowed",
  409: "409 Conflict",
  413: "413 Payload Too Large",
  414: "414 URI Too Long",
  415: "415 Unsupported Media Type",
  416: "416 Range Not Satisfiable",
  426: "426 Upgrade Required",
  429: "429 Too Many Requests",
  431: "431 Request Header Fields Too Large",
  500: "500 Internal Server Error",
  502: "502 Bad Gateway",
  503: "503 Service Unavailable",
  504: "504 Gateway Timeout",
  505: "505 HTTP Version Not Supported",
};

/** Any other status gets Node's reason phrase (RFC 9110's), remembered. */
export function statusLine(status: number): string {
  const known = statusText[status];
  if (known) return known;
  const phrase = STATUS_CODES[status];
  if (!phrase) return `${status} Unknown`;
  return (statusText[status] = `${status} ${phrase}`);
}
