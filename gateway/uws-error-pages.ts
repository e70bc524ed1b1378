// The error answers uWS's C++ parser writes itself, before any JavaScript
// runs: 400 (a request it cannot parse), 431 (a request head over
// UWS_HTTP_MAX_HEADERS_SIZE) and 505 (anything but HTTP/1.1). They are
// fixed byte strings compiled into the binary, HTML pages, while every
// other Troupe error is the JSON error body. uWS offers no
// hook for them, so scripts/patch-uws-errors.ts (npm postinstall) rewrites
// the strings in the installed binaries, in place and byte for byte the
// same length: the binary stores each one's length next to its address.
// That leaves little room: the JSON is padded with trailing spaces (valid
// JSON) and the 400 has room for the code only, no message. No
// Content-Length: uWS closes the connection after these, which ends the body.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

interface ErrorPage {
  status: number;
  original: string;
  replacement: string;
}

function page(status: number, statusLine: string, original: string, body: string): ErrorPage {
  const head = `${statusLine}\r\ncontent-type:application/json\r\n\r\n`;
  const padding = original.length - head.length - body.length;
  if (padding < 0) throw new Error(`the JSON ${status} page is ${-padding} bytes longer than uWS's`);
  return { status, original, replacement: head + body + " ".repeat(padding) };
}

const footer = "<hr><i>uWebSockets/20 Server</i>";

export const uwsErrorPages: readonly ErrorPage[] = [
  page(
    505,
    "HTTP/1.1 505 HTTP Version Not Supported",
    `HTTP/1.1 505 HTTP Version Not Supported\r\nConnection: close\r\n\r\n<h1>HTTP Version Not Supported</h1><p>This server does not support HTTP/1.0.</p>${footer}`,
    '{"error":{"code":"http_version_not_supported","message":"Only HTTP/1.1 is supported."}}',
  ),
  page(
    431,
    "HTTP/1.1 431 Request Header Fields Too Large",
    `HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n<h1>Request Header Fields Too Large</h1>${footer}`,
    '{"error":{"code":"headers_too_large","message":"max 16KiB"}}',
  ),
  page(400, "HTTP/1.1 400 Bad Request", `HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n<h1>Bad Request</h1>${footer}`, '{"error":{"code":"invalid_request"}}'),
];

export type PageState = "json" | "html" | "unknown";

/** Each page is a NUL-terminated C string: matching the NUL too keeps a find from being a prefix of something longer. */
function find(binary: Buffer, text: string): number[] {
  const needle = Buffer.from(text + "\0", "latin1");
  const hits: number[] = [];
  for (let at = binary.indexOf(needle); at !== -1; at = binary.indexOf(needle, at + 1)) hits.push(at);
  return hits;
}

/** "json" when every page is patched, "html" when every page is still uWS's, "unknown" otherwise (another uWS build). */
export function pageState(binary: Buffer): PageState {
  if (uwsErrorPages.every((p) => find(binary, p.replacement).length === 1)) return "json";
  if (uwsErrorPages.every((p) => find(binary, p.original).length === 1)) return "html";
  return "unknown";
}

/**
 * The binary with the JSON pages, or undefined when it already has them.
 * Throws when a page is missing or found more than once: then this is not
 * the uWS build the patch was written for, and nothing is changed.
 */
export function patchBinary(binary: Buffer): Buffer | undefined {
  const state = pageState(binary);
  if (state === "json") return undefined;
  if (state === "unknown") throw new Error("the uWS error pages are not the expected strings (each exactly once): a different uWS build");
  const patched = Buffer.from(binary);
  for (const p of uwsErrorPages) {
    const [at] = find(patched, p.original);
    patched.write(p.replacement, at ?? 0, "latin1");
  }
  return patched;
}

/** The binary uWebSockets.js loads in this process (its own loader's naming). */
export function loadedUwsBinary(): string {
  const index = import.meta.resolve("uWebSockets.js");
  return fileURLToPath(new URL(`./bin/uws_${process.platform}_${process.arch}_${process.versions.modules}.node`, index));
}

/** Read at gateway start, to warn when the install skipped the patch. */
export function loadedPageState(): PageState {
  try {
    return pageState(readFileSync(loadedUwsBinary()));
  } catch {
    return "unknown";
  }
}
