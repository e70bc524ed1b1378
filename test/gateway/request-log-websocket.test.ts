// WebSocket routes in the request log, over real sockets: a conversation's
// event socket leaves one entry when it closes — the route's template,
// status 101, its close code, how long it was open and the payload bytes
// each way — as an HTTP call does when it ends; a socket refused once open
// (another organization's conversation, 4404) leaves one with its code; an
// upgrade whose credential is refused has no key and leaves none.
import t from "tap";
import { eventually } from "../support/billing.ts";
import { openEventSocket } from "../support/event-socket.ts";
import { field, signup, str, startTestTroupe } from "../support/troupe.ts";

t.setTimeout(60_000);
const troupe = await startTestTroupe();
t.teardown(() => troupe.stop());
const owner = await signup(troupe, "ws-log");
const stranger = await signup(troupe, "ws-log-other");
const wsBase = `ws://127.0.0.1:${troupe.port}`;
const route = "/v1/agents/conversations/:id/events";

const created = await troupe.request("POST", "/v1/agents/conversations", { token: owner.testKey, body: { model: "simulated-chat", system_prompt: "hi" } });
const conversationId = str(created.body, "id");
const entries = async (token: string, projectId: string) => {
  const page = await troupe.request("GET", `/v1/projects/${projectId}/requests?limit=200`, { token });
  return ((field(page.body, "data") as Record<string, unknown>[] | undefined) ?? []).filter((e) => e["route"] === route);
};

t.test("a closed socket: one entry with its close code, duration and bytes", async (t) => {
  const socket = await openEventSocket<unknown>(`${wsBase}/v1/agents/conversations/${conversationId}/events`, ["troupe.v1", `bearer.${owner.testKey}`]);
  t.equal(socket.frames.length, 1, "the snapshot frame");
  const sent = "a client frame the stream ignores";
  socket.ws.send(sent);
  await new Promise((r) => setTimeout(r, 50));
  socket.ws.close(1000, "done");
  t.equal(await socket.closed, 1000);
  const found = await eventually(() => entries(owner.token, owner.projectId), (e) => e.length >= 1);
  t.equal(found.length, 1, "one entry per socket");
  const entry = found[0];
  t.match(entry, { method: "GET", route, status: 101, error_code: null, input_tokens: 0, cost_usd: 0 });
  const ws = field(entry, "websocket");
  t.equal(field(ws, "close_code"), 1000);
  t.equal(field(ws, "bytes_in"), Buffer.byteLength(sent), "the client's frame");
  t.equal(field(ws, "bytes_out"), Buffer.byteLength(JSON.stringify(socket.frames[0])), "the snapshot frame's bytes");
  t.ok(Number(field(entry, "latency_ms")) >= 50, `open ${String(field(entry, "latency_ms"))} ms`);
  t.ok(Number(field(entry, "ttfb_ms")) <= Number(field(entry, "latency_ms")), "upgraded before it closed");
  const one = await troupe.request("GET", `/v1/projects/${owner.projectId}/requests/${String(field(entry, "request_id"))}`, { token: owner.token });
  t.match(one.body, { route, status: 101, websocket: { close_code: 1000 }, content: null });
  const http = (await troupe.request("GET", `/v1/projects/${owner.projectId}/requests?limit=200`, { token: owner.token })).body;
  const chatEntry = (field(http, "data") as Record<string, unknown>[]).find((e) => e["route"] === "/v1/agents/conversations");
  t.equal(field(chatEntry, "websocket"), null, "an HTTP call's entry has no socket figures");
});

t.test("refused once open: the entry has the close code and the error", async (t) => {
  const refused = await openEventSocket<unknown>(`${wsBase}/v1/agents/conversations/${conversationId}/events`, ["troupe.v1", `bearer.${stranger.testKey}`]);
  t.equal(await refused.closed, 4404, "another organization's conversation");
  const found = await eventually(() => entries(stranger.token, stranger.projectId), (e) => e.length >= 1);
  t.equal(found.length, 1);
  t.match(found[0], { status: 101, error_code: "not_found", websocket: { close_code: 4404, bytes_in: 0, bytes_out: 0 } });
});

t.test("a refused credential: no key, no entry", async (t) => {
  const before = (await entries(owner.token, owner.projectId)).length;
  await t.rejects(openEventSocket<unknown>(`${wsBase}/v1/agents/conversations/${conversationId}/events`, ["troupe.v1", "bearer.tk_not_a_key"]));
  await new Promise((r) => setTimeout(r, 700));
  t.equal((await entries(owner.token, owner.projectId)).length, before);
});

t.test("an upgrade refused by the key's rate limit leaves an entry under the key", async (t) => {
  const made = await troupe.request("POST", `/v1/environments/${owner.developmentEnvId}/api-keys`, { token: owner.token, body: { name: "limited", rate_limit_per_minute: 1 } });
  t.equal(made.status, 201, made.text);
  const key = str(made.body, "key");
  const keyId = str(made.body, "id");
  const url = `${wsBase}/v1/agents/conversations/${conversationId}/events`;
  const first = await openEventSocket<unknown>(url, ["troupe.v1", `bearer.${key}`]);
  first.ws.close(1000);
  await first.closed;
  // The second is over the limit: refused with 429 before the upgrade (or closed with 4429 when the check needed I/O).
  await openEventSocket<unknown>(url, ["troupe.v1", `bearer.${key}`]).then((s) => s.closed).catch(() => undefined);
  const found = await eventually(
    async () => (await entries(owner.token, owner.projectId)).filter((e) => e["api_key_id"] === keyId),
    (e) => e.length >= 2,
  );
  t.equal(found.length, 2, "the socket and the refusal");
  const refused = found.find((e) => e["error_code"] === "rate_limited");
  t.ok(refused, "the refusal's entry");
  if (field(refused, "websocket") === null) t.equal(field(refused, "status"), 429, "refused before the upgrade: its HTTP status, no socket figures");
  else t.equal(field(refused, "websocket", "close_code"), 4429);
});
