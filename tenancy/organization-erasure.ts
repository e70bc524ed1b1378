// The tenancy side of deleting an organization (docs/api/auth-and-accounts.md,
// "Deleting an organization"): what the organization has — projects,
// environments, keys, members, invitations — found through its indexes, and
// the store ops that remove every record, index entry and unique claim of
// it. Users stay (they are people, and may belong to other organizations);
// only their membership and their index entry for this organization go.
import { indexMembers, type DataStore, type StoreOp } from "../core/data-store.ts";
import { quotaErasureOps } from "../core/quota-slots.ts";
import { keys, quotaScopes, recordsOf } from "./records.ts";
import type { StoredApiKey } from "./types.ts";
import { providerCredentialErasureOps } from "./provider-credentials.ts";

export interface OrganizationTenancy {
  orgId: string;
  projectIds: string[];
  environmentIds: string[];
  apiKeys: StoredApiKey[];
  memberIds: string[];
  invitationIds: string[];
}

export async function collectTenancy(store: DataStore, orgId: string): Promise<OrganizationTenancy> {
  const records = recordsOf(store);
  const projectIds = await indexMembers(store, keys.orgProjects(orgId));
  const environmentIds = (await Promise.all(projectIds.map((p) => indexMembers(store, keys.projectEnvironments(p))))).flat();
  const keyIds = (await Promise.all(environmentIds.map((e) => indexMembers(store, keys.environmentKeys(e))))).flat();
  return {
    orgId,
    projectIds,
    environmentIds,
    apiKeys: await records.apiKeys(keyIds),
    memberIds: await indexMembers(store, keys.orgMembers(orgId)),
    invitationIds: await indexMembers(store, keys.orgInvitations(orgId)),
  };
}

/** The ops that remove the organization's API keys (their revocation is broadcast too: ApiKeyService.broadcastRemoved). */
export function keyErasureOps(t: OrganizationTenancy): StoreOp[] {
  const ops: StoreOp[] = [];
  for (const key of t.apiKeys) {
    ops.push(
      { op: "release", key: keys.apiKeyHash(key.key_hash) },
      { op: "delete", key: keys.apiKey(key.id) },
      { op: "delete", key: keys.apiKeyUsed(key.id) },
      { op: "unindex", key: keys.environmentKeys(key.environment_id), member: key.id },
    );
  }
  return ops;
}

/** The ops that remove the rest: invitations, memberships, the exact quotas' slots (core/quota-slots.ts), stored provider credentials, environments, projects and, last, the organization. */
export async function tenancyErasureOps(store: DataStore, t: OrganizationTenancy): Promise<StoreOp[]> {
  const ops: StoreOp[] = [];
  const tokenHashes = await store.getMany(t.invitationIds.map(keys.invitationTokenOf));
  t.invitationIds.forEach((id, i) => {
    const hash = tokenHashes[i];
    if (typeof hash === "string") ops.push({ op: "release", key: keys.invitationToken(hash) });
    ops.push({ op: "delete", key: keys.invitationTokenOf(id) }, { op: "delete", key: keys.invitation(id) }, { op: "unindex", key: keys.orgInvitations(t.orgId), member: id });
  });
  for (const userId of t.memberIds) {
    ops.push(
      { op: "delete", key: keys.membership(t.orgId, userId) },
      { op: "unindex", key: keys.orgMembers(t.orgId), member: userId },
      { op: "unindex", key: keys.userOrgs(userId), member: t.orgId },
    );
  }
  ops.push(...(await providerCredentialErasureOps(store, t.orgId)));
  const scopes = [quotaScopes.pendingInvitations(t.orgId), ...t.projectIds.flatMap((p) => [quotaScopes.apiKeys(p), quotaScopes.environments(p)])];
  for (const scope of scopes) ops.push(...(await quotaErasureOps(store, scope)));
  const envsOf = await Promise.all(t.projectIds.map((p) => indexMembers(store, keys.projectEnvironments(p))));
  t.projectIds.forEach((projectId, i) => {
    for (const envId of envsOf[i] ?? []) ops.push({ op: "delete", key: keys.environment(envId) }, { op: "unindex", key: keys.projectEnvironments(projectId), member: envId });
    ops.push({ op: "delete", key: keys.project(projectId) }, { op: "unindex", key: keys.orgProjects(t.orgId), member: projectId });
  });
  ops.push({ op: "delete", key: keys.org(t.orgId) });
  return ops;
}

/**
 * The keys of one kind of per-organization document (conversation summaries,
 * job snapshots): the document by id, and the organization's and each
 * environment's index of ids.
 */
export interface IndexedDocuments {
  documentKey(id: string): string;
  orgIndexKey(orgId: string): string;
  environmentIndexKey(envId: string): string;
}

/**
 * Deleting an organization: removes its documents of one kind and their index
 * entries (the organization's and each of `environmentIds`'); answers their ids.
 */
export async function eraseIndexedDocuments(store: DataStore, docs: IndexedDocuments, organizationId: string, environmentIds: readonly string[]): Promise<string[]> {
  const ids = await indexMembers(store, docs.orgIndexKey(organizationId));
  const ops: StoreOp[] = [];
  for (const id of ids) {
    ops.push({ op: "unindex", key: docs.orgIndexKey(organizationId), member: id });
    for (const env of environmentIds) ops.push({ op: "unindex", key: docs.environmentIndexKey(env), member: id });
  }
  if (ops.length > 0) await store.apply(ops);
  await deleteDocuments(store, docs, ids);
  return ids;
}

/** Deletes these documents (again after their actors are gone: a turn that was in flight may have re-written one). */
export async function deleteDocuments(store: DataStore, docs: Pick<IndexedDocuments, "documentKey">, ids: readonly string[]): Promise<void> {
  if (ids.length > 0) await store.apply(ids.map((id) => ({ op: "delete" as const, key: docs.documentKey(id) })));
}
