import t from "tap";
import { HttpParseError, ResponseParser, type ResponseHead } from "../../../providers/http1/response-parser.ts";
import { seededRandom } from "../../support/seeded-random.ts";

interface Parsed {
  heads: ResponseHead[];
  body: string;
  parser: ResponseParser;
}

function parserFor(headRequest = false): Parsed {
  const out: Parsed = { heads: [], body: "", parser: undefined as unknown as ResponseParser };
  out.parser = new ResponseParser(
    { onHead: (h) => out.heads.push(h), onBody: (chunk) => (out.body += chunk.toString("latin1")) },
    { maxHeaderBytes: 1024, headRequest },
  );
  return out;
}

/** Feeds `wire` in pieces cut at random places (seeded), as TCP may deliver it. */
function feedInPieces(p: ResponseParser, wire: string, seed: number): void {
  const random = seededRandom(seed);
  const bytes = Buffer.from(wire, "latin1");
  let pos = 0;
  while (pos < bytes.length) {
    const n = 1 + Math.floor(random() * 7);
    p.feed(bytes.subarray(pos, pos + n));
    pos += n;
  }
}

t.test("Content-Length body, fed in every kind of split, is complete and reusable", async (t) => {
  const wire = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\nX-Twice: a\r\nx-twice: b\r\n\r\n{\"ok\":true}";
  for (const seed of [1, 2, 3, 4, 5]) {
    const p = parserFor();
    feedInPieces(p.parser, wire, seed);
    t.equal(p.heads.length, 1);
    t.equal(p.heads[0]!.status, 200);
    t.equal(p.heads[0]!.headers["content-type"], "application/json", "names are lower-cased");
    t.equal(p.heads[0]!.headers["x-twice"], "a, b", "repeated fields are joined");
    t.equal(p.body, '{"ok":true}');
    t.ok(p.parser.complete);
    t.ok(p.parser.reusable);
  }
});

t.test("chunked body with extensions and trailers", async (t) => {
  const wire = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: yes\r\n\r\n";
  for (const seed of [7, 8, 9]) {
    const p = parserFor();
    feedInPieces(p.parser, wire, seed);
    t.equal(p.body, "hello 0123456789");
    t.ok(p.parser.complete);
    t.ok(p.parser.reusable);
  }
  const partial = parserFor();
  partial.parser.feed(Buffer.from("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"));
  t.equal(partial.body, "hel", "body bytes are delivered as they arrive");
  t.notOk(partial.parser.complete);
  t.throws(() => partial.parser.finish(), HttpParseError, "a close mid-chunk is an error");
});

t.test("a body without length runs until close and the connection is not reused", async (t) => {
  const p = parserFor();
  p.parser.feed(Buffer.from("HTTP/1.1 200 OK\r\n\r\nfirst "));
  p.parser.feed(Buffer.from("second"));
  t.ok(p.parser.readsUntilClose);
  t.notOk(p.parser.complete);
  p.parser.finish();
  t.ok(p.parser.complete);
  t.notOk(p.parser.reusable);
  t.equal(p.body, "first second");
});

t.test("bodiless responses: 204, 304, HEAD; informational heads are skipped", async (t) => {
  for (const wire of ["HTTP/1.1 204 No Content\r\n\r\n", "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n"]) {
    const p = parserFor();
    p.parser.feed(Buffer.from(wire));
    t.ok(p.parser.complete, wire.slice(0, 12));
    t.equal(p.body, "");
  }
  const head = parserFor(true);
  head.parser.feed(Buffer.from("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"));
  t.ok(head.parser.complete, "a HEAD answer has no body whatever its Content-Length");
  const info = parserFor();
  info.parser.feed(Buffer.from("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"));
  t.same(info.heads.map((h) => h.status), [201]);
  t.equal(info.body, "ok");
});

t.test("keep-alive follows the version and Connection", async (t) => {
  const cases: [string, boolean][] = [
    ["HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true],
    ["HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false],
    ["HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false],
    ["HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", true],
    ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n", false],
  ];
  for (const [wire, reusable] of cases) {
    const p = parserFor();
    p.parser.feed(Buffer.from(wire));
    t.ok(p.parser.complete);
    t.equal(p.parser.reusable, reusable, wire.split("\r\n").slice(0, 2).join(" | "));
  }
});

t.test("malformed answers are HttpParseErrors, never a hang or a silent short body", async (t) => {
  const bad: [string, RegExp][] = [
    ["HTTP/2 200 OK\r\n\r\n", /status line/],
    ["SSH-2.0-OpenSSH\r\n\r\n", /status line/],
    ["HTTP/1.1 1e2 Exponent\r\n\r\n", /status line/],
    ["HTTP/1.1 2000 Long\r\n\r\n", /status line/],
    ["HTTP/1.1 200 OK\r\nFolded: a\r\n b\r\n\r\n", /malformed header/],
    ["HTTP/1.1 200 OK\r\nno colon\r\n\r\n", /malformed header/],
    ["HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n", /Content-Length/],
    ["HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", /Content-Length/],
    ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", /chunk size/],
    ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY", /CRLF/],
    ["HTTP/1.1 101 Switching Protocols\r\n\r\n", /switched protocols/],
    ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA", /after the end/],
    [`HTTP/1.1 200 OK\r\nX-Big: ${"x".repeat(2000)}\r\n\r\n`, /exceeds 1024 bytes/],
    [`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${"1".repeat(5000)}`, /too long/],
  ];
  for (const [wire, message] of bad) {
    const p = parserFor();
    t.throws(() => p.parser.feed(Buffer.from(wire)), message, JSON.stringify(wire.slice(0, 40)));
  }
  const unfinished = parserFor();
  unfinished.parser.feed(Buffer.from("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"));
  t.throws(() => unfinished.parser.finish(), /closed before the response ended/);
});
