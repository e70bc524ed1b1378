// Request body and query parsing: JSON with clear messages, zod issues
// turned into 400s that name each failing field path.
import type { z } from "zod";
import { invalidRequest, TroupeError, type FieldIssue } from "../core/errors.ts";
import { maxJsonDepth, pathAt, tooDeepAt } from "./json-depth.ts";
import { readMultipart, type UploadedFile } from "./multipart.ts";

/**
 * A 400 names what is wrong but does not echo the body back: a login body of
 * 400,000 unknown keys was answered with all of them (7 MB, twice: in the
 * message and in details), and building that answer held the event loop.
 * So an answer names at most this many unknown fields, and this many issues,
 * and counts the rest; a key or path is cut at this many characters.
 */
export const unknownFieldsNamed = 5;
export const issuesListed = 20;
const keyChars = 100;
const pathChars = 1024;

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** `unknown field(s): a, b, c, d, e and 399,995 more`. */
export function unknownFieldsMessage(keys: readonly string[]): string {
  const named = keys.slice(0, unknownFieldsNamed).map((k) => cut(k, keyChars));
  const more = keys.length - named.length;
  return `unknown field(s): ${named.join(", ")}${more > 0 ? ` and ${more.toLocaleString("en-US")} more` : ""}`;
}

export function zodIssues(error: z.ZodError, root: string): FieldIssue[] {
  const listed = error.issues.slice(0, issuesListed).map((issue): FieldIssue => {
    const path = cut([root, ...issue.path.map(String)].filter((p) => p !== "").join("."), pathChars);
    const message = issue.code === "unrecognized_keys" ? unknownFieldsMessage(issue.keys) : issue.message;
    return { path, message };
  });
  const more = error.issues.length - listed.length;
  if (more > 0) listed.push({ path: root, message: `and ${more.toLocaleString("en-US")} more issue(s)` });
  return listed;
}

export function parseWith<S extends z.ZodType>(schema: S, value: unknown, root: "body" | "query"): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw invalidRequest(zodIssues(result.error, root));
  return result.data;
}

/**
 * A lenient decode turns every invalid byte into U+FFFD, so two different
 * Latin-1 passwords (`pass\xe9`, `pass\xe8`) became the same string and
 * logged into the same account. One fatal decoder, reused: measured as fast
 * as Buffer#toString on request-sized bodies. `ignoreBOM` keeps a leading
 * BOM in the text, so JSON.parse refuses it as before.
 */
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

const jsonType = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

export function parseJsonBody(raw: Buffer, contentType: string | undefined): unknown {
  if (raw.length === 0) return undefined;
  if (contentType !== "application/json" && (!contentType || !jsonType.test(contentType))) {
    throw new TroupeError("unsupported_media_type", `the request body must be application/json, got ${contentType ? JSON.stringify(contentType) : "no content-type"}`);
  }
  const deep = tooDeepAt(raw);
  if (deep !== -1) {
    // Keys can be long: the path named in the answer is capped (1 KiB).
    let path = ["body", ...pathAt(raw, deep)].join(".");
    if (path.length > 1024) path = `${path.slice(0, 1024)}…`;
    throw invalidRequest([{ path, message: `JSON nested deeper than ${maxJsonDepth} levels` }]);
  }
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw notUtf8(raw);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : "unparseable";
    throw new TroupeError("invalid_request", `the request body is not valid JSON: ${reason}`, { details: [{ path: "body", message: "malformed JSON" }] });
  }
}

/** Only on the error path: where the first invalid sequence starts, so the 400 can say. */
function notUtf8(raw: Buffer): TroupeError {
  const at = firstInvalidUtf8(raw);
  const where = at === -1 ? "" : ` (byte 0x${(raw[at] ?? 0).toString(16).padStart(2, "0")} at offset ${at})`;
  return new TroupeError("invalid_request", `the request body is not valid UTF-8${where}`, {
    details: [{ path: "body", message: `invalid UTF-8${where}` }],
  });
}

/** Offset of the first byte that does not start a well-formed UTF-8 sequence (RFC 3629), or -1. */
function firstInvalidUtf8(raw: Uint8Array): number {
  for (let i = 0; i < raw.length; ) {
    const b = raw[i] ?? 0;
    let length: number;
    let min = 0x80; // the smallest valid second byte
    let max = 0xbf;
    if (b < 0x80) length = 1;
    else if (b >= 0xc2 && b <= 0xdf) length = 2;
    else if (b >= 0xe0 && b <= 0xef) {
      length = 3;
      if (b === 0xe0) min = 0xa0; // overlong
      if (b === 0xed) max = 0x9f; // surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      length = 4;
      if (b === 0xf0) min = 0x90; // overlong
      if (b === 0xf4) max = 0x8f; // past U+10FFFF
    } else return i;
    for (let k = 1; k < length; k++) {
      const c = raw[i + k];
      if (c === undefined || c < (k === 1 ? min : 0x80) || c > (k === 1 ? max : 0xbf)) return i;
    }
    i += length;
  }
  return -1;
}

export function parseQuery(raw: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!raw) return out;
  for (const [k, v] of new URLSearchParams(raw)) out[k] = v;
  return out;
}

export type { UploadedFile } from "./multipart.ts";

export function isUpload(value: unknown): value is UploadedFile {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "upload";
}

const multipartType = /^multipart\/form-data\s*;/i;

/** Whether a Content-Type names a multipart/form-data body. */
export function isMultipartType(contentType: string | undefined): boolean {
  return contentType !== undefined && multipartType.test(contentType);
}

/**
 * A multipart/form-data body (the OpenAI-compatible uploads) as an object:
 * text fields as strings, files as UploadedFile, read part by part within
 * the limits of multipart.ts. A field given twice is refused.
 */
export async function parseMultipartBody(raw: Buffer, contentType: string | undefined): Promise<Record<string, string | UploadedFile> | undefined> {
  if (raw.length === 0) return undefined;
  if (!contentType || !multipartType.test(contentType)) {
    throw new TroupeError("unsupported_media_type", `the request body must be multipart/form-data, got ${contentType ? JSON.stringify(contentType) : "no content-type"}`);
  }
  return readMultipart(raw, contentType);
}
