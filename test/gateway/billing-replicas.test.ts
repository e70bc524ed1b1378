// Budgets and usage on three Troupes sharing one Redis, requests spread over
// them in turn: the budget rule, the ledger and budget.alert hold exactly
// across replicas (see billing-suite.ts).
import t from "tap";
import { recordingPublisher, startFakeOpenAI } from "../support/billing.ts";
import { startTestRedis } from "../support/redis.ts";
import { startTestTroupe, type TestTroupe } from "../support/troupe.ts";
import { billingSuite } from "./billing-suite.ts";

t.setTimeout(180_000);
const redis = await startTestRedis();
const { fake, router } = await startFakeOpenAI();
const events = recordingPublisher();
const troupes: TestTroupe[] = [];
for (let i = 0; i < 3; i++) troupes.push(await startTestTroupe({ REDIS_URL: redis.url }, { router: router(), events }));
t.teardown(async () => {
  for (const troupe of troupes) await troupe.stop();
  await fake.close();
  await redis.stop();
});

billingSuite(t, { name: "3 replicas on Redis", troupes, fake, events });
