// multipart/form-data (RFC 7578) read from a body already in memory, part by
// part, with its limits checked as it goes. The platform's FormData reader
// (undici) built every part before anyone could count them: 8.9 MB of
// 150,000 parts held the event loop 1.4–1.9 s. Here a delimiter is found
// with Buffer#indexOf (native) and the read stops at the first part past a
// limit, so a hostile body costs a bounded scan. Text fields are decoded as
// JSON bodies are, fatally: invalid UTF-8 is a 400 naming the field, not
// U+FFFD.
import { invalidRequest, TroupeError } from "../core/errors.ts";

/** A file of a multipart/form-data body. */
export interface UploadedFile {
  kind: "upload";
  bytes: Buffer;
  filename: string;
  /** As the client declared it; empty when it declared none. */
  contentType: string;
}

/**
 * Every multipart route takes at most 8 fields; 32 leaves room for clients
 * that send a few extra (refused by the route's schema, naming them).
 */
export const maxMultipartParts = 32;
/** The head of one part (Content-Disposition, Content-Type): browsers and SDKs send ~150 bytes. */
export const maxPartHeaderBytes = 8 * 1024;
/** A text field (a prompt is at most 10,000 characters); files have their routes' own limits. */
export const maxTextFieldBytes = 256 * 1024;

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const crlf = Buffer.from("\r\n");
const headEnd = Buffer.from("\r\n\r\n");

function malformed(reason: string): TroupeError {
  return new TroupeError("invalid_request", `the request body is not valid multipart/form-data: ${reason}`, { details: [{ path: "body", message: "malformed multipart body" }] });
}

/** The boundary parameter of a multipart/form-data Content-Type (1–70 characters, RFC 2046), quoted or not. */
export function boundaryOf(contentType: string): string | undefined {
  const match = /;\s*boundary\s*=\s*(?:"([^"]{1,70})"|([^\s;"]{1,70}))\s*(?:;|$)/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

interface PartHead {
  name: string;
  filename: string | undefined;
  contentType: string;
}

/** A Content-Disposition parameter: a quoted string (backslash escapes) or a token. */
function dispositionParam(value: string, param: string): string | undefined {
  const re = new RegExp(`;\\s*${param}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s"]+))`, "i");
  const match = re.exec(value);
  if (!match) return undefined;
  return match[1] !== undefined ? match[1].replace(/\\(.)/g, "$1") : match[2];
}

/** An own property even for a field named __proto__ (plain assignment would set the prototype). */
function set(out: Record<string, string | UploadedFile>, name: string, value: string | UploadedFile): void {
  Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
}

function parseHead(raw: Buffer): PartHead {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw malformed("a part's headers are not valid UTF-8");
  }
  let disposition: string | undefined;
  let contentType = "";
  for (const line of text.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) throw malformed("a part header without a name");
    const header = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (header === "content-disposition") disposition = value;
    else if (header === "content-type") contentType = value;
  }
  if (disposition === undefined || !/^form-data\s*(;|$)/i.test(disposition)) throw malformed("a part without Content-Disposition: form-data");
  const name = dispositionParam(disposition, "name");
  if (name === undefined || name === "") throw malformed("a part without a name");
  return { name, filename: dispositionParam(disposition, "filename"), contentType };
}

/**
 * The fields of a multipart/form-data body: text fields as strings, files
 * (a part with a filename) as UploadedFile. A field given twice is refused.
 * 413 past maxMultipartParts parts or a text field past maxTextFieldBytes;
 * 400 for invalid UTF-8 in a text field (naming it) or broken framing.
 */
export function readMultipart(raw: Buffer, contentType: string): Record<string, string | UploadedFile> {
  const boundary = boundaryOf(contentType);
  if (boundary === undefined) throw malformed("the Content-Type names no boundary");
  const delimiter = Buffer.from(`--${boundary}`);
  const between = Buffer.from(`\r\n--${boundary}`);
  // The first delimiter may follow a preamble; it starts the body or a line.
  let at = raw.subarray(0, delimiter.length).equals(delimiter) ? 0 : raw.indexOf(between);
  if (at === -1) throw malformed("no boundary delimiter");
  if (at > 0) at += 2;
  const out: Record<string, string | UploadedFile> = {};
  let parts = 0;
  for (;;) {
    let cursor = at + delimiter.length;
    // After a delimiter: "--" closes the body; otherwise optional whitespace and CRLF start a part.
    if (raw[cursor] === 0x2d && raw[cursor + 1] === 0x2d) return out;
    while (raw[cursor] === 0x20 || raw[cursor] === 0x09) cursor++;
    if (raw.indexOf(crlf, cursor) !== cursor) throw malformed("a boundary delimiter not followed by CRLF");
    cursor += 2;
    parts += 1;
    if (parts > maxMultipartParts) {
      throw new TroupeError("payload_too_large", `the multipart body has more than ${maxMultipartParts} parts`, {
        details: [{ path: "body", message: `more than ${maxMultipartParts} parts (the limit)` }],
      });
    }
    const headStop = raw.indexOf(headEnd, cursor);
    if (headStop === -1) throw malformed("a part's headers are not terminated");
    if (headStop - cursor > maxPartHeaderBytes) {
      throw new TroupeError("payload_too_large", `a multipart part's headers exceed ${maxPartHeaderBytes} bytes`, {
        details: [{ path: "body", message: `part headers over ${maxPartHeaderBytes} bytes (the limit)` }],
      });
    }
    const head = parseHead(raw.subarray(cursor, headStop));
    const contentStart = headStop + headEnd.length;
    const next = raw.indexOf(between, contentStart);
    if (next === -1) throw malformed("the body ends inside a part (no closing boundary)");
    const content = raw.subarray(contentStart, next);
    if (Object.hasOwn(out, head.name)) throw invalidRequest([{ path: `body.${head.name}`, message: "given more than once" }]);
    if (head.filename !== undefined) {
      set(out, head.name, { kind: "upload", bytes: Buffer.from(content), filename: head.filename, contentType: head.contentType });
    } else {
      if (content.length > maxTextFieldBytes) {
        throw new TroupeError("payload_too_large", `the multipart field ${head.name} exceeds ${maxTextFieldBytes} bytes`, {
          details: [{ path: `body.${head.name}`, message: `a text field over ${maxTextFieldBytes} bytes (the limit)` }],
        });
      }
      try {
        set(out, head.name, utf8.decode(content));
      } catch {
        throw invalidRequest([{ path: `body.${head.name}`, message: "invalid UTF-8" }]);
      }
    }
    at = next + 2;
  }
}
