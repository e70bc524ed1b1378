// Deleting an organization (docs/api/auth-and-accounts.md, "Deleting an
// organization"): everything it has, everywhere it lives — tenancy records
// and claims (data store: lmdb or Redis), its keys (also refused on every
// replica through the revocation broadcast), webhooks, jobs and
// conversations (their actors' state and reminders, their directory entries,
// webhook delivery records), its vector records (embedded index or
// Elasticsearch) and its files (data directory or S3). What stays is the
// usage ledger, which billing law requires us to keep: opaque ids, model,
// quantities and cost, nothing that names a person or holds content
// (docs/decisions.md, "Deleting an organization").
//
// The steps run in an order that a failure can resume from: the keys first
// (nothing new is made meanwhile), the organization record and the
// memberships last, so a retried DELETE finds the organization and finishes.
import { isTroupeError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { ActorHost } from "../actors/host.ts";
import { CONVERSATION_ACTOR } from "../actors/conversation/conversation-actor.ts";
import type { ConversationDirectory } from "../actors/conversation/directory.ts";
import { JOB_ACTOR } from "../actors/job/job-actor.ts";
import type { JobDirectory } from "../actors/job/directory.ts";
import type { WebhookDirectory } from "../actors/webhooks/directory.ts";
import { WEBHOOK_ACTOR } from "../actors/webhooks/webhook-actor.ts";
import type { IndexedFileStore } from "../media/indexed-file-store.ts";
import type { VectorIndex } from "../vectors/vector-index.ts";
import type { ApiKeyService } from "../tenancy/api-keys.ts";
import type { DataStore } from "../tenancy/data-store.ts";
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
  log: Logger;
}

export interface ErasureReport {
  api_keys: number;
  conversations: number;
  jobs: number;
  webhooks: number;
  vector_records: number;
  files: number;
}

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
  const owner = { organization_id: orgId, environment_id: null };
  const forget = async (type: string, ids: readonly string[]): Promise<void> => {
    if (!actors.forget) {
      deps.log.warn("this actor host cannot delete actor state: the organization's actors keep theirs", { actor_type: type, actors: ids.length });
      return;
    }
    for (const id of ids) await actors.forget(type, id);
  };

  await store.apply(keyErasureOps(tenancy));
  await deps.apiKeys.broadcastRemoved(tenancy.apiKeys);

  // Webhooks: deliveries stopped and their records deleted by the actor, then the actor and the directory entries.
  const webhookIds = await deps.webhooks.idsOf(orgId);
  for (const id of webhookIds) await settle(actors.call(WEBHOOK_ACTOR, id, "erase", owner));
  await forget(WEBHOOK_ACTOR, webhookIds);
  await deps.webhooks.eraseOrganization(orgId, tenancy.environmentIds);

  // Jobs: unlisted first, an unfinished one cancelled (no further provider calls or billing), then forgotten.
  const jobIds = await deps.jobs.eraseOrganization(orgId, tenancy.environmentIds);
  for (const id of jobIds) await settle(actors.call(JOB_ACTOR, id, "cancel", { organization_id: orgId }));
  await forget(JOB_ACTOR, jobIds);
  await deps.jobs.eraseDocuments(jobIds);

  // Conversations: pending summaries written first, so none lands after the erasure.
  await deps.conversations.flush();
  const conversationIds = await deps.conversations.eraseOrganization(orgId, tenancy.environmentIds);
  await forget(CONVERSATION_ACTOR, conversationIds);
  await deps.conversations.flush();
  await deps.conversations.eraseDocuments(conversationIds);

  const vectorRecords = await deps.vectors.deleteOrganization(orgId);
  // After the jobs: a job's last step may have stored its result file.
  const files = await deps.files.deleteOrganizationFiles(orgId);
  await store.apply(await tenancyErasureOps(store, tenancy));
  return { api_keys: tenancy.apiKeys.length, conversations: conversationIds.length, jobs: jobIds.length, webhooks: webhookIds.length, vector_records: vectorRecords, files };
}
