// Headers that must come once, sent twice over a raw socket: two Host
// headers (RFC 9112 §3.2: a 400) and two credential headers (Authorization,
// x-api-key) on a WebSocket upgrade. uWS's getHeader answers the first, a
// header map keeps the last, so a request would be for whichever host (or
// run as whichever key) its reader picked. Before, two Host headers were
// served. HTTP routes with two credentials: duplicate-credentials.test.ts.
import t from "tap";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";
import { parseResponse, raw } from "./raw-http.ts";

const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());
const a = await signup(troupe, "host-a");
const b = await signup(troupe, "host-b");
const created = await troupe.request("POST", "/v1/agents/conversations", { token: a.testKey, body: { system_prompt: "hi" } });
const events = `/v1/agents/conversations/${str(created.body, "id")}/events`;
const upgradeHead = "upgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n";

const request = (path: string, headers: string[]): string => `GET ${path} HTTP/1.1\r\n${headers.map((h) => `${h}\r\n`).join("")}\r\n`;

t.test("two Host headers are 400 naming the header, on routes, the files route, unknown paths and upgrades", async (t) => {
  const cases = [
    { path: "/v1/models", extra: [`authorization: Bearer ${a.testKey}`] },
    { path: "/healthz", extra: [] },
    { path: "/v1/files/file_AAAAAAAAAAAAAAAAAAAAAA", extra: [] },
    { path: "/no-such-path", extra: [] },
    { path: events, extra: [upgradeHead.trimEnd(), `authorization: Bearer ${a.testKey}`] },
  ];
  for (const c of cases) {
    const res = await raw(troupe.port, request(c.path, ["host: a.example", ...c.extra, "Host: b.example"]), 500);
    const answer = parseResponse(res.text);
    t.equal(answer.status, 400, `${c.path}: ${res.text.slice(0, 200)}`);
    t.equal(field(JSON.parse(answer.body), "error", "details", 0, "path"), "headers.host", `${c.path}: the header is named`);
    t.match(field(JSON.parse(answer.body), "error", "message"), /more than one Host header/);
    t.ok(res.closed, `${c.path}: connection closed`);
  }
  const same = await raw(troupe.port, request("/healthz", ["host: x", "host: x"]), 500);
  t.equal(parseResponse(same.text).status, 400, "even the same host twice");
  const once = await raw(troupe.port, request("/healthz", ["host: x"]), 500);
  t.equal(parseResponse(once.text).status, 200, "one Host is served");
  t.notOk(once.closed, "and the connection stays open");
});

t.test("two Authorization or two x-api-key headers on a WebSocket upgrade are 400, never 101", async (t) => {
  for (const [name, one, two] of [
    ["authorization", `Bearer ${a.testKey}`, `Bearer ${b.testKey}`],
    ["x-api-key", a.testKey, b.testKey],
    ["x-api-key", a.testKey, a.testKey],
  ] as const) {
    const res = await raw(troupe.port, request(events, ["host: x", upgradeHead.trimEnd(), `${name}: ${one}`, `${name}: ${two}`]), 500);
    const answer = parseResponse(res.text);
    t.equal(answer.status, 400, `two ${name}: ${res.text.slice(0, 200)}`);
    t.equal(field(JSON.parse(answer.body), "error", "details", 0, "path"), `headers.${name}`);
    t.notOk(res.text.includes(a.testKey) || res.text.includes(b.testKey), "no key in the answer");
  }
  const once = await raw(troupe.port, request(events, ["host: x", upgradeHead.trimEnd(), `authorization: Bearer ${a.testKey}`]), 500);
  t.equal(parseResponse(once.text).status, 101, `one credential upgrades: ${once.text.slice(0, 200)}`);
});
