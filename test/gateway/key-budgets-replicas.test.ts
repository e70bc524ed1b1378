// Per-key monthly budgets on two Troupes sharing one Redis, requests
// alternating between them (key-budget-suite.ts): the key's budget holds
// across replicas (its reservations, leases and counters are in the one
// ledger), and key.budget.alert is published once per threshold whichever
// replica's append crossed it.
import t from "tap";
import { recordingPublisher, startFakeOpenAI } from "../support/billing.ts";
import { startTestRedis } from "../support/redis.ts";
import { field, startTestTroupe, type TestTroupe } from "../support/troupe.ts";
import { keyBudgetSuite } from "./key-budget-suite.ts";

t.setTimeout(180_000);
const redis = await startTestRedis();
const { fake, router } = await startFakeOpenAI();
const events = recordingPublisher();
const troupes: TestTroupe[] = [];
for (let i = 0; i < 2; i++) troupes.push(await startTestTroupe({ REDIS_URL: redis.url }, { router: router(), events }));
t.teardown(async () => {
  for (const troupe of troupes) await troupe.stop();
  await fake.close();
  await redis.stop();
});

keyBudgetSuite(t, {
  name: "2 replicas on Redis",
  troupes,
  fake,
  subscribe: async () => undefined, // every published event is recorded
  alerts: (apiKeyId) =>
    events.events
      .filter((e) => e.type === "key.budget.alert" && field(e.data, "api_key_id") === apiKeyId)
      // Recorded as published, before any delivery: no signature to check (the embedded run checks it).
      .map((e) => ({ eventId: e.id, data: e.data, verified: true })),
});
