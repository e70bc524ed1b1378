// An agent turn's model calls read the sending key's allowlist at each call
// (tenancy/key-model-filter.ts), over real sockets: a PATCH applies to the
// key's next turn, both ways, and keys sharing an allowlist each keep it.
// Which provider was reached is checked at the fakes.
import t from "tap";
import { startFakeProviders } from "../support/fake-providers.ts";
import { field, signup, str, startTestTroupe } from "../support/troupe.ts";

t.setTimeout(120_000);
const providers = await startFakeProviders(["openai", "anthropic"]);
const { openai } = providers.fakes;
const troupe = await startTestTroupe({}, { router: providers.router });
t.teardown(async () => {
  await troupe.stop();
  await providers.close();
});
const owner = await signup(troupe, "turn-allowlist");

async function keyWith(body: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const res = await troupe.request("POST", `/v1/environments/${owner.developmentEnvId}/api-keys`, { token: owner.token, body: { name: "turns", ...body } });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
  return { id: str(res.body, "id"), key: str(res.body, "key") };
}

async function gptConversation(key: string): Promise<string> {
  const created = await troupe.request("POST", "/v1/agents/conversations", { token: key, body: { model: "gpt-4.1", routing_strategy: "manual" } });
  if (created.status !== 201) throw new Error(`conversation: ${created.status} ${created.text}`);
  return str(created.body, "id");
}

async function turn(key: string, conversation: string): Promise<{ status: number; code: unknown; openai: number }> {
  const seen = openai.requests.length;
  const res = await troupe.request("POST", `/v1/agents/conversations/${conversation}/messages`, { token: key, body: { content: "hello" } });
  return { status: res.status, code: res.status === 200 ? undefined : field(res.body, "error", "code"), openai: openai.requests.length - seen };
}

t.test("a PATCH of the key's models applies to its next turn, and back", async (t) => {
  const { id, key } = await keyWith({});
  const conversation = await gptConversation(key);
  const open = await turn(key, conversation);
  t.equal(open.status, 200, "every model: the gpt-4.1 turn runs");
  t.ok(open.openai >= 1);

  t.equal((await troupe.request("PATCH", `/v1/api-keys/${id}`, { token: owner.token, body: { models: ["claude-*"] } })).status, 200);
  const limited = await turn(key, conversation);
  t.equal(limited.status, 403, "the next turn is refused at once");
  t.equal(limited.code, "model_not_allowed");
  t.equal(limited.openai, 0, "openai was never called");

  t.equal((await troupe.request("PATCH", `/v1/api-keys/${id}`, { token: owner.token, body: { models: ["gpt-4.1*"] } })).status, 200);
  t.equal((await turn(key, conversation)).status, 200, "a glob that admits gpt-4.1 lets the next turn run");

  t.equal((await troupe.request("PATCH", `/v1/api-keys/${id}`, { token: owner.token, body: { models: null } })).status, 200);
  t.equal((await turn(key, conversation)).status, 200, "null again: every model");
});

t.test("keys with the same allowlist each keep it when one of them changes", async (t) => {
  const first = await keyWith({ models: ["claude-*"] });
  const second = await keyWith({ models: ["claude-*"] });
  const conversation = await gptConversation((await keyWith({})).key);
  t.equal((await turn(first.key, conversation)).status, 403);
  t.equal((await turn(second.key, conversation)).status, 403);
  t.equal((await troupe.request("PATCH", `/v1/api-keys/${first.id}`, { token: owner.token, body: { models: ["gpt-4.1", "claude-*"] } })).status, 200);
  t.equal((await turn(first.key, conversation)).status, 200, "the changed key reaches gpt-4.1");
  const other = await turn(second.key, conversation);
  t.equal(other.status, 403, "the other key's list is unchanged");
  t.equal(other.openai, 0);
});
