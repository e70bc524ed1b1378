// Background responses against a hard budget: each holds the most it may
// cost (its input and max_output_tokens of output) from the moment it is
// queued until it ends, so a burst of concurrent ones against a limit that
// fits N of them runs N and refuses the rest (429 insufficient_quota, the
// OpenAI dialect of budget_exceeded) before any of those reach a provider.
// What was held and not spent goes back when they end.
import t from "tap";
import OpenAI from "openai";
import { generationEstimateNanos } from "../../../gateway/billed-call.ts";
import { countChatInputTokens } from "../../../providers/tokens.ts";
import { startFakeProviders } from "../../support/fake-providers.ts";
import { projectWithLiveKey } from "../../support/billing.ts";
import { waitFor } from "../../support/net.ts";
import { signup, startTestTroupe } from "../../support/troupe.ts";

t.setTimeout(120_000);
const providers = await startFakeProviders(["openai"]);
const openai = providers.fakes.openai;
// Durable usage (the ledger): the budget counts what was held and spent.
const troupe = await startTestTroupe({}, { router: providers.router });
t.teardown(async () => {
  await troupe.stop();
  await providers.close();
});
const user = await signup(troupe, "responses-bg-budget");
const model = "gpt-4.1-mini";
const maxOutput = 1_000;
const fits = 3;

t.test(`a hard limit fitting ${fits} background responses: ${fits} run, the rest refused before any provider call`, async (t) => {
  const p = await projectWithLiveKey(troupe, user.token, user.orgId, "responses-bg-budget");
  // The hold of one: what the route reserves for `input: "hi"` with max_output_tokens.
  const hold = generationEstimateNanos(troupe.services.router.catalogue, "text", model, countChatInputTokens([{ role: "user", content: "hi" }]), maxOutput);
  t.ok(hold > 0, `one holds ${hold} nano-dollars`);
  const limitUsd = ((fits + 0.5) * hold) / 1e9;
  const put = await troupe.request("PUT", `/v1/projects/${p.projectId}/budget`, { token: user.token, body: { monthly_limit_usd: limitUsd, hard_limit: true } });
  t.equal(put.status, 200, put.text);
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${troupe.port}/openai/v1`, apiKey: p.liveKey, maxRetries: 0 });
  // Slow answers: every one is still running (holding) when the last is created.
  openai.faults.eventDelayMs = 200;
  t.teardown(() => void (openai.faults.eventDelayMs = 0));
  const before = openai.requests.length;
  const outcomes = await Promise.all(
    Array.from({ length: fits * 2 }, () =>
      client.responses.create({ model, input: "hi", max_output_tokens: maxOutput, background: true }).then(
        (r) => r,
        (e: unknown) => e,
      ),
    ),
  );
  const queued = outcomes.filter((o): o is OpenAI.Responses.Response => !(o instanceof Error));
  const refused = outcomes.filter((o): o is InstanceType<typeof OpenAI.APIError> => o instanceof OpenAI.APIError);
  t.equal(queued.length, fits, `${fits} queued`);
  t.equal(refused.length, fits, "the rest refused");
  for (const e of refused) {
    t.equal(e.status, 429);
    t.match(e.error, { type: "insufficient_quota" });
  }
  for (const r of queued) {
    let now = r;
    await waitFor(async () => ((now = await client.responses.retrieve(r.id)), now.status === "completed"), 20_000, `${r.id} completed`);
  }
  t.equal(openai.requests.length - before, fits, "the provider saw only the admitted ones");

  // Ended: what they held and did not spend is free again, so another one fits.
  openai.faults.eventDelayMs = 0;
  const again = await client.responses.create({ model, input: "hi", max_output_tokens: maxOutput, background: true });
  t.equal(again.status, "queued", "admitted once the others released their holds");
});
