// What /console/data.json answers: the replicas (each one's active actors
// per type and circuit breakers, from the shared snapshots) and, for one
// organization the signed-in user owns or administers, jobs in flight,
// webhook failures, usage today and budgets.
//
// The organization sections come from ConsoleSources, wired in app.ts:
// usage today and budgets from the ledger, jobs in flight from the job
// directory, webhook failures from the webhooks' delivery records (a section
// without a source says so).
import { TroupeError } from "../../core/errors.ts";
import type { AccountService } from "../../tenancy/accounts.ts";
import type { ReplicaSnapshot } from "./replica-snapshots.ts";
import type { ConsoleKeyUse, ConsoleSeries } from "./traffic.ts";

export interface ConsoleJob {
  id: string;
  type: string;
  status: string;
  progress: number;
  created_at: string;
}

export interface ConsoleWebhookFailure {
  webhook_id: string;
  url: string;
  event_type: string;
  attempt: number;
  response_status: number | null;
  error: string | null;
  created_at: string;
}

export interface ConsoleUsageRow {
  category: string;
  live: boolean;
  requests: number;
  cost_usd: number;
}

export interface ConsoleBudget {
  project_id: string;
  project_name: string;
  monthly_limit_usd: number;
  spent_usd: number;
  hard_limit: boolean;
}

export interface ConsoleProject {
  id: string;
  name: string;
}

/** Per-organization data sources; each branch wires its own (app.ts, `consoleSources`). */
export interface ConsoleSources {
  jobsInFlight?(organizationId: string): Promise<ConsoleJob[]>;
  webhookFailures?(organizationId: string): Promise<ConsoleWebhookFailure[]>;
  usageToday?(organizationId: string, projects: readonly ConsoleProject[]): Promise<ConsoleUsageRow[]>;
  budgets?(organizationId: string, projects: readonly ConsoleProject[]): Promise<ConsoleBudget[]>;
  /** The organization's and each project's last 24 hours (the request log's aggregates). */
  traffic?(organization: { id: string; name: string }, projects: readonly ConsoleProject[]): Promise<ConsoleSeries[]>;
  keyUse?(organizationId: string, projects: readonly ConsoleProject[]): Promise<ConsoleKeyUse[]>;
}

/** A section's rows, or why there are none to show. */
export type Section<T> = { available: true; rows: T[] } | { available: false; reason: string };

export interface ConsoleData {
  generated_at: string;
  served_by: string;
  replicas: ReplicaSnapshot[];
  organization: { id: string; name: string };
  organizations: { id: string; name: string; role: string }[];
  jobs_in_flight: Section<ConsoleJob>;
  webhook_failures: Section<ConsoleWebhookFailure>;
  usage_today: Section<ConsoleUsageRow>;
  budgets: Section<ConsoleBudget>;
  traffic: Section<ConsoleSeries>;
  key_use: Section<ConsoleKeyUse>;
  /** The organization's projects (the request log's project choice). */
  projects: ConsoleProject[];
}

export interface ConsoleDataDeps {
  accounts: AccountService;
  sources: ConsoleSources;
  replica: string;
  /** Every replica's snapshot, this one's fresh. */
  snapshots(): Promise<ReplicaSnapshot[]>;
  now(): number;
}

const managing = new Set(["owner", "admin"]);

async function section<T>(read: (() => Promise<T[]>) | undefined, missing: string): Promise<Section<T>> {
  if (!read) return { available: false, reason: missing };
  try {
    return { available: true, rows: await read() };
  } catch (error) {
    return { available: false, reason: `could not be read: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** The console's data for `userId`; `orgId` picks among the organizations they manage (default: the first). */
export async function consoleData(deps: ConsoleDataDeps, userId: string, orgId: string | undefined): Promise<ConsoleData> {
  const account = await deps.accounts.account(userId);
  const organizations = account.memberships
    .filter((m) => managing.has(m.role))
    .map((m) => ({ id: m.organization.id, name: m.organization.name, role: m.role }));
  if (organizations.length === 0) throw new TroupeError("forbidden", "the console is for organization owners and admins");
  const organization = orgId === undefined ? organizations[0] : organizations.find((o) => o.id === orgId);
  // An organization the user does not manage (or that does not exist) is the same 404.
  if (!organization) throw new TroupeError("not_found", "no such organization among those you own or administer");
  const projects = (await deps.accounts.orgs.listProjects(userId, organization.id, 100, null)).data.map((p) => ({ id: p.id, name: p.name }));
  const { sources } = deps;
  const [replicas, jobs, failures, usage, budgets, traffic, keyUse] = await Promise.all([
    deps.snapshots(),
    section(sources.jobsInFlight && (() => sources.jobsInFlight!(organization.id)), "jobs are not wired into this build yet"),
    section(sources.webhookFailures && (() => sources.webhookFailures!(organization.id)), "webhooks are not wired into this build yet"),
    section(sources.usageToday && (() => sources.usageToday!(organization.id, projects)), "usage is not wired into this build"),
    section(sources.budgets && (() => sources.budgets!(organization.id, projects)), "budgets are not wired into this build yet"),
    section(sources.traffic && (() => sources.traffic!(organization, projects)), "the request log is not wired into this build"),
    section(sources.keyUse && (() => sources.keyUse!(organization.id, projects)), "the request log is not wired into this build"),
  ]);
  return {
    generated_at: new Date(deps.now()).toISOString(),
    served_by: deps.replica,
    replicas,
    organization: { id: organization.id, name: organization.name },
    organizations,
    jobs_in_flight: jobs,
    webhook_failures: failures,
    usage_today: usage,
    budgets,
    traffic,
    key_use: keyUse,
    projects,
  };
}
