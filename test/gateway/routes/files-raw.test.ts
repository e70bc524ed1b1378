// The files route over raw sockets: the status lines carry the
// real reason phrases (uWS writes what it is given; it was "206 Status",
// "304 Status", "416 Status"), and If-Range with an ETag that is not the
// file's gets the whole file (200), never a part of what may be another.
import t from "tap";
import { startTestTroupe } from "../../support/troupe.ts";
import { parseResponse, raw } from "../raw-http.ts";

const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());
const bytes = Buffer.from(Array.from({ length: 300 }, (_, i) => 65 + (i % 26)));
const file = await troupe.services.files.put({ body: bytes, contentType: "text/plain", organizationId: "org_x", environmentId: "env_test", scope: "images" });
const get = (headers: string) => raw(troupe.port, `GET /v1/files/${file.id} HTTP/1.1\r\nhost: x\r\n${headers}\r\n`, 300);
const statusLine = (text: string) => text.slice(0, text.indexOf("\r\n"));

t.test("206, 304 and 416 carry their reason phrases", async (t) => {
  t.equal(statusLine((await get("range: bytes=0-9\r\n")).text), "HTTP/1.1 206 Partial Content");
  t.equal(statusLine((await get(`if-none-match: ${file.etag}\r\n`)).text), "HTTP/1.1 304 Not Modified");
  t.equal(statusLine((await get("range: bytes=5000-\r\n")).text), "HTTP/1.1 416 Range Not Satisfiable");
  t.equal(statusLine((await get("")).text), "HTTP/1.1 200 OK");
});

t.test("If-Range: a part only while it names the file's ETag", async (t) => {
  const matching = parseResponse((await get(`range: bytes=0-9\r\nif-range: ${file.etag}\r\n`)).text);
  t.equal(matching.status, 206, "the same ETag: the part");
  t.equal(matching.body, bytes.subarray(0, 10).toString("latin1"));
  for (const ifRange of ['"not-the-etag"', `W/${file.etag}`, "Wed, 21 Oct 2015 07:28:00 GMT"]) {
    const res = parseResponse((await get(`range: bytes=0-9\r\nif-range: ${ifRange}\r\n`)).text);
    t.equal(res.status, 200, `If-Range ${ifRange}: the whole file`);
    t.equal(res.headers["content-range"], undefined);
    t.equal(res.headers["content-length"], "300");
    t.equal(res.body, bytes.toString("latin1"));
  }
});

// An empty If-Range was read as absent (getHeader answers "" either way) and
// got the part; If-Match was not read at all; a second Range or If-Range was
// dropped in favour of the first. Now: an empty or repeated If-Range never
// matches (200, the whole file), a repeated Range is ignored (200, the whole
// file, as RFC 9110 §14.2 allows), and If-Match must name the ETag (412).
t.test("empty or repeated If-Range, repeated Range: the whole file; If-Match must hold", async (t) => {
  const whole = async (headers: string, what: string) => {
    const res = parseResponse((await get(headers)).text);
    t.equal(res.status, 200, `${what}: the whole file`);
    t.equal(res.headers["content-range"], undefined, what);
    t.equal(res.body, bytes.toString("latin1"), what);
  };
  await whole("range: bytes=0-9\r\nif-range:\r\n", "empty If-Range");
  await whole(`range: bytes=0-9\r\nif-range: ${file.etag}\r\nif-range: ${file.etag}\r\n`, "If-Range twice, even the same ETag");
  await whole(`range: bytes=0-9\r\nif-range: ${file.etag}\r\nif-range: "other"\r\n`, "If-Range twice, the first matching");
  await whole("range: bytes=0-9\r\nrange: bytes=10-19\r\n", "Range twice");
  await whole("range: bytes=5000-\r\nrange: bytes=0-9\r\n", "Range twice, the first unsatisfiable");
  for (const ifMatch of ['"not-the-etag"', `W/${file.etag}`, ""]) {
    const res = parseResponse((await get(`range: bytes=0-9\r\nif-match: ${ifMatch}\r\n`)).text);
    t.equal(res.status, 412, `If-Match ${JSON.stringify(ifMatch)}: 412`);
    t.equal((JSON.parse(res.body) as { error: { code: string } }).error.code, "precondition_failed");
    t.equal(res.headers.etag, file.etag, "the current ETag is shown");
  }
  for (const ifMatch of [file.etag, "*", `"other", ${file.etag}`]) {
    const res = parseResponse((await get(`range: bytes=0-9\r\nif-match: ${ifMatch}\r\n`)).text);
    t.equal(res.status, 206, `If-Match ${ifMatch}: holds, the part`);
  }
  const split = parseResponse((await get(`if-match: "other"\r\nif-match: ${file.etag}\r\n`)).text);
  t.equal(split.status, 200, "If-Match over two headers is one list");
  const head = parseResponse((await raw(troupe.port, `HEAD /v1/files/${file.id} HTTP/1.1\r\nhost: x\r\nif-match: "x"\r\n\r\n`, 300)).text);
  t.equal(head.status, 412, "HEAD too");
  t.equal(head.body, "", "without a body");
});
