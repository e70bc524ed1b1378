// Typed access to tenancy records: store keys in one place, and every read
// parsed with its schema.
import type { z } from "zod";
import { TroupeError } from "../core/errors.ts";
import type { DataStore } from "../core/data-store.ts";
import {
  environmentSchema,
  invitationSchema,
  membershipSchema,
  organizationSchema,
  projectSchema,
  sessionSchema,
  storedApiKeySchema,
  storedUserSchema,
} from "./types.ts";

export const keys = {
  user: (id: string) => `user:${id}`,
  email: (email: string) => `email:${email.toLowerCase()}`,
  session: (tokenHash: string) => `session:${tokenHash}`,
  org: (id: string) => `org:${id}`,
  membership: (orgId: string, userId: string) => `membership:${orgId}:${userId}`,
  orgMembers: (orgId: string) => `org-members:${orgId}`,
  userOrgs: (userId: string) => `user-orgs:${userId}`,
  project: (id: string) => `project:${id}`,
  orgProjects: (orgId: string) => `org-projects:${orgId}`,
  environment: (id: string) => `env:${id}`,
  projectEnvironments: (projectId: string) => `project-envs:${projectId}`,
  apiKey: (id: string) => `apikey:${id}`,
  apiKeyUsed: (id: string) => `apikey-used:${id}`,
  apiKeyHash: (hash: string) => `apikey-hash:${hash}`,
  environmentKeys: (envId: string) => `env-keys:${envId}`,
  invitation: (id: string) => `invitation:${id}`,
  invitationToken: (hash: string) => `invitation-token:${hash}`,
  orgInvitations: (orgId: string) => `org-invitations:${orgId}`,
  invitationTokenOf: (invitationId: string) => `invitation-token-of:${invitationId}`,
} as const;

/** The scopes of the exact quotas (core/quota-slots.ts), erased with their organization. */
export const quotaScopes = {
  apiKeys: (projectId: string) => `api-keys:${projectId}`,
  environments: (projectId: string) => `environments:${projectId}`,
  pendingInvitations: (orgId: string) => `invitations:${orgId}`,
} as const;

async function read<S extends z.ZodType>(store: DataStore, key: string, schema: S): Promise<z.output<S> | undefined> {
  const raw = await store.get(key);
  if (raw === undefined || raw === null) return undefined;
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new TroupeError("internal_error", `stored record ${key.split(":")[0]} is corrupt`);
  return parsed.data;
}

async function readMany<S extends z.ZodType>(store: DataStore, storeKeys: string[], schema: S): Promise<z.output<S>[]> {
  const raws = await store.getMany(storeKeys);
  const out: z.output<S>[] = [];
  for (const raw of raws) {
    if (raw === undefined || raw === null) continue;
    const parsed = schema.safeParse(raw);
    if (parsed.success) out.push(parsed.data);
  }
  return out;
}

export function recordsOf(store: DataStore) {
  return {
    user: (id: string) => read(store, keys.user(id), storedUserSchema),
    session: (hash: string) => read(store, keys.session(hash), sessionSchema),
    org: (id: string) => read(store, keys.org(id), organizationSchema),
    orgs: (ids: string[]) => readMany(store, ids.map(keys.org), organizationSchema),
    membership: (orgId: string, userId: string) => read(store, keys.membership(orgId, userId), membershipSchema),
    memberships: (orgIds: string[], userId: string) => readMany(store, orgIds.map((o) => keys.membership(o, userId)), membershipSchema),
    project: (id: string) => read(store, keys.project(id), projectSchema),
    projects: (ids: string[]) => readMany(store, ids.map(keys.project), projectSchema),
    environment: (id: string) => read(store, keys.environment(id), environmentSchema),
    environments: (ids: string[]) => readMany(store, ids.map(keys.environment), environmentSchema),
    apiKey: (id: string) => read(store, keys.apiKey(id), storedApiKeySchema),
    apiKeys: (ids: string[]) => readMany(store, ids.map(keys.apiKey), storedApiKeySchema),
    invitation: (id: string) => read(store, keys.invitation(id), invitationSchema),
    invitations: (ids: string[]) => readMany(store, ids.map(keys.invitation), invitationSchema),
  };
}

export type Records = ReturnType<typeof recordsOf>;
