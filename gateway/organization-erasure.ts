// Deleting an organization (docs/api/auth-and-accounts.md, "Deleting an
// organization"): everything it has, everywhere it lives — tenancy records
// and claims (data store: lmdb or Redis), its keys (also refused on every
// replica through the revocation broadcast), webhooks, jobs,
// stored responses and conversations (their actors' state and reminders, their directory entries,
// webhook delivery records), its request log, its vector records (embedded index or
// Elasticsearch) and its files (data directory or S3). What stays is the
// usage ledger, which billing law requires us to keep: opaque ids, model,
// quantities and cost, nothing that names a person or holds content
// (docs/decisions.md, "Deleting an organization").
//
// Each actor is erased by a method of its own (a turn that clears its
// reminders and leaves its initial state, which both hosts then delete from
// their store): daprd deletes actor state only from inside a turn, so this is
// the one way that works on the embedded and the Dapr host alike.
//
// The steps run in an order that a failure can resume from: the keys first
// (nothing new is made meanwhile), the organization record and the
// memberships last, so a retried DELETE finds the organization and finishes.
import { z } from "zod";
import { isTroupeError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { actorRef } from "../actors/actor.ts";
import { callActor, type ActorHost } from "../actors/host.ts";
import { CONVERSATION_ACTOR, type ConversationActorDefinition } from "../actors/conversation/conversation-actor.ts";
import type { ConversationDirectory } from "../actors/conversation/directory.ts";
import { JOB_ACTOR, type JobActorDefinition } from "../actors/job/job-actor.ts";
import type { JobDirectory } from "../actors/job/directory.ts";
import type { WebhookDirectory } from "../actors/webhooks/directory.ts";
import { WEBHOOK_ACTOR, type WebhookActorDefinition } from "../actors/webhooks/webhook-actor.ts";
import type { IndexedFileStore } from "../media/indexed-file-store.ts";
import type { VectorIndex } from "../vectors/vector-index.ts";
import type { ApiKeyService } from "../tenancy/api-keys.ts";
import type { DataStore } from "../core/data-store.ts";
import { collectTenancy, keyErasureOps, tenancyErasureOps } from "../tenancy/organization-erasure.ts";

export interface ErasureDeps {
  store: DataStore;
  apiKeys: ApiKeyService;
  actors: ActorHost;
  conversations: ConversationDirectory;
  jobs: JobDirectory;
  webhooks: WebhookDirectory;
  vectors: VectorIndex;
  files: IndexedFileStore;
  /** Stored Responses API responses (their ResponseActors and the per-organization index that lists them). */
  responses: { eraseOrganization(orgId: string): Promise<number> };
  /** Conversations API conversations (their head, page and ref actors and the per-organization index that lists them). */
  openAiConversations: { eraseOrganization(orgId: string): Promise<number> };
  /** Batches (their BatchActors, answers, input and output files). */
  batches: { eraseOrganization(orgId: string): Promise<void> };
  /** The response cache: every cached answer in every store, and the projects' cache settings. */
  responseCache: { eraseOrganization(orgId: string, projectIds: readonly string[]): Promise<void> };
  /** The request log: its projects' entries and the organization's, projects' and keys' aggregates. */
  requestLog: { eraseOrganization(orgId: string, projectIds: readonly string[]): Promise<number> };
  log: Logger;
}

/** What one erasure removed, counted by kind: the DELETE route's `erased` field in the OpenAPI document. */
export const erasureReportSchema = z.object({
  api_keys: z.number(),
  conversations: z.number(),
  jobs: z.number(),
  webhooks: z.number(),
  vector_records: z.number(),
  files: z.number(),
});

export type ErasureReport = z.infer<typeof erasureReportSchema>;

const conversationActor = actorRef<ConversationActorDefinition>(CONVERSATION_ACTOR);
const jobActor = actorRef<JobActorDefinition>(JOB_ACTOR);
const webhookActor = actorRef<WebhookActorDefinition>(WEBHOOK_ACTOR);

/** Calls an actor method, treating "not found"/"conflict" (already gone, already finished) as done. */
async function settle(call: Promise<unknown>): Promise<void> {
  await call.catch((error: unknown) => {
    if (isTroupeError(error) && (error.code === "not_found" || error.code === "conflict")) return;
    throw error;
  });
}

export async function eraseOrganization(deps: ErasureDeps, orgId: string): Promise<ErasureReport> {
  const { store, actors } = deps;
  const tenancy = await collectTenancy(store, orgId);
  const owner = { organization_id: orgId };

  await store.apply(keyErasureOps(tenancy));
  await deps.apiKeys.broadcastRemoved(tenancy.apiKeys);

  // Webhooks: deliveries stopped, their records and the actor's state deleted by the actor, then the directory entries.
  const webhookIds = await deps.webhooks.idsOf(orgId);
  for (const id of webhookIds) await settle(callActor(actors, webhookActor, id, "erase", owner));
  await deps.webhooks.eraseOrganization(orgId, tenancy.environmentIds);

  // Jobs: unlisted first, then deleted by the actor (an unfinished one cancelled first: no further provider calls or billing).
  const jobIds = await deps.jobs.eraseOrganization(orgId, tenancy.environmentIds);
  let jobFiles = 0;
  for (const id of jobIds) {
    await settle(callActor(actors, jobActor, id, "delete", owner).then((gone) => (jobFiles += gone.files_deleted)));
  }
  await deps.jobs.eraseDocuments(jobIds);

  // Conversations: pending summaries written first, so none lands after the erasure.
  await deps.conversations.flush();
  const conversationIds = await deps.conversations.eraseOrganization(orgId, tenancy.environmentIds);
  for (const id of conversationIds) await settle(callActor(actors, conversationActor, id, "erase", owner));
  await deps.conversations.flush();
  await deps.conversations.eraseDocuments(conversationIds);

  // Stored responses: not in the report (its shape is /v1's), gone all the same.
  await deps.responses.eraseOrganization(orgId);
  await deps.openAiConversations.eraseOrganization(orgId);
  await deps.batches.eraseOrganization(orgId);
  await deps.responseCache.eraseOrganization(orgId, tenancy.projectIds);
  await deps.requestLog.eraseOrganization(orgId, tenancy.projectIds);

  const vectorRecords = await deps.vectors.deleteOrganization(orgId);
  // After the jobs: a job's last step may have stored its result file (a deleted job removed its own files).
  const files = jobFiles + (await deps.files.deleteOrganizationFiles(orgId));
  await store.apply(await tenancyErasureOps(store, tenancy));
  return { api_keys: tenancy.apiKeys.length, conversations: conversationIds.length, jobs: jobIds.length, webhooks: webhookIds.length, vector_records: vectorRecords, files };
}
