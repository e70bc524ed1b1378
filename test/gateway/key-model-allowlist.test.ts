// A key's model allowlist over real sockets (docs/guides/access-control.md):
// set at creation and by PATCH, shown in the key record, and no way around
// it — not by naming a model, not by an auto fallback, not by cost/latency
// routing or model: null, not through /v1, /openai/v1 or /anthropic, and not
// through an agent turn. Which provider was reached is checked at the fakes.
import t from "tap";
import { startFakeProviders } from "../support/fake-providers.ts";
import { field, signup, str, startTestTroupe, type TestResponse } from "../support/troupe.ts";

t.setTimeout(120_000);
const providers = await startFakeProviders(["openai", "anthropic"]);
const { openai, anthropic } = providers.fakes;
const troupe = await startTestTroupe({}, { router: providers.router });
t.teardown(async () => {
  await troupe.stop();
  await providers.close();
});
const owner = await signup(troupe, "allowlist");

async function keyWith(body: Record<string, unknown>): Promise<{ id: string; key: string; record: TestResponse }> {
  const res = await troupe.request("POST", `/v1/environments/${owner.developmentEnvId}/api-keys`, { token: owner.token, body: { name: "limited", ...body } });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
  return { id: str(res.body, "id"), key: str(res.body, "key"), record: res };
}

const say = (extra: Record<string, unknown>) => ({ messages: [{ role: "user", content: "hello" }], ...extra });

/** Requests each fake received while `run` ran. */
async function reached<T>(run: () => Promise<T>): Promise<{ value: T; openai: number; anthropic: number }> {
  const before = { openai: openai.requests.length, anthropic: anthropic.requests.length };
  const value = await run();
  return { value, openai: openai.requests.length - before.openai, anthropic: anthropic.requests.length - before.anthropic };
}

function resetFaults(): void {
  openai.faults.queue = [];
  openai.faults.failureRate = 0;
  anthropic.faults.queue = [];
  anthropic.faults.failureRate = 0;
}

t.test("the key record carries models and max_concurrent; create and PATCH validate them", async (t) => {
  const { id, record } = await keyWith({ models: ["gpt-4.1*", "tier:small"], max_concurrent: 3 });
  t.same(field(record.body, "models"), ["gpt-4.1*", "tier:small"]);
  t.equal(field(record.body, "max_concurrent"), 3);
  const plain = await keyWith({});
  t.equal(field(plain.record.body, "models"), null, "no allowlist: every model");
  t.equal(field(plain.record.body, "max_concurrent"), null);

  const badTier = await troupe.request("POST", `/v1/environments/${owner.developmentEnvId}/api-keys`, { token: owner.token, body: { name: "x", models: ["tier:huge"] } });
  t.equal(badTier.status, 400);
  t.match(badTier.body, { error: { code: "invalid_request", details: [{ path: "body.models.0" }] } });

  const patched = await troupe.request("PATCH", `/v1/api-keys/${id}`, { token: owner.token, body: { models: ["claude-*"], max_concurrent: null } });
  t.equal(patched.status, 200);
  t.same(field(patched.body, "models"), ["claude-*"]);
  t.equal(field(patched.body, "max_concurrent"), null, "null clears a limit");
  t.equal(field(patched.body, "rate_limit_per_minute"), field(record.body, "rate_limit_per_minute"), "fields not sent stay");
  const listed = await troupe.request("GET", `/v1/environments/${owner.developmentEnvId}/api-keys`, { token: owner.token });
  const row = (field(listed.body, "data") as { id: string; models: unknown }[]).find((k) => k.id === id);
  t.same(row?.models, ["claude-*"], "the list shows the change");

  const unknownField = await troupe.request("PATCH", `/v1/api-keys/${id}`, { token: owner.token, body: { scopes: ["chat"] } });
  t.equal(unknownField.status, 400, "scopes do not change by PATCH");
  const byKey = await troupe.request("PATCH", `/v1/api-keys/${id}`, { token: plain.key, body: { models: null } });
  t.equal(byKey.status, 403, "an API key cannot change keys (session routes)");
  const member = await signup(troupe, "member");
  const invite = await troupe.request("POST", `/v1/orgs/${owner.orgId}/invitations`, { token: owner.token, body: { email: member.email, role: "member" } });
  const accepted = await troupe.request("POST", "/v1/invitations/accept", { token: member.token, body: { token: str(invite.body, "token") } });
  t.equal(accepted.status, 200, accepted.text);
  const byMember = await troupe.request("PATCH", `/v1/api-keys/${id}`, { token: member.token, body: { models: null } });
  t.equal(byMember.status, 403, "a member may not change a key's limits");
  t.equal(field(byMember.body, "error", "code"), "forbidden");
  const stranger = await signup(troupe, "stranger");
  const other = await troupe.request("PATCH", `/v1/api-keys/${id}`, { token: stranger.token, body: { models: null } });
  t.equal(other.status, 404, "another organization's key is not found");

  await troupe.request("DELETE", `/v1/api-keys/${id}`, { token: owner.token });
  const revoked = await troupe.request("PATCH", `/v1/api-keys/${id}`, { token: owner.token, body: { models: null } });
  t.equal(revoked.status, 409, "a revoked key's limits no longer change");
});

t.test("/v1: a named model outside the list is 403 model_not_allowed, before any provider call", async (t) => {
  const { key } = await keyWith({ models: ["gpt-4.1*"] });
  const { value: refused, openai: o, anthropic: a } = await reached(() =>
    troupe.request("POST", "/v1/chat/completions", { token: key, body: say({ model: "claude-haiku-4-5", routing_strategy: "manual" }) }),
  );
  t.equal(refused.status, 403);
  t.match(refused.body, { error: { code: "model_not_allowed", details: { allowed_models: ["gpt-4.1*"] } } });
  t.equal(o + a, 0, "no provider was called");
  const allowed = await troupe.request("POST", "/v1/chat/completions", { token: key, body: say({ model: "gpt-4.1-mini", routing_strategy: "manual" }) });
  t.equal(allowed.status, 200, "a model the glob matches is served");
  const embed = await troupe.request("POST", "/v1/embeddings", { token: key, body: { model: "text-embedding-3-small", input: ["x"] } });
  t.equal(embed.status, 403, "embeddings too");
  t.equal(field(embed.body, "error", "code"), "model_not_allowed");
});

t.test("/v1: model null with auto, cost and latency picks only allowed models", async (t) => {
  const { key } = await keyWith({ models: ["claude-*"] });
  for (const strategy of ["auto", "cost", "latency"]) {
    const { value, openai: o } = await reached(() => troupe.request("POST", "/v1/chat/completions", { token: key, body: say({ model: null, routing_strategy: strategy }) }));
    t.equal(value.status, 200, strategy);
    t.match(String(field(value.body, "model")), /^claude-/, `${strategy} served a claude model`);
    t.equal(o, 0, `${strategy}: openai never called`);
  }
  const small = await keyWith({ models: ["tier:small"] });
  const bySmall = await troupe.request("POST", "/v1/chat/completions", { token: small.key, body: say({ model: null, routing_strategy: "cost" }) });
  t.equal(bySmall.status, 200);
  t.equal(troupe.services.router.catalogue.get(str(bySmall.body, "model"))?.tier, "small", `tier:small served ${String(field(bySmall.body, "model"))}`);
  const none = await keyWith({ models: [] });
  const refused = await troupe.request("POST", "/v1/chat/completions", { token: none.key, body: say({ model: null, routing_strategy: "auto" }) });
  t.equal(refused.status, 403, "an empty list allows nothing");
  t.equal(field(refused.body, "error", "code"), "model_not_allowed");
});

t.test("/openai/v1 and /anthropic refuse in their own shapes; allowed models still answer", async (t) => {
  const claudeOnly = await keyWith({ models: ["claude-*"] });
  const gptOnly = await keyWith({ models: ["gpt-*"] });
  const viaOpenAI = await reached(() => troupe.request("POST", "/openai/v1/chat/completions", { token: claudeOnly.key, body: say({ model: "gpt-4.1" }) }));
  t.equal(viaOpenAI.value.status, 403);
  t.match(viaOpenAI.value.body, { error: { type: "permission_error", code: "model_not_allowed" } });
  t.equal(viaOpenAI.openai + viaOpenAI.anthropic, 0);
  const openaiStream = await troupe.request("POST", "/openai/v1/chat/completions", { token: claudeOnly.key, body: say({ model: "gpt-4.1", stream: true }) });
  t.equal(openaiStream.status, 403, "a stream is refused before it starts");

  const anthropicBody = { model: "claude-haiku-4-5", max_tokens: 50, messages: [{ role: "user", content: "hello" }] };
  const viaAnthropic = await reached(() =>
    troupe.request("POST", "/anthropic/v1/messages", { headers: { "x-api-key": gptOnly.key, "anthropic-version": "2023-06-01" }, body: anthropicBody }),
  );
  t.equal(viaAnthropic.value.status, 403);
  t.match(viaAnthropic.value.body, { type: "error", error: { type: "permission_error" } });
  t.equal(viaAnthropic.openai + viaAnthropic.anthropic, 0);
  const allowed = await troupe.request("POST", "/anthropic/v1/messages", { headers: { "x-api-key": claudeOnly.key, "anthropic-version": "2023-06-01" }, body: anthropicBody });
  t.equal(allowed.status, 200);
});

t.test("an agent turn runs under the key that sends it", async (t) => {
  const creator = await keyWith({});
  const created = await troupe.request("POST", "/v1/agents/conversations", { token: creator.key, body: { model: null, routing_strategy: "auto" } });
  t.equal(created.status, 201, created.text);
  const conversation = str(created.body, "id");
  const claudeOnly = await keyWith({ models: ["claude-*"] });
  const turn = await reached(() => troupe.request("POST", `/v1/agents/conversations/${conversation}/messages`, { token: claudeOnly.key, body: { content: "hello" } }));
  t.equal(turn.value.status, 200, turn.value.text);
  t.equal(turn.openai, 0, "the claude-only key's turn never reached openai");
  t.ok(turn.anthropic >= 1);
  // One model only: whatever auto would pick first, the turn's calls ask for this one.
  const haikuOnly = await keyWith({ models: ["claude-haiku-4-5"] });
  const seen = anthropic.requests.length;
  const haikuTurn = await reached(() => troupe.request("POST", `/v1/agents/conversations/${conversation}/messages`, { token: haikuOnly.key, body: { content: "hello again" } }));
  t.equal(haikuTurn.value.status, 200, haikuTurn.value.text);
  t.equal(haikuTurn.openai, 0);
  const asked = anthropic.requests.slice(seen).map((r) => field(r.body, "model"));
  t.ok(asked.length > 0 && asked.every((m) => m === "claude-haiku-4-5"), `the turn asked only for claude-haiku-4-5: ${asked.join(", ")}`);

  const named = await troupe.request("POST", "/v1/agents/conversations", { token: creator.key, body: { model: "gpt-4.1", routing_strategy: "manual" } });
  const namedId = str(named.body, "id");
  const refused = await reached(() => troupe.request("POST", `/v1/agents/conversations/${namedId}/messages`, { token: claudeOnly.key, body: { content: "hello" } }));
  t.equal(refused.value.status, 403, "a conversation on a model the sending key may not use is refused");
  t.equal(field(refused.value.body, "error", "code"), "model_not_allowed");
  t.equal(refused.openai + refused.anthropic, 0);
  const creating = await troupe.request("POST", "/v1/agents/conversations", { token: claudeOnly.key, body: { model: "gpt-4.1", routing_strategy: "manual" } });
  t.equal(creating.status, 403, "and cannot be created with that key");
});

t.test("PATCH applies to the key's next call", async (t) => {
  const { id, key } = await keyWith({});
  const before = await troupe.request("POST", "/v1/chat/completions", { token: key, body: say({ model: "gpt-4.1", routing_strategy: "manual" }) });
  t.equal(before.status, 200);
  const patched = await troupe.request("PATCH", `/v1/api-keys/${id}`, { token: owner.token, body: { models: ["claude-*"] } });
  t.equal(patched.status, 200);
  const after = await troupe.request("POST", "/v1/chat/completions", { token: key, body: say({ model: "gpt-4.1", routing_strategy: "manual" }) });
  t.equal(after.status, 403, "refused at once on this replica");
});

// Last: failing openai opens its breaker, which would hide a leak in the tests above.
t.test("/v1: an auto fallback never leaves the list", async (t) => {
  t.teardown(resetFaults);
  const { key } = await keyWith({ models: ["gpt-4.1*"] });
  const open = await keyWith({});
  openai.faults.failureRate = 1;
  openai.faults.failureStatus = 500;
  // The control: without an allowlist, gpt-4.1-mini falls back to its Anthropic equivalent.
  const control = await reached(() => troupe.request("POST", "/v1/chat/completions", { token: open.key, body: say({ model: "gpt-4.1-mini", routing_strategy: "auto" }) }));
  t.equal(control.value.status, 200);
  t.equal(control.anthropic, 1, "the control fell back to anthropic");
  const limited = await reached(() => troupe.request("POST", "/v1/chat/completions", { token: key, body: say({ model: "gpt-4.1-mini", routing_strategy: "auto" }) }));
  t.not(limited.value.status, 200, "with the allowlist the failing provider's error is the answer");
  t.equal(limited.anthropic, 0, "anthropic was never called");
  t.ok(limited.openai >= 1, "openai was tried");
});
