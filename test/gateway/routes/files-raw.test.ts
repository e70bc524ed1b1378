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
