// The agent suite on the embedded host, plus what only a single process
// shows easily: live events over the WebSocket, scopes, and a process kill
// mid-turn leaving no stuck status.
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { freePort, waitFor } from "../support/net.ts";
import { field, request, signup, startTestTroupe, str } from "../support/troupe.ts";
import { agentSuite } from "./agent-suite.ts";
import { openEventSocket } from "../support/event-socket.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { embeddedEnv } from "../support/gateway-process.ts";

const usage: UsageRecord[] = [];
const troupe = await startTestTroupe({}, { usage: { record: (u) => void usage.push(u) } });
t.teardown(() => troupe.stop());
const a = await signup(troupe, "agent-a");
const b = await signup(troupe, "agent-b");
agentSuite(t, { at: () => troupe.request, keyA: a.testKey, keyB: b.testKey });

t.test("scopes: agents routes need the agents scope", async (t) => {
  const key = await troupe.request("POST", `/v1/environments/${a.developmentEnvId}/api-keys`, { token: a.token, body: { name: "chat only", scopes: ["chat"] } });
  const res = await troupe.request("POST", "/v1/agents/conversations", { token: str(key.body, "key"), body: {} });
  t.equal(res.status, 403);
  t.equal(field(res.body, "error", "code"), "insufficient_scope");
});

t.test("every model call of a turn is a usage record of the calling key", async (t) => {
  const created = await troupe.request("POST", "/v1/agents/conversations", { token: a.testKey, body: {} });
  const id = str(created.body, "id");
  const before = usage.length;
  const res = await troupe.request("POST", `/v1/agents/conversations/${id}/messages`, { token: a.testKey, body: { content: "remember: usage is tracked; then answer" } });
  t.equal(res.status, 200);
  const all = usage.slice(before);
  t.equal(all.filter((r) => r.category === "embeddings").length, 1, "the remember tool's embedding is billed too");
  const records = all.filter((r) => r.category === "agents");
  t.equal(records.length, 2, "two model steps, two records");
  t.equal(new Set(all.map((r) => r.usage_key)).size, 3, "each billed call has its own ledger key");
  t.ok(records.every((r) => r.category === "agents" && r.organization_id === a.orgId && r.live === false && r.provider === "simulated"), JSON.stringify(records[0]));
  t.ok(records.every((r) => r.request_id === res.headers.get("x-request-id")), "records carry the request id");
  t.ok(records.every((r) => r.input_tokens > 0 && r.output_tokens >= 0));
});

t.test("live events over the WebSocket", async (t) => {
  const created = await troupe.request("POST", "/v1/agents/conversations", { token: a.testKey, body: {} });
  const id = str(created.body, "id");
  const { ws, frames } = await openEventSocket<{ type: string; status?: string; message?: { role: string } }>(
    `ws://127.0.0.1:${troupe.port}/v1/agents/conversations/${id}/events`,
    ["troupe.v1", `bearer.${a.testKey}`],
  );
  t.equal(frames[0]?.type, "conversation", "first frame is the conversation");
  await troupe.request("POST", `/v1/agents/conversations/${id}/messages`, { token: a.testKey, body: { content: "remember: websockets work; then answer" } });
  await waitFor(async () => frames.filter((f) => f.type === "message.appended").length >= 4, 5000, "message events");
  t.same(
    frames.filter((f) => f.type === "message.appended").map((f) => f.message?.role),
    ["user", "assistant", "tool", "assistant"],
    "each appended message is pushed in order",
  );
  ws.close();

  const refused = await openEventSocket<unknown>(`ws://127.0.0.1:${troupe.port}/v1/agents/conversations/${id}/events`, ["troupe.v1", `bearer.${b.testKey}`]);
  t.equal((await refused.closing).code, 4404, "another organization cannot listen: closed as not found");
  t.same(refused.frames, [], "not a frame of the conversation");
});

t.test("a process killed mid-turn leaves the conversation usable", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "troupe-kill-agent-"));
  const port = await freePort();
  const env = { ...embeddedEnv(), PORT: String(port), HOST: "127.0.0.1", TROUPE_DATA_DIR: dataDir, LOG_LEVEL: "warn", SIMULATED_LATENCY_MS: "1500" };
  const main = join(import.meta.dirname, "../../gateway/main.ts");
  const base = `http://127.0.0.1:${port}`;
  let child = spawn(process.execPath, [main], { env, stdio: "ignore" });
  await waitFor(async () => (await fetch(`${base}/readyz`)).ok, 20_000, "troupe to start");
  const user = await signup({ request: (m, p, o) => request(base, m, p, o) }, "kill");
  const created = await request(base, "POST", "/v1/agents/conversations", { token: user.testKey, body: {} });
  const id = str(created.body, "id");
  const midTurn = request(base, "POST", `/v1/agents/conversations/${id}/messages`, { token: user.testKey, body: { content: "say never delivered" } }).catch(() => "connection lost");
  await new Promise((r) => setTimeout(r, 500));
  child.kill("SIGKILL");
  t.equal(await midTurn, "connection lost", "the client sees the failure");
  await new Promise((r) => child.once("exit", r));
  child = spawn(process.execPath, [main], { env: { ...env, SIMULATED_LATENCY_MS: "0" }, stdio: "ignore" });
  t.teardown(() => void child.kill("SIGTERM"));
  await waitFor(async () => (await fetch(`${base}/readyz`)).ok, 20_000, "troupe to restart");
  const after = await request(base, "GET", `/v1/agents/conversations/${id}`, { token: user.testKey });
  t.equal(after.status, 200);
  t.equal(field(after.body, "status"), "idle", "not stuck: the interrupted turn never committed");
  t.same(field(after.body, "messages"), [], "the turn is atomic: nothing half-written");
  const retry = await request(base, "POST", `/v1/agents/conversations/${id}/messages`, { token: user.testKey, body: { content: "say delivered now" } });
  t.equal(retry.status, 200);
  t.equal(field(retry.body, "messages", 1, "content"), "delivered now");
});
