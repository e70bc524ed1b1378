// The chaos run's end-of-run audits over what the load left behind: every
// job that ended had its webhook event delivered, and nothing
// was billed twice. They run after the load stopped and the drain period, on
// figures the workloads recorded while the faults happened.
import { RedisLedgerStore } from "../../tenancy/redis-ledger-store.ts";
import { periodOf } from "../../tenancy/ledger.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import type { WebhookReceiver } from "../../test/fakes/webhook-receiver.ts";
import type { Balancer } from "./balancer.ts";

/** A job as the video workload last read it, once final. */
export interface FinalJob {
  id: string;
  status: string;
  segments: { status: string }[];
  /** Why a failed job failed (printed with the check). */
  error?: unknown;
}

export interface AuditResult {
  problems: string[];
  /** One line of figures for the report. */
  summary: string;
  figures: Record<string, number>;
}

/**
 * Registers the organization's webhook for job events on `receiver`. The
 * receiver answers 503 to the first attempt of every fourth event, so the run
 * also exercises retries (same event id, delivered again after the 503).
 */
export async function subscribeJobEvents(client: Balancer, receiver: WebhookReceiver): Promise<void> {
  const created = await client.send("POST", "/v1/webhooks", { url: receiver.url, events: ["job.completed", "job.failed"] });
  const secret = (created.body as { secret?: string }).secret;
  if (created.status !== 201 || !secret) throw new Error(`creating the webhook: ${created.status} ${JSON.stringify(created.body)}`);
  receiver.secret = secret;
  let events = 0;
  const refused = new Set<string>();
  receiver.answerFor = (eventId, nth) => {
    if (nth === 1 && events++ % 4 === 3) refused.add(eventId);
    return nth === 1 && refused.has(eventId) ? { status: 503 } : { status: 200 };
  };
}

/** Every final job's event reached the receiver at least once, verified, with one event id and the right type. */
export function auditWebhooks(receiver: WebhookReceiver, jobs: FinalJob[], lostSubmissions: number): AuditResult {
  const problems: string[] = [];
  const byJob = new Map<string, { eventId: string; type: string; verified: boolean; answered: number | "hang" }[]>();
  for (const d of receiver.received) {
    const jobId = (d.body["data"] as { job?: { id?: string } } | undefined)?.job?.id ?? "";
    byJob.set(jobId, [...(byJob.get(jobId) ?? []), d]);
  }
  let delivered = 0;
  let duplicates = 0;
  for (const job of jobs) {
    const expected = job.status === "completed" ? "job.completed" : "job.failed";
    const got = byJob.get(job.id) ?? [];
    const accepted = got.filter((d) => d.answered === 200);
    if (accepted.length === 0) problems.push(`webhook: job ${job.id} (${job.status}) never delivered (${got.length} attempts received)`);
    else delivered++;
    duplicates += Math.max(0, accepted.length - 1);
    if (new Set(got.map((d) => d.eventId)).size > 1) problems.push(`webhook: job ${job.id} delivered under ${new Set(got.map((d) => d.eventId)).size} event ids`);
    if (got.some((d) => d.type !== expected)) problems.push(`webhook: job ${job.id} is ${job.status} but got ${got.map((d) => d.type).join(", ")}`);
    if (got.some((d) => !d.verified)) problems.push(`webhook: job ${job.id}: a delivery failed signature verification`);
  }
  const known = new Set(jobs.map((j) => j.id));
  const strangers = [...byJob.keys()].filter((id) => !known.has(id));
  // A submission whose answer a fault lost may still have made a job, whose event then arrives unannounced: no more of those.
  if (strangers.length > lostSubmissions) problems.push(`webhook: events for ${strangers.length} jobs the run did not see end (> ${lostSubmissions} lost submissions): ${strangers.join(", ")}`);
  const refused = receiver.received.filter((d) => d.answered !== 200).length;
  return {
    problems,
    summary: `webhooks: ${delivered}/${jobs.length} ended jobs delivered, ${duplicates} duplicate deliveries (same event id), ${refused} attempts answered 503 on purpose and retried, ${receiver.received.length} attempts in all, all verified: ${receiver.received.every((d) => d.verified)}, ${strangers.length} events of jobs whose submission answer was lost`,
    figures: { jobs: jobs.length, delivered, duplicates, refused, attempts: receiver.received.length, unannounced: strangers.length },
  };
}

/** What the load saw succeed, to hold the ledger against. */
export interface ObservedSuccesses {
  chat: number;
  agentTurns: number;
  /**
   * Of those, the ones a replica answered in the last second before its
   * kill -9. Reported, not allowed for: each record is in the replica's
   * usage journal before its call is answered, and the restarted replica
   * replays it, so none may be missing.
   */
  killedWindow: { chat: number; agentTurns: number };
}

/**
 * The project's ledger, read from Redis: each usage_key once, each completed
 * segment of each completed job billed exactly once (however many replicas
 * died mid-segment), and at least one record per successful chat call and
 * agent turn, including those a replica answered just before its kill -9
 * (a failed request may still be billed: its answer was lost on the way).
 */
export async function auditLedger(redisUrl: string, projectId: string, startedAtMs: number, jobs: FinalJob[], observed: ObservedSuccesses): Promise<AuditResult> {
  const store = new RedisLedgerStore(redisUrl);
  const periods = [...new Set([periodOf(new Date(startedAtMs).toISOString()), periodOf(new Date().toISOString())])];
  const records: UsageRecord[] = [];
  try {
    for (const period of periods) records.push(...(await store.records(projectId, period)));
  } finally {
    await store.close();
  }
  const problems: string[] = [];
  const perKey = new Map<string, number>();
  for (const r of records) perKey.set(r.usage_key, (perKey.get(r.usage_key) ?? 0) + 1);
  const twice = [...perKey].filter(([, n]) => n > 1);
  if (twice.length) problems.push(`ledger: ${twice.length} usage keys billed more than once, e.g. ${twice.slice(0, 3).map(([k, n]) => `${k} ×${n}`).join(", ")}`);
  if (records.some((r) => !r.live)) problems.push(`ledger: ${records.filter((r) => !r.live).length} records not live (the load uses a live key)`);

  let segments = 0;
  for (const job of jobs.filter((j) => j.status === "completed")) {
    job.segments.forEach((segment, i) => {
      if (segment.status !== "completed") return;
      segments++;
      const n = perKey.get(`job:${job.id}:segment:${i}`) ?? 0;
      if (n !== 1) problems.push(`ledger: job ${job.id} segment ${i} billed ${n} times`);
    });
  }
  const chatRecords = records.filter((r) => r.category === "chat").length;
  const agentTurns = new Set(records.filter((r) => r.category === "agents").map((r) => r.request_id)).size;
  const { killedWindow } = observed;
  if (chatRecords < observed.chat)
    problems.push(`ledger: ${chatRecords} chat records < ${observed.chat} successful chat calls (${killedWindow.chat} answered by a replica in its last second before kill -9)`);
  if (agentTurns < observed.agentTurns)
    problems.push(`ledger: agent calls of ${agentTurns} turns < ${observed.agentTurns} successful turns (${killedWindow.agentTurns} answered by a replica in its last second before kill -9)`);
  const segmentRecords = records.filter((r) => r.usage_key.includes(":segment:")).length;
  return {
    problems,
    summary: `ledger: ${records.length} records, ${perKey.size} distinct usage keys, ${twice.length} billed twice; chat ${chatRecords} records for ${observed.chat} successes; agents ${agentTurns} turns billed for ${observed.agentTurns} successes (answered in a killed replica's last second, all required: ${killedWindow.chat} chat, ${killedWindow.agentTurns} turns); ${segmentRecords} segment records for ${segments} completed segments`,
    figures: {
      records: records.length,
      keys: perKey.size,
      billedTwice: twice.length,
      chatRecords,
      chatOk: observed.chat,
      agentTurnsBilled: agentTurns,
      agentTurnsOk: observed.agentTurns,
      killedWindowChat: killedWindow.chat,
      killedWindowTurns: killedWindow.agentTurns,
      segmentRecords,
      segments,
    },
  };
}
