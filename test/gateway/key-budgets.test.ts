// Per-key monthly budgets on one embedded Troupe (key-budget-suite.ts):
// key.budget.alert goes through the real webhook pipeline to a receiver that
// checks both signatures.
import t from "tap";
import { startWebhookReceiver } from "../fakes/webhook-receiver.ts";
import { startFakeOpenAI } from "../support/billing.ts";
import { field, startTestTroupe, str } from "../support/troupe.ts";
import { keyBudgetSuite } from "./key-budget-suite.ts";

t.setTimeout(180_000);
const { fake, router } = await startFakeOpenAI();
const troupe = await startTestTroupe({ OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost", WEBHOOK_RETRY_SCALE: "0.0002" }, { router: router() });
const receiver = await startWebhookReceiver();
t.teardown(async () => {
  await troupe.stop();
  await receiver.close();
  await fake.close();
});

let hooks = 0;
keyBudgetSuite(t, {
  name: "embedded",
  troupes: [troupe],
  fake,
  async subscribe(_session, liveKey) {
    // One receiver path per organization's webhook, each with its own secret.
    const path = `${new URL(receiver.url).pathname}/org-${(hooks += 1)}`;
    const hook = await troupe.request("POST", "/v1/webhooks", { token: liveKey, body: { url: new URL(path, receiver.url).href, events: ["key.budget.alert"] } });
    if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${hook.text}`);
    receiver.secrets.set(path, str(hook.body, "secret"));
  },
  alerts: (apiKeyId) =>
    receiver.received
      .filter((d) => d.type === "key.budget.alert" && field(d.body, "data", "api_key_id") === apiKeyId)
      .map((d) => ({ eventId: d.eventId, data: field(d.body, "data"), verified: d.verified })),
});
