// WebSocket credentials over raw sockets. A credential comes in
// the Authorization header or, for browsers, as the subprotocol
// `bearer.<key>` offered beside `troupe.v1`. Before: `["bearer.<key>"]`
// alone was accepted and the key echoed back in Sec-WebSocket-Protocol; a
// header credential and a subprotocol credential (even of two
// organizations) were accepted together; and a plain GET without any
// credential was told 426 (upgrade) instead of 401.
import t from "tap";
import { signup, startTestTroupe, str } from "../support/troupe.ts";
import { parseResponse, raw } from "./raw-http.ts";

const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());
const a = await signup(troupe, "ws-a");
const b = await signup(troupe, "ws-b");
const created = await troupe.request("POST", "/v1/agents/conversations", { token: a.testKey, body: { system_prompt: "hi" } });
const conversation = `/v1/agents/conversations/${str(created.body, "id")}/events`;

/** An upgrade request as a browser or a hostile client would send it. */
function upgrade(path: string, { protocols, authorization, extra = "" }: { protocols?: string[]; authorization?: string; extra?: string }) {
  let head = `GET ${path} HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n`;
  if (protocols) head += `sec-websocket-protocol: ${protocols.join(", ")}\r\n`;
  if (authorization) head += `authorization: ${authorization}\r\n`;
  return raw(troupe.port, head + extra + "\r\n", 500);
}

t.test("the server selects troupe.v1, never the credential", async (t) => {
  for (const protocols of [["troupe.v1", `bearer.${a.testKey}`], [`bearer.${a.testKey}`, "troupe.v1"]]) {
    const res = await upgrade(conversation, { protocols });
    const answer = parseResponse(res.text);
    t.equal(answer.status, 101, `${protocols.join(", ")}: ${res.text.slice(0, 200)}`);
    t.equal(answer.headers["sec-websocket-protocol"], "troupe.v1");
    t.notOk(res.text.includes(a.testKey), "the key is nowhere in the answer");
  }
  const header = parseResponse((await upgrade(conversation, { authorization: `Bearer ${a.testKey}` })).text);
  t.equal(header.status, 101, "the header alone works");
  t.equal(header.headers["sec-websocket-protocol"], undefined, "no subprotocol offered, none selected");
  const other = parseResponse((await upgrade(conversation, { authorization: `Bearer ${a.testKey}`, protocols: ["chat", "troupe.v1"] })).text);
  t.equal(other.headers["sec-websocket-protocol"], "troupe.v1", "troupe.v1 whatever its place in the offer");
  const foreign = parseResponse((await upgrade(conversation, { authorization: `Bearer ${a.testKey}`, protocols: ["chat"] })).text);
  t.equal(foreign.headers["sec-websocket-protocol"], undefined, "a protocol the server does not speak is never selected");
});

t.test("a credential subprotocol without troupe.v1 is 400, and the key is not echoed", async (t) => {
  const res = await upgrade(conversation, { protocols: [`bearer.${a.testKey}`] });
  const answer = parseResponse(res.text);
  t.equal(answer.status, 400, res.text.slice(0, 300));
  t.equal(answer.headers["sec-websocket-protocol"], undefined);
  t.notOk(res.text.includes(a.testKey), "the key is nowhere in the answer");
  const body = JSON.parse(answer.body) as { error: { code: string; message: string; details: { path: string }[] } };
  t.equal(body.error.code, "invalid_request");
  t.match(body.error.message, /troupe\.v1/);
  t.equal(body.error.details[0]?.path, "headers.sec-websocket-protocol");
});

t.test("two credentials are 400, whatever they are and whoever they belong to", async (t) => {
  const cases = [
    { what: "header and subprotocol of two organizations", authorization: `Bearer ${a.testKey}`, protocols: ["troupe.v1", `bearer.${b.testKey}`] },
    { what: "header and subprotocol, the same key", authorization: `Bearer ${a.testKey}`, protocols: ["troupe.v1", `bearer.${a.testKey}`] },
    { what: "two subprotocols", protocols: ["troupe.v1", `bearer.${a.testKey}`, `bearer.${b.testKey}`] },
    // A's key then B's: a header map keeps the last, so the socket ran as B.
    { what: "two Authorization headers", authorization: `Bearer ${a.testKey}`, extra: `authorization: Bearer ${b.testKey}\r\n` },
  ];
  for (const c of cases) {
    const res = await upgrade(conversation, c);
    const answer = parseResponse(res.text);
    t.equal(answer.status, 400, `${c.what}: ${res.text.slice(0, 300)}`);
    t.match(JSON.parse(answer.body), { error: { code: "invalid_request", message: /credential/ } });
  }
});

t.test("another organization's key, offered properly, is closed with 4404, as its GET is 404", async (t) => {
  const ws = new WebSocket(`ws://127.0.0.1:${troupe.port}${conversation}`, ["troupe.v1", `bearer.${b.testKey}`]);
  const frames: string[] = [];
  ws.onmessage = (e) => frames.push(String(e.data));
  const closed = await new Promise<{ code: number; reason: string }>((resolve) => ws.addEventListener("close", (e) => resolve({ code: e.code, reason: e.reason })));
  t.equal(closed.code, 4404);
  t.match(JSON.parse(closed.reason), { code: "not_found", message: "conversation not found" });
  t.same(frames, [], "not a frame of the conversation");
});

t.test("a plain GET on a WebSocket path: 401 without a valid credential, 426 only once admitted", async (t) => {
  for (const path of [conversation, "/v1/jobs/00000000-0000-4000-8000-000000000000/events"]) {
    const plain = (authorization?: string) => raw(troupe.port, `GET ${path} HTTP/1.1\r\nhost: x\r\n${authorization ? `authorization: ${authorization}\r\n` : ""}\r\n`, 300);
    const none = parseResponse((await plain()).text);
    t.equal(none.status, 401, `${path}, no credential`);
    t.match(JSON.parse(none.body), { error: { code: "unauthorized" } });
    t.equal(parseResponse((await plain("Bearer trp_test_nottherealkeyatall000000000")).text).status, 401, `${path}, an unknown key`);
    t.equal(parseResponse((await plain(`Bearer ${a.token}`)).text).status, 403, `${path}, a session token`);
    const admitted = parseResponse((await plain(`Bearer ${a.testKey}`)).text);
    t.equal(admitted.status, 426, `${path}, a valid key`);
    t.equal(admitted.headers["upgrade"], "websocket");
  }
});

t.test("an upgrade with ambiguous framing is 400 and the connection closes", async (t) => {
  const res = await upgrade(conversation, { authorization: `Bearer ${a.testKey}`, extra: "transfer-encoding: identity\r\n" });
  t.equal(parseResponse(res.text).status, 400, res.text.slice(0, 300));
  t.ok(res.closed, "connection closed");
});

t.test("a browser-style client (the WebSocket API) connects with the two subprotocols and sees troupe.v1", async (t) => {
  const ws = new WebSocket(`ws://127.0.0.1:${troupe.port}${conversation}`, ["troupe.v1", `bearer.${a.testKey}`]);
  const first = await new Promise<string>((resolve, reject) => {
    ws.onmessage = (e) => resolve(String(e.data));
    ws.onerror = () => reject(new Error("websocket failed"));
  });
  t.equal(ws.protocol, "troupe.v1");
  t.match(JSON.parse(first), { type: "conversation" });
  ws.close();
});
