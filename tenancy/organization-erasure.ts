// The tenancy side of deleting an organization (docs/api/auth-and-accounts.md,
// "Deleting an organization"): what the organization has — projects,
// environments, keys, members, invitations — found through its indexes, and
// the store ops that remove every record, index entry and unique claim of
// it. Users stay (they are people, and may belong to other organizations);
// only their membership and their index entry for this organization go.
import type { DataStore, StoreOp } from "./data-store.ts";
import { keys, recordsOf } from "./records.ts";
import type { StoredApiKey } from "./types.ts";

/** Every member of an index (pages of 500). */
export async function indexMembers(store: DataStore, key: string): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await store.page(key, 500, cursor);
    out.push(...page.members);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return out;
}

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

/** The ops that remove the rest: invitations, memberships, environments, projects and, last, the organization. */
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
  const envsOf = await Promise.all(t.projectIds.map((p) => indexMembers(store, keys.projectEnvironments(p))));
  t.projectIds.forEach((projectId, i) => {
    for (const envId of envsOf[i] ?? []) ops.push({ op: "delete", key: keys.environment(envId) }, { op: "unindex", key: keys.projectEnvironments(projectId), member: envId });
    ops.push({ op: "delete", key: keys.project(projectId) }, { op: "unindex", key: keys.orgProjects(t.orgId), member: projectId });
  });
  ops.push({ op: "delete", key: keys.org(t.orgId) });
  return ops;
}
