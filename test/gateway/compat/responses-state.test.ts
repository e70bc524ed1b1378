// Where stored responses live and who sees them: a fork (two responses
// continuing the same one each see only their own chain), environment and
// organization isolation (404 to every other key), item references, a new
// turn storing only its own items, and the organization's deletion erasing
// every stored response from its actor.
import t from "tap";
import OpenAI from "openai";
import { callActor } from "../../../actors/host.ts";
import { createResponseActor } from "../../../actors/responses/response-actor.ts";
import { field, signup } from "../../support/troupe.ts";
import { startCompatHarness } from "./openai-harness.ts";

t.setTimeout(90_000);
const h = await startCompatHarness();
t.teardown(() => h.stop());
const client = h.client();
const model = "claude-haiku-4-5";
const fake = h.fakes.anthropic;

const refusal = (call: Promise<unknown>) => call.then(() => "resolved" as const, (e: unknown) => (e instanceof OpenAI.APIError ? e.status : String(e)));
/** The text of every message the provider was last sent. */
const lastSent = () => JSON.stringify(fake.requests.at(-1)!.body);

async function keyIn(token: string, environmentId: string): Promise<string> {
  const res = await h.troupe.request("POST", `/v1/environments/${environmentId}/api-keys`, { token, body: { name: "other-env" } });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
  return String(field(res.body, "key"));
}

t.test("a fork: two responses continuing the same one each see only their own chain", async (t) => {
  const root = await client.responses.create({ model, input: "root-turn" });
  const left = await client.responses.create({ model, input: "left-branch", previous_response_id: root.id });
  const right = await client.responses.create({ model, input: "right-branch", previous_response_id: root.id });
  t.equal(right.previous_response_id, root.id);
  await client.responses.create({ model, input: "left-again", previous_response_id: left.id });
  const sentLeft = lastSent();
  t.ok(sentLeft.includes("root-turn") && sentLeft.includes("left-branch") && sentLeft.includes("Echo: left-branch"), "the left chain whole");
  t.notOk(sentLeft.includes("right-branch"), "nothing of the right branch");
  await client.responses.create({ model, input: "right-again", previous_response_id: right.id });
  const sentRight = lastSent();
  t.ok(sentRight.includes("root-turn") && sentRight.includes("right-branch"), "the right chain whole");
  t.notOk(sentRight.includes("left"), "nothing of the left branch");
});

t.test("a new turn stores only its own items, whatever the chain's length", async (t) => {
  const actors = h.troupe.services.actors;
  const actor = createResponseActor();
  const owner = { organization_id: h.user.orgId, environment_id: h.user.developmentEnvId };
  let previous: string | undefined;
  const sizes: number[] = [];
  for (let turn = 0; turn < 12; turn++) {
    const r: OpenAI.Responses.Response = await client.responses.create({ model, input: `turn number ${turn} `.padEnd(200, "x"), ...(previous ? { previous_response_id: previous } : {}) });
    previous = r.id;
    const stored = await callActor(actors, actor, r.id, "get", owner);
    t.ok(stored, `turn ${turn} stored`);
    t.equal(stored!.input.length, 1, "one input item: this turn's");
    sizes.push(JSON.stringify(stored).length);
  }
  t.ok(Math.max(...sizes.slice(1)) - Math.min(...sizes.slice(1)) < 64, `stored bytes per turn stay flat: ${sizes.join(", ")}`);
  t.ok(lastSent().includes("turn number 0"), "while the provider still gets the whole chain");
});

t.test("item_reference: an earlier output item is found by its id; an unknown one is a 400 naming it", async (t) => {
  const first = await client.responses.create({ model, input: "reference me" });
  const itemId = first.output[0]!.id!;
  const r = await client.responses.create({ model, input: [{ role: "user", content: "reference me" }, { type: "item_reference", id: itemId }, { role: "user", content: "and now" }] });
  t.equal(r.output_text, "Echo: and now");
  t.ok(lastSent().includes("Echo: reference me"), "the referenced assistant message was sent");
  const bad = await client.responses.create({ model, input: [{ type: "item_reference", id: "msg_01ARZ3NDEKTSV4RRFFQ69G5FAV_0" }] }).catch((e: unknown) => e);
  t.equal(bad instanceof OpenAI.APIError && bad.status, 400);
  t.match(bad instanceof OpenAI.APIError && bad.error, { param: "input[0].id" });
});

t.test("environments: a response is 404 to another environment's key and another organization's", async (t) => {
  const mine = await client.responses.create({ model, input: "mine only" });
  const otherEnv = h.client(await keyIn(h.user.token, h.user.productionEnvId));
  const stranger = await signup(h.troupe, "responses-stranger");
  const otherOrg = h.client(stranger.testKey);
  for (const [name, other] of [["another environment", otherEnv], ["another organization", otherOrg]] as const) {
    t.equal(await refusal(other.responses.retrieve(mine.id)), 404, `${name}: retrieve`);
    t.equal(await refusal(other.responses.inputItems.list(mine.id)), 404, `${name}: input_items`);
    t.equal(await refusal(other.responses.delete(mine.id)), 404, `${name}: delete`);
    t.equal(await refusal(other.responses.create({ model, input: "steal", previous_response_id: mine.id })), 400, `${name}: continuing`);
    const ref = other.responses.create({ model, input: [{ type: "item_reference", id: mine.output[0]!.id! }] });
    t.equal(await refusal(ref), 400, `${name}: an item reference`);
  }
  t.equal((await client.responses.retrieve(mine.id)).id, mine.id, "still there for its own environment");
});

t.test("deleting the organization erases its stored responses", async (t) => {
  const owner = await signup(h.troupe, "responses-erased");
  const theirs = h.client(owner.testKey);
  const r = await theirs.responses.create({ model, input: "to be erased" });
  const actor = createResponseActor();
  const reader = { organization_id: owner.orgId, environment_id: owner.developmentEnvId };
  t.ok(await callActor(h.troupe.services.actors, actor, r.id, "get", reader), "stored");
  const orgName = String(field((await h.troupe.request("GET", `/v1/orgs/${owner.orgId}`, { token: owner.token })).body, "name"));
  const res = await h.troupe.request("DELETE", `/v1/orgs/${owner.orgId}`, { token: owner.token, body: { confirm: orgName } });
  t.equal(res.status, 200, res.text);
  t.equal(await callActor(h.troupe.services.actors, actor, r.id, "get", reader), null, "its actor holds nothing");
  t.same((await h.troupe.services.store.page(`org-responses:${owner.orgId}`, 10)).members, [], "nor does the index that listed it");
});
