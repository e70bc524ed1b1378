// A credential header sent twice (two Authorization headers, two x-api-key
// on the Anthropic mount): readers disagree on which one counts (uWS's
// getHeader takes the first, a header map the last), so a request could run
// as either key. It is 400 naming the header and the connection closes; one
// header of each kind is answered as usual.
import t from "tap";
import { field, signup, startTestTroupe } from "../support/troupe.ts";
import { parseResponse, raw } from "./raw-http.ts";

const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());
const a = await signup(troupe, "dup-a");
const b = await signup(troupe, "dup-b");

function get(path: string, headers: string[]): string {
  return `GET ${path} HTTP/1.1\r\nhost: x\r\n${headers.map((h) => `${h}\r\n`).join("")}\r\n`;
}

t.test("two Authorization headers are refused on routes, the files route and unknown paths", async (t) => {
  const twice = [`authorization: Bearer ${a.testKey}`, `Authorization: Bearer ${b.testKey}`];
  for (const path of ["/v1/models", "/v1/files/file_AAAAAAAAAAAAAAAAAAAAAA/content", "/no-such-path"]) {
    const res = await raw(troupe.port, get(path, twice));
    const answer = parseResponse(res.text);
    t.equal(answer.status, 400, `${path}: ${res.text.slice(0, 200)}`);
    t.equal(field(JSON.parse(answer.body), "error", "details", 0, "path"), "headers.authorization", `${path}: the header is named`);
    t.match(field(JSON.parse(answer.body), "error", "message"), /more than one Authorization header/);
    t.ok(res.closed, `${path}: connection closed`);
  }
  const same = await raw(troupe.port, get("/v1/models", [`authorization: Bearer ${a.testKey}`, `authorization: Bearer ${a.testKey}`]));
  t.equal(parseResponse(same.text).status, 400, "even the same credential twice: one header, one credential");
});

t.test("two x-api-key headers on the Anthropic mount are refused", async (t) => {
  const body = JSON.stringify({ model: "simulated-chat", max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
  const headers = [`x-api-key: ${a.testKey}`, `x-api-key: ${b.testKey}`, "anthropic-version: 2023-06-01", "content-type: application/json", `content-length: ${body.length}`];
  const res = await raw(troupe.port, `POST /anthropic/v1/messages HTTP/1.1\r\nhost: x\r\n${headers.map((h) => `${h}\r\n`).join("")}\r\n${body}`);
  const answer = parseResponse(res.text);
  t.equal(answer.status, 400, res.text.slice(0, 200));
  t.equal(field(JSON.parse(answer.body), "error", "type"), "invalid_request_error", "in the mount's own error shape");
  t.match(answer.body, /more than one x-api-key header/);
  t.ok(res.closed);
  const once = await raw(troupe.port, `POST /anthropic/v1/messages HTTP/1.1\r\nhost: x\r\n${headers.filter((h) => !h.includes(b.testKey)).map((h) => `${h}\r\n`).join("")}\r\n${body}`, 3_000);
  t.equal(parseResponse(once.text).status, 200, `one x-api-key is answered: ${once.text.slice(0, 200)}`);
});

t.test("one credential is answered as usual", async (t) => {
  const res = await raw(troupe.port, get("/v1/models", [`authorization: Bearer ${a.testKey}`]));
  t.equal(parseResponse(res.text).status, 200, res.text.slice(0, 200));
  t.notOk(res.closed, "the connection stays open");
});
