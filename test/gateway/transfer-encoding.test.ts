// Transfer-Encoding over raw sockets. uWS reads any
// Transfer-Encoding header at all as chunked — `identity`, `gzip`,
// `chunked, identity`, two headers — while a proxy in front may read the
// same bytes another way (a desync, request smuggling). Anything but exactly
// one `Transfer-Encoding: chunked` is 400 and the connection closes.
import t from "tap";
import { field, startTestTroupe } from "../support/troupe.ts";
import { parseResponse, raw } from "./raw-http.ts";

const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());

const chunked = (text: string) => `${text.length.toString(16)}\r\n${text}\r\n0\r\n\r\n`;
const login = chunked('{"email":"nobody@example.test","password":"wrong password"}');
const smuggled = "GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n";
const refused = ["identity", "chunked, identity", "gzip, chunked", "gzip", "chunked\r\ntransfer-encoding: chunked", "chunked\r\nTransfer-Encoding: identity", "identity\r\ntransfer-encoding: chunked"];

t.test("any Transfer-Encoding but one `chunked` is 400 naming the header, the connection closes, nothing behind it is served", async (t) => {
  for (const te of refused) {
    const head = `POST /v1/auth/login HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: ${te}\r\n\r\n`;
    const alone = await raw(troupe.port, head + login);
    const res = parseResponse(alone.text);
    t.equal(res.status, 400, `${JSON.stringify(te)}: ${alone.text}`);
    t.equal(res.headers["content-type"], "application/json");
    t.equal(res.headers["connection"], "close");
    t.equal(field(JSON.parse(res.body), "error", "code"), "invalid_request");
    t.equal(field(JSON.parse(res.body), "error", "details", 0, "path"), "headers.transfer-encoding");
    t.match(field(JSON.parse(res.body), "error", "message"), /Transfer-Encoding/);
    t.ok(alone.closed, "connection closed");

    const attack = await raw(troupe.port, head + login + smuggled);
    t.notMatch(attack.text, /200 OK/, `${JSON.stringify(te)}: the request behind it is not served`);
    t.ok(attack.closed, "connection closed");
  }
});

t.test("the same on paths outside the JSON routes: health, the files route, unknown paths", async (t) => {
  for (const path of ["/healthz", "/v1/files/file_AAAAAAAAAAAAAAAAAAAAAA", "/no-such-path"]) {
    const res = await raw(troupe.port, `GET ${path} HTTP/1.1\r\nhost: x\r\ntransfer-encoding: identity\r\n\r\n0\r\n\r\n`);
    const answer = parseResponse(res.text);
    t.equal(answer.status, 400, `${path}: ${res.text}`);
    t.equal(field(JSON.parse(answer.body), "error", "details", 0, "path"), "headers.transfer-encoding");
    t.ok(res.closed, `${path}: connection closed`);
  }
});

t.test("exactly one `Transfer-Encoding: chunked` (any case) is read and answered, and the connection stays open", async (t) => {
  for (const te of ["chunked", "Chunked"]) {
    const res = await raw(troupe.port, `POST /v1/auth/login HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: ${te}\r\n\r\n${login}`, 2_000);
    const answer = parseResponse(res.text);
    t.equal(answer.status, 401, `${te}: the body was read (wrong password): ${res.text}`);
    t.notOk(res.closed, "connection kept open");
  }
});
