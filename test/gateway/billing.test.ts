// Budgets and usage on one embedded Troupe (see billing-suite.ts).
import t from "tap";
import { recordingPublisher, startFakeOpenAI } from "../support/billing.ts";
import { startTestTroupe } from "../support/troupe.ts";
import { billingSuite } from "./billing-suite.ts";

t.setTimeout(120_000);
const { fake, router } = await startFakeOpenAI();
const events = recordingPublisher();
const troupe = await startTestTroupe({}, { router: router(), events });
t.teardown(async () => {
  await troupe.stop();
  await fake.close();
});

billingSuite(t, { name: "embedded", troupes: [troupe], fake, events });
