// The operator console and the API docs page: each replica publishes what
// only it sees (its actors, its breakers) for the console's cluster view.
import { consolePages } from "../console/console-routes.ts";
import type { ConsoleSources } from "../console/console-data.ts";
import { jobsInFlight } from "../console/jobs-in-flight.ts";
import { readSnapshots, SnapshotPublisher, takeSnapshot } from "../console/replica-snapshots.ts";
import { budgetsFromLedger, usageTodayFromLedger } from "../console/usage-today.ts";
import { webhookFailures } from "../console/webhook-failures.ts";
import { keyUse, trafficSeries } from "../console/traffic.ts";
import type { RequestLogSeriesReads } from "../../tenancy/request-log-series.ts";
import type { Authenticator } from "../authenticate.ts";
import { docsPages } from "../docs-page.ts";
import type { Feature } from "./feature.ts";
import type { JobsFeature } from "./jobs.ts";
import type { SharedServices } from "./shared-services.ts";
import type { WebhooksFeature } from "./webhooks.ts";

/**
 * `requestLog`: the charts' and the key limits' aggregates (absent: those
 * sections say so), every replica's added when several share the data store
 * (RequestLogFeature.series).
 */
export function consoleFeature(s: SharedServices, authenticator: Authenticator, jobs: JobsFeature, webhooks: WebhooksFeature, requestLog?: RequestLogSeriesReads): Feature {
  const { actors, router, clock, config, ledger, store } = s;
  const snapshotSources = { replica: config.replica, mode: config.mode, activeActors: () => actors.runtimeActiveActors(), breakers: () => router.consoleBreakerRows() };
  const snapshots = new SnapshotPublisher({ store, sources: snapshotSources, clock, intervalMs: config.observability.consoleSnapshotIntervalMs, log: s.log });
  const sources: ConsoleSources = {
    usageToday: (_orgId, projects) => usageTodayFromLedger(ledger, projects, clock.now()),
    budgets: (_orgId, projects) => budgetsFromLedger(ledger, projects, clock.now()),
    jobsInFlight: (orgId) => jobsInFlight(jobs.directory, orgId),
    webhookFailures: (orgId) => webhookFailures({ actors, webhook: webhooks.webhook, directory: webhooks.directory }, orgId),
    ...(requestLog && {
      traffic: (org, projects) => trafficSeries(requestLog, org, projects, clock.now()),
      keyUse: (_orgId, projects) => keyUse(store, requestLog, projects, clock.now()),
    }),
  };
  const pages = consolePages(authenticator, {
    accounts: s.accounts,
    sources,
    replica: config.replica,
    now: () => clock.now(),
    // The serving replica's own row is taken now; the others come from the store.
    snapshots: async () => {
      const [own, all] = await Promise.all([takeSnapshot(snapshotSources, clock), readSnapshots(store)]);
      return [...all.filter((r) => r.replica !== own.replica), own].sort((a, b) => a.replica.localeCompare(b.replica, "en", { numeric: true }));
    },
  });
  return {
    pages: [...docsPages(), ...pages],
    start: () => snapshots.start(),
    drain: () => snapshots.stop(),
  };
}
