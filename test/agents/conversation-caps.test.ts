// A conversation cannot grow without bound (docs/guides/access-control.md), over real
// HTTP against an embedded Troupe with small caps: a message (user content,
// tool output, system prompt) past AGENT_MESSAGE_MAX_BYTES of UTF-8 is 400
// naming the field; a message or tool outputs that would take the
// conversation past AGENT_CONVERSATION_MAX_BYTES are 409 conflict naming the
// field, and change nothing. The defaults are 256 KiB and 4 MiB.
import t from "tap";
import { loadConfig } from "../../gateway/config.ts";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";

const messageMax = 4096;
const conversationMax = 16_384;
const troupe = await startTestTroupe({ AGENT_MESSAGE_MAX_BYTES: String(messageMax), AGENT_CONVERSATION_MAX_BYTES: String(conversationMax) });
t.teardown(() => troupe.stop());
const user = await signup(troupe, "caps");
const key = user.testKey;

/** A user message of exactly `bytes` bytes the simulated model answers with a short "ok". */
const padded = (bytes: number, filler = "x") => {
  const head = "say ok; ";
  return head + filler.repeat(Math.floor((bytes - head.length) / Buffer.byteLength(filler)));
};
const create = async (body: Record<string, unknown> = {}) => {
  const res = await troupe.request("POST", "/v1/agents/conversations", { token: key, body });
  return res;
};
const post = (id: string, content: string) => troupe.request("POST", `/v1/agents/conversations/${id}/messages`, { token: key, body: { content } });

t.test("a message past the per-message cap is 400 naming the field", async (t) => {
  const id = str((await create()).body, "id");
  const atCap = await post(id, padded(messageMax));
  t.equal(atCap.status, 200, "exactly at the cap is fine");
  const over = await post(id, padded(messageMax) + "x");
  t.equal(over.status, 400);
  t.equal(field(over.body, "error", "code"), "invalid_request");
  t.match(field(over.body, "error", "details"), [{ path: "body.content", message: /4096/ }]);
  // Bytes count, not characters: 1,366 euro signs are 4,098 bytes.
  const multibyte = await post(id, "€".repeat(1366));
  t.equal(multibyte.status, 400, "characters under the cap, bytes over it");
  t.match(field(multibyte.body, "error", "details"), [{ path: "body.content" }]);
  const prompt = await create({ system_prompt: "p".repeat(messageMax + 1) });
  t.equal(prompt.status, 400);
  t.match(field(prompt.body, "error", "details"), [{ path: "body.system_prompt" }]);
  const after = await troupe.request("GET", `/v1/agents/conversations/${id}`, { token: key });
  t.equal(field(after.body, "messages", "length"), 2, "only the accepted message and its answer");
});

t.test("a full conversation refuses more with 409, and changes nothing", async (t) => {
  const id = str((await create()).body, "id");
  let accepted = 0;
  let refused: Awaited<ReturnType<typeof post>> | undefined;
  for (let i = 0; i < 10 && !refused; i++) {
    const res = await post(id, padded(3000));
    if (res.status === 200) accepted += 1;
    else refused = res;
  }
  t.ok(refused, "a message was refused");
  t.equal(refused?.status, 409);
  t.equal(field(refused?.body, "error", "code"), "conflict");
  t.match(field(refused?.body, "error", "details"), [{ path: "body.content", limit_bytes: conversationMax }]);
  t.ok(accepted >= 4 && accepted <= 5, `${accepted} messages of 3,000 bytes fit in 16 KiB`);
  const now = await troupe.request("GET", `/v1/agents/conversations/${id}`, { token: key });
  t.equal(field(now.body, "messages", "length"), accepted * 2, "the refused message was not appended");
  t.equal(field(now.body, "status"), "idle");
  t.ok(Buffer.byteLength(JSON.stringify(field(now.body, "messages"))) <= conversationMax, "the conversation stays within its cap");
  t.equal((await post(id, "say still room for a short one")).status, 200, "a message that fits is still taken");
});

t.test("tool outputs that would overfill the conversation are 409 naming outputs", async (t) => {
  const tools = [{ name: "lookup", description: "Looks a thing up", parameters: { type: "object", properties: { q: { type: "string" } } } }];
  const id = str((await create({ tools })).body, "id");
  for (let i = 0; i < 4; i++) t.equal((await post(id, padded(3000))).status, 200);
  const parked = await post(id, "call lookup; then answer");
  t.equal(field(parked.body, "status"), "requires_action");
  const messages = field(parked.body, "messages") as { tool_calls: { id: string }[] | null }[];
  const pending = (messages.at(-1)?.tool_calls ?? []).map((c) => c.id);
  t.equal(pending.length, 1, "one pending call");
  const outputs = pending.map((tool_call_id) => ({ tool_call_id, output: "o".repeat(messageMax) }));
  const full = await troupe.request("POST", `/v1/agents/conversations/${id}/tool-outputs`, { token: key, body: { outputs } });
  t.equal(full.status, 409);
  t.match(field(full.body, "error", "details"), [{ path: "body.outputs" }]);
  const still = await troupe.request("GET", `/v1/agents/conversations/${id}`, { token: key });
  t.equal(field(still.body, "status"), "requires_action", "still waiting for (smaller) outputs");
  const small = await troupe.request("POST", `/v1/agents/conversations/${id}/tool-outputs`, { token: key, body: { outputs: pending.map((tool_call_id) => ({ tool_call_id, output: "found" })) } });
  t.equal(small.status, 200, "outputs that fit are taken");
});

t.test("the defaults: 256 KiB a message, 4 MiB a conversation", async (t) => {
  const config = loadConfig({});
  t.equal(config.agents.messageMaxBytes, 256 * 1024);
  t.equal(config.agents.conversationMaxBytes, 4 * 1024 * 1024);
  t.throws(() => loadConfig({ AGENT_MESSAGE_MAX_BYTES: "10" }), /AGENT_MESSAGE_MAX_BYTES/);
});
