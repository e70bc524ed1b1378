// Incremental HTTP/1.1 response parser for the upstream client: fed the
// bytes of one connection as they arrive, it reports the response's head and
// body bytes and says when the response is complete. Framing follows RFC 9112
// §6.3: no body after 1xx/204/304 or a HEAD request; chunked when the last
// Transfer-Encoding coding is chunked; else Content-Length; else the body runs
// until the connection closes. Limits bound the head and chunk-size lines, so
// a broken upstream cannot make it buffer without end.

export class HttpParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HttpParseError";
  }
}

export interface ResponseHead {
  status: number;
  /** Lower-case names; repeated fields joined with ", ". */
  headers: Record<string, string>;
  /** The connection may carry another request after this response. */
  keepAlive: boolean;
}

export interface ParserEvents {
  onHead(head: ResponseHead): void;
  onBody(chunk: Buffer): void;
}

type State = "head" | "length" | "chunk-size" | "chunk-data" | "chunk-end" | "trailers" | "until-close" | "done";

const maxLineBytes = 4096;
const headEnd = Buffer.from("\r\n\r\n", "latin1");
const lineEnd = Buffer.from("\r\n", "latin1");

export class ResponseParser {
  private readonly events: ParserEvents;
  private readonly maxHeaderBytes: number;
  private readonly headRequest: boolean;
  private state: State = "head";
  /** Bytes of an unfinished head or line, kept for the next feed. */
  private pending: Buffer | undefined;
  private remaining = 0;
  private keepAlive = false;

  constructor(events: ParserEvents, opts: { maxHeaderBytes: number; headRequest: boolean }) {
    this.events = events;
    this.maxHeaderBytes = opts.maxHeaderBytes;
    this.headRequest = opts.headRequest;
  }

  get complete(): boolean {
    return this.state === "done";
  }

  /** Whether the connection can be reused (meaningful once complete). */
  get reusable(): boolean {
    return this.keepAlive;
  }

  /** True while the body is delimited by the connection closing. */
  get readsUntilClose(): boolean {
    return this.state === "until-close";
  }

  /** Throws HttpParseError on a malformed or unexpected response. */
  feed(data: Buffer): void {
    let buf = data;
    if (this.pending) {
      buf = Buffer.concat([this.pending, data]);
      this.pending = undefined;
    }
    let pos = 0;
    while (pos < buf.length) {
      switch (this.state) {
        case "head": {
          const end = buf.indexOf(headEnd, pos);
          if (end === -1 || end - pos > this.maxHeaderBytes) {
            if (buf.length - pos > this.maxHeaderBytes) throw new HttpParseError(`the response head exceeds ${this.maxHeaderBytes} bytes`);
            this.pending = buf.subarray(pos);
            return;
          }
          const head = buf.toString("latin1", pos, end);
          pos = end + 4;
          this.onHeadText(head);
          break;
        }
        case "length":
        case "chunk-data": {
          const n = Math.min(this.remaining, buf.length - pos);
          this.events.onBody(buf.subarray(pos, pos + n));
          pos += n;
          this.remaining -= n;
          if (this.remaining === 0) this.state = this.state === "length" ? "done" : "chunk-end";
          break;
        }
        case "chunk-end": {
          if (buf.length - pos < 2) {
            this.pending = buf.subarray(pos);
            return;
          }
          if (buf[pos] !== 13 || buf[pos + 1] !== 10) throw new HttpParseError("a chunk is not followed by CRLF");
          pos += 2;
          this.state = "chunk-size";
          break;
        }
        case "chunk-size":
        case "trailers": {
          const eol = buf.indexOf(lineEnd, pos);
          if (eol === -1) {
            if (buf.length - pos > maxLineBytes) throw new HttpParseError("a chunk-size or trailer line is too long");
            this.pending = buf.subarray(pos);
            return;
          }
          const line = buf.toString("latin1", pos, eol);
          pos = eol + 2;
          if (this.state === "trailers") {
            if (line === "") this.state = "done";
          } else {
            this.remaining = parseChunkSize(line);
            this.state = this.remaining === 0 ? "trailers" : "chunk-data";
          }
          break;
        }
        case "until-close":
          this.events.onBody(pos === 0 ? buf : buf.subarray(pos));
          pos = buf.length;
          break;
        case "done":
          throw new HttpParseError("the upstream sent bytes after the end of its response");
      }
    }
  }

  /** The connection closed: completes a body that runs until close; anything else unfinished throws. */
  finish(): void {
    if (this.state === "until-close") {
      this.state = "done";
      return;
    }
    if (this.state !== "done") throw new HttpParseError("the connection closed before the response ended");
  }

  private onHeadText(head: string): void {
    // Hand-rolled rather than split + regex: this runs once per upstream call.
    let eol = head.indexOf("\r\n");
    if (eol === -1) eol = head.length;
    const minor = head.charCodeAt(7);
    const status = threeDigits(head, 9);
    if (
      !head.startsWith("HTTP/1.") ||
      (minor !== 48 && minor !== 49) ||
      head.charCodeAt(8) !== 32 ||
      status < 100 ||
      (eol > 12 && head.charCodeAt(12) !== 32)
    ) {
      throw new HttpParseError(`not an HTTP/1.x status line: ${JSON.stringify(head.slice(0, Math.min(eol, 80)))}`);
    }
    const headers: Record<string, string> = {};
    let pos = eol + 2;
    while (pos < head.length) {
      let end = head.indexOf("\r\n", pos);
      if (end === -1) end = head.length;
      const colon = head.indexOf(":", pos);
      const first = head.charCodeAt(pos);
      if (colon === -1 || colon >= end || colon === pos || first === 32 || first === 9) {
        throw new HttpParseError(`malformed header line: ${JSON.stringify(head.slice(pos, Math.min(end, pos + 80)))}`);
      }
      const name = head.slice(pos, colon).trim().toLowerCase();
      const value = head.slice(colon + 1, end).trim();
      const previous = headers[name];
      headers[name] = previous === undefined ? value : `${previous}, ${value}`;
      pos = end + 2;
    }
    if (status < 200) {
      // 100 Continue, 103 Early Hints…: informational, the real head follows.
      if (status === 101) throw new HttpParseError("the upstream switched protocols, which was not asked for");
      return;
    }
    const connection = headers["connection"];
    if (minor === 49) this.keepAlive = connection === undefined || !connection.toLowerCase().includes("close");
    else this.keepAlive = connection !== undefined && connection.toLowerCase().includes("keep-alive");
    this.frame(status, headers);
    this.events.onHead({ status, headers, keepAlive: this.keepAlive });
  }

  private frame(status: number, headers: Record<string, string>): void {
    if (this.headRequest || status === 204 || status === 304) {
      this.state = "done";
      return;
    }
    const te = headers["transfer-encoding"];
    if (te !== undefined) {
      const codings = te.toLowerCase().split(",");
      // With both framings the message is suspect (RFC 9112 §6.1): read it, do not reuse the connection.
      if (headers["content-length"] !== undefined) this.keepAlive = false;
      if (codings[codings.length - 1]!.trim() === "chunked") {
        this.state = "chunk-size";
      } else {
        this.state = "until-close";
        this.keepAlive = false;
      }
      return;
    }
    const cl = headers["content-length"];
    if (cl !== undefined) {
      const values = cl.split(",").map((v) => v.trim());
      if (!values.every((v) => /^\d{1,15}$/.test(v) && v === values[0])) throw new HttpParseError(`invalid Content-Length: ${JSON.stringify(cl.slice(0, 40))}`);
      this.remaining = Number(values[0]);
      this.state = this.remaining === 0 ? "done" : "length";
      return;
    }
    this.state = "until-close";
    this.keepAlive = false;
  }
}

/** The number written in three ASCII digits at `at`, or -1. */
function threeDigits(text: string, at: number): number {
  let n = 0;
  for (let i = at; i < at + 3; i++) {
    const d = text.charCodeAt(i) - 48;
    if (!(d >= 0 && d <= 9)) return -1;
    n = n * 10 + d;
  }
  return n;
}

function parseChunkSize(line: string): number {
  const semicolon = line.indexOf(";");
  const hex = (semicolon === -1 ? line : line.slice(0, semicolon)).trim();
  if (!/^[0-9a-fA-F]{1,12}$/.test(hex)) throw new HttpParseError(`invalid chunk size: ${JSON.stringify(line.slice(0, 40))}`);
  return parseInt(hex, 16);
}
