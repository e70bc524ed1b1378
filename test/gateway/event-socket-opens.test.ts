// Event sockets open and get their first frame, every time, on the embedded
// host. uWebSockets.js 20.0.8 now and then closes a socket upgraded after an
// await (1006 before any frame: gateway/ws-route.ts says why); the upgrade
// now completes inside uWS's upgrade callback, and the admission that needs
// I/O and the resource check run once the socket is open. So: 500 sockets
// one after another on a valid conversation, 0 without their first frame;
// the same on the cold path (a key this replica must read from the store
// again); a refusal decided without I/O is still an HTTP answer, and one
// decided after the upgrade is a 4xxx close with the error in its reason.
import t from "tap";
import { openOneAfterAnother } from "../support/event-socket.ts";
import { signup, startTestTroupe, str, type TestTroupe } from "../support/troupe.ts";
import { parseResponse, raw } from "./raw-http.ts";

t.setTimeout(180_000);

async function conversationOf(troupe: TestTroupe, label: string) {
  const user = await signup(troupe, label);
  const created = await troupe.request("POST", "/v1/agents/conversations", { token: user.testKey, body: {} });
  const id = str(created.body, "id");
  return { user, id, url: `ws://127.0.0.1:${troupe.port}/v1/agents/conversations/${id}/events` };
}

t.test("500 sockets one after another on a warm key: 500 first frames, 0 drops", async (t) => {
  // The rate limit (600 a minute by default) is not what this counts.
  const troupe = await startTestTroupe({ DEFAULT_RATE_LIMIT_PER_MINUTE: "100000" });
  t.teardown(() => troupe.stop());
  const { user, url } = await conversationOf(troupe, "opens-warm");
  const tally = await openOneAfterAnother(url, ["troupe.v1", `bearer.${user.testKey}`], 500);
  t.comment(`embedded, warm key: ${JSON.stringify(tally)}`);
  t.equal(tally.opened, 500, "500 opened");
  t.equal(tally.firstFrames, 500, "500 got their first frame");
  t.same(tally.drops, {}, "0 drops");
});

t.test("a cold key: upgraded at once, admitted once open, 100 first frames, 0 drops", async (t) => {
  // 100 ms, the smallest window: waiting past it before each socket makes every admission read the store.
  const troupe = await startTestTroupe({ DEFAULT_RATE_LIMIT_PER_MINUTE: "100000", KEY_CACHE_REVALIDATE_MS: "100" });
  t.teardown(() => troupe.stop());
  const { user, url } = await conversationOf(troupe, "opens-cold");
  const tally = await openOneAfterAnother(url, ["troupe.v1", `bearer.${user.testKey}`], 100, () => new Promise((resolve) => setTimeout(resolve, 120)));
  t.comment(`embedded, cold key: ${JSON.stringify(tally)}`);
  t.equal(tally.firstFrames, 100, "100 got their first frame");
  t.same(tally.drops, {}, "0 drops");
});

t.test("refusals: HTTP when decided in the upgrade callback, a 4xxx close after it", async (t) => {
  const troupe = await startTestTroupe();
  t.teardown(() => troupe.stop());
  const { user, id, url } = await conversationOf(troupe, "opens-refused");
  const head = (authorization: string) =>
    `GET /v1/agents/conversations/${id}/events HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\nauthorization: ${authorization}\r\n\r\n`;

  // A warm key without the agents scope: decided from memory, answered 403 with the error body.
  const chatOnly = await troupe.request("POST", `/v1/environments/${user.developmentEnvId}/api-keys`, { token: user.token, body: { name: "chat only", scopes: ["chat"] } });
  const chatKey = str(chatOnly.body, "key");
  t.equal((await troupe.request("GET", "/v1/models", { token: chatKey })).status, 200, "the key is in this replica's cache now");
  const scoped = parseResponse((await raw(troupe.port, head(`Bearer ${chatKey}`), 300)).text);
  t.equal(scoped.status, 403);
  t.match(JSON.parse(scoped.body), { error: { code: "insufficient_scope" } });

  // An unknown key needs the store: the socket opens, then closes with 4401 and the error in its reason.
  const unknown = `${user.testKey.slice(0, -2)}zz`;
  const ws = new WebSocket(url, ["troupe.v1", `bearer.${unknown}`]);
  const frames: string[] = [];
  ws.onmessage = (e) => frames.push(String(e.data));
  const closed = await new Promise<{ code: number; reason: string }>((resolve) => ws.addEventListener("close", (e) => resolve({ code: e.code, reason: e.reason })));
  t.equal(closed.code, 4401);
  t.match(JSON.parse(closed.reason), { code: "unauthorized", message: "the API key is not valid", request_id: /^req_/ });
  t.same(frames, [], "no frame");
});
