// Billing: the usage ledger's service (budgets, alerts, reservations), the
// usage recorder that every answered call's record goes through (journaled:
// on file before the answer), the per-call meter the AI routes and actors
// use, and the usage report routes.
import { join } from "node:path";
import type { Logger } from "../../core/log.ts";
import type { EventPublisher } from "../../core/organization-events.ts";
import { recordGroupedIn, UsageMeter, type UsageRecord, type UsageSink } from "../../providers/usage.ts";
import { Billing } from "../../tenancy/billing.ts";
import { readJournal, UsageJournal } from "../../tenancy/usage-journal.ts";
import { UsageRecorder, type WriteUsage } from "../../tenancy/usage-recorder.ts";
import { UsageReports } from "../../tenancy/usage-report.ts";
import { meteredUsage } from "../observability.ts";
import { billingRoutes } from "../routes/billing.ts";
import type { Feature } from "./feature.ts";
import type { SharedServices } from "./shared-services.ts";

export interface BillingOptions {
  /** Where usage records go (tests collect them); default: the durable recorder. */
  usage?: UsageSink;
  /** false: the recorder keeps records in memory only until the ledger has them (bench:chat --no-journal shows the journal's cost). */
  usageJournal?: boolean;
}

export interface BillingFeature extends Feature {
  billing: Billing;
  /** Every record, also counted into its key's tokens-per-minute window and the metrics. */
  usage: UsageSink;
  /** Prices a call's figures into a record for `usage`. */
  meter: UsageMeter;
}

/**
 * The usage recorder with its journal under <data dir>/usage-journal: each
 * record is on file before its call is answered, and what a crashed run
 * left there goes to the ledger with the first batch.
 */
function journaledRecorder(dataDir: string, write: WriteUsage, log: Logger): UsageRecorder {
  const dir = join(dataDir, "usage-journal");
  const leftover = readJournal(dir, log);
  const recorder = new UsageRecorder(write, log, { journal: new UsageJournal(dir, log, leftover.segments) });
  if (leftover.records.length > 0) {
    log.info("usage journal: records of an earlier run go to the ledger", { records: leftover.records.length, segments: leftover.segments.length });
    recorder.recover(leftover.records);
  }
  return recorder;
}

/** `events`: where budget alerts go (the webhooks' publisher); `observers` see every record too (the request log). */
export async function billingFeature(s: SharedServices, events: EventPublisher, options: BillingOptions, observers: readonly ((usage: UsageRecord) => void)[] = []): Promise<BillingFeature> {
  const { config, log, clock, ledger, store } = s;
  const billing = new Billing({ ledger, store, clock, log, events });
  await billing.start();
  const recorder = options.usage ? undefined : options.usageJournal === false ? new UsageRecorder(billing.write, log) : journaledRecorder(config.dataDir, billing.write, log);
  const recorded: UsageSink = options.usage ?? (recorder as UsageRecorder);
  const limits = s.apiKeys.limits;
  const observe = (u: UsageRecord): void => {
    for (const o of observers) o(u);
  };
  const counted: UsageSink = {
    record: (u) => (recorded.record(u), limits.record(u), observe(u)),
    recordGrouped: (u) => (limits.record(u), observe(u), recordGroupedIn(recorded, u)),
  };
  const usage: UsageSink = meteredUsage(counted, s.metrics);
  return {
    billing,
    usage,
    meter: new UsageMeter(s.router.catalogue, usage, () => clock.now(), config.byokPriceFraction, config.cacheHitPriceFraction),
    routes: billingRoutes(new UsageReports({ orgs: s.accounts.orgs, billing, clock })),
    async stop() {
      await recorder?.close();
      await billing.stop();
    },
  };
}
