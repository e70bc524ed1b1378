// The console's traffic sections, read from the request log's aggregates
// (tenancy/request-log-aggregates.ts), never from its entries: per
// organization and project, the last 24 hours in hourly points (requests,
// errors, p50/p95/p99, spend), and each key's use against its limits (this
// minute's requests and tokens against rpm and tpm, this month's spend
// against its budget, max_concurrent as set). With several replicas each
// series is every replica's buckets added (tenancy/request-log-series.ts);
// each section asks for all its series at once, one question to the others.
import { z } from "zod";
import { indexMembers, type DataStore } from "../../core/data-store.ts";
import type { SeriesPoint } from "../../tenancy/request-log-aggregates.ts";
import type { RequestLogSeriesReads, SeriesRead } from "../../tenancy/request-log-series.ts";
import { keys } from "../../tenancy/records.ts";
import type { ConsoleProject } from "./console-data.ts";

export interface ConsoleSeries {
  scope: "organization" | "project";
  id: string;
  name: string;
  points: SeriesPoint[];
}

export interface ConsoleKeyUse {
  id: string;
  name: string;
  project_name: string;
  live: boolean;
  rate_limit_per_minute: number;
  requests_this_minute: number;
  token_limit_per_minute: number | null;
  tokens_this_minute: number;
  max_concurrent: number | null;
  monthly_budget_usd: number | null;
  spent_this_month_usd: number;
}

const hourMs = 3_600_000;
/** The console shows at most this many projects' charts and keys (the first ones listed). */
const maxProjects = 20;
const maxKeysPerProject = 50;

export async function trafficSeries(log: RequestLogSeriesReads, org: { id: string; name: string }, projects: readonly ConsoleProject[], nowMs: number): Promise<ConsoleSeries[]> {
  const fromMs = nowMs - 23 * hourMs;
  const charted: Omit<ConsoleSeries, "points">[] = [{ scope: "organization", id: org.id, name: org.name }, ...projects.slice(0, maxProjects).map((p) => ({ scope: "project" as const, id: p.id, name: p.name }))];
  const points = await log.series(charted.map((c) => ({ scope: `${c.scope === "organization" ? "org" : "project"}:${c.id}`, resolution: "hour", fromMs, toMs: nowMs })));
  return charted.map((c, i) => ({ ...c, points: points[i] ?? [] }));
}

// Read loosely: a key record written by an older release lacks the newer limits.
const keyLimits = z.object({
  id: z.string(),
  name: z.string(),
  live: z.boolean(),
  revoked_at: z.string().nullable(),
  rate_limit_per_minute: z.number(),
  token_limit_per_minute: z.number().nullable().default(null),
  max_concurrent: z.number().nullable().default(null),
  monthly_budget_usd: z.number().nullable().default(null),
});

export async function keyUse(store: DataStore, log: RequestLogSeriesReads, projects: readonly ConsoleProject[], nowMs: number): Promise<ConsoleKeyUse[]> {
  const now = new Date(nowMs);
  const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  const listed: { project: ConsoleProject; key: z.infer<typeof keyLimits> }[] = [];
  for (const project of projects.slice(0, maxProjects)) {
    const keyIds: string[] = [];
    for (const env of await indexMembers(store, keys.projectEnvironments(project.id))) keyIds.push(...(await indexMembers(store, keys.environmentKeys(env))));
    for (const doc of await store.getMany(keyIds.slice(0, maxKeysPerProject).map(keys.apiKey))) {
      const key = keyLimits.safeParse(doc);
      if (!key.success || key.data.revoked_at !== null) continue;
      listed.push({ project, key: key.data });
    }
  }
  // Per key: this minute, then this month's days.
  const reads = listed.flatMap(({ key }): SeriesRead[] => [
    { scope: `key:${key.id}`, resolution: "minute", fromMs: nowMs, toMs: nowMs },
    { scope: `key:${key.id}`, resolution: "day", fromMs: monthStart, toMs: nowMs },
  ]);
  const series = await log.series(reads);
  return listed.map(({ project, key: k }, i): ConsoleKeyUse => {
    const minute = series[2 * i]?.[0];
    const month = series[2 * i + 1] ?? [];
    return {
      id: k.id,
      name: k.name,
      project_name: project.name,
      live: k.live,
      rate_limit_per_minute: k.rate_limit_per_minute,
      requests_this_minute: minute?.requests ?? 0,
      token_limit_per_minute: k.token_limit_per_minute,
      tokens_this_minute: minute?.tokens ?? 0,
      max_concurrent: k.max_concurrent,
      monthly_budget_usd: k.monthly_budget_usd,
      spent_this_month_usd: month.reduce((sum, p) => sum + p.spend_usd, 0),
    };
  });
}
