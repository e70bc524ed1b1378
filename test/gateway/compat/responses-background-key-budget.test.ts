// Background responses held to their key's own monthly budget, as a
// foreground call is (tenancy/billing.ts admit): the project has no budget,
// the key a hard one that fits one response's hold (its input and
// max_output_tokens of output). A create whose hold is past the key's limit
// is refused (429 insufficient_quota, the OpenAI dialect of 402
// budget_exceeded) before anything is queued or reaches the provider; one
// within it runs, and its record raises the key's spend by what the ledger
// billed, the usage report's figure for the key. The bill releases the key's
// hold too, so the next one fits again.
import t from "tap";
import { generationEstimateNanos } from "../../../gateway/billed-call.ts";
import { countChatInputTokens } from "../../../providers/tokens.ts";
import { periodOf } from "../../../tenancy/ledger.ts";
import { startOpenAIFake } from "../../fakes/openai-fake.ts";
import { waitFor } from "../../support/net.ts";
import { field, signup, startTestTroupe, str } from "../../support/troupe.ts";
import { projectUsage } from "../../jobs/usage-reader.ts";

t.setTimeout(120_000);
const openai = await startOpenAIFake({ apiKey: "sk-fake" });
const troupe = await startTestTroupe({ OPENAI_API_KEY: "sk-fake", OPENAI_BASE_URL: `${openai.url}/v1`, OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost" });
t.teardown(async () => {
  await troupe.stop();
  await openai.close();
});
const user = await signup(troupe, "responses-bg-key-budget");
const model = "gpt-4.1-mini";
const maxOutput = 1_000;

const create = (key: string, max_output_tokens: number) =>
  troupe.request("POST", "/openai/v1/responses", { token: key, body: { model, input: "hi", max_output_tokens, background: true } });

async function ended(key: string, id: string): Promise<string> {
  let status = "queued";
  await waitFor(
    async () => {
      const got = await troupe.request("GET", `/openai/v1/responses/${id}`, { token: key });
      status = str(got.body, "status");
      return status !== "queued" && status !== "in_progress";
    },
    20_000,
    `${id} to end`,
  );
  return status;
}

t.test("a key's hard budget: a background response past it is refused, one within it is billed to the key", async (t) => {
  const hold = generationEstimateNanos(troupe.services.router.catalogue, "text", model, countChatInputTokens([{ role: "user", content: "hi" }]), maxOutput);
  t.ok(hold > 0, `one holds ${hold} nano-dollars`);
  const made = await troupe.request("POST", `/v1/environments/${user.productionEnvId}/api-keys`, {
    token: user.token,
    body: { name: "one response", live: true, monthly_budget_usd: (1.5 * hold) / 1e9, hard_limit: true },
  });
  t.equal(made.status, 201, made.text);
  const key = str(made.body, "key");
  const keyId = str(made.body, "id");
  const period = periodOf(new Date().toISOString());

  // Twice the output: a hold of about twice the one that fits, past the key's limit (the project has none).
  const before = openai.requests.length;
  const past = await create(key, maxOutput * 2);
  t.equal(past.status, 429, past.text);
  t.match(field(past.body, "error"), { type: "insufficient_quota" });
  t.equal(openai.requests.length, before, "nothing reached the provider");
  t.equal(await troupe.services.ledger.spent(user.projectId, period, keyId), 0, "nothing spent by the key");

  const within = await create(key, maxOutput);
  t.equal(within.status, 200, within.text);
  const id = str(within.body, "id");
  t.equal(await ended(key, id), "completed");
  const records = (await projectUsage(troupe.services.ledger, user.projectId)).filter((r) => r.usage_key === id);
  t.equal(records.length, 1, "billed once, under the response id");
  const billed = records[0]?.cost_nanos ?? 0;
  t.ok(billed > 0, `billed ${billed} nano-dollars`);
  t.equal(records[0]?.api_key_id, keyId, "to the key");
  t.equal(await troupe.services.ledger.spent(user.projectId, period, keyId), billed, "the key's spend rose by the ledger's amount");
  const report = await troupe.request("GET", `/v1/projects/${user.projectId}/usage?group_by=key`, { token: user.token });
  t.equal(report.status, 200, report.text);
  const groups = field(report.body, "groups") as { key: string; live: { cost_nanos: number } }[];
  t.equal(groups.find((g) => g.key === keyId)?.live.cost_nanos, billed, "the usage report's figure for the key");

  // The bill released the key's hold as well as the spend counted: another one fits.
  const next = await create(key, maxOutput);
  t.equal(next.status, 200, `the next one is admitted once the first's hold was released: ${next.text}`);
  t.equal(await ended(key, str(next.body, "id")), "completed");
});
