// Organizations, their projects and the projects' environments
// (docs/api/auth-and-accounts.md). A new project comes with a production and a development
// environment; a non-production environment comes with its test key. Every
// change touching several records is one atomic store batch.
import type { Clock } from "../core/clock.ts";
import { isoTime } from "../core/clock.ts";
import { TroupeError } from "../core/errors.ts";
import { prefixedId } from "../core/ids.ts";
import { applyWithinQuota, quotaExceeded, type QuotaScope } from "../core/quota-slots.ts";
import { requireMembership, requireRole } from "./access.ts";
import type { ApiKeyService, NewTestKey } from "./api-keys.ts";
import type { DataStore, StoreOp } from "../core/data-store.ts";
import { keys, quotaScopes } from "./records.ts";
import { TenancyService } from "./tenancy-service.ts";
import type { Environment, Membership, Organization, Project } from "./types.ts";

export interface EnvironmentWithKey {
  environment: Environment;
  test_key?: NewTestKey;
}

/** How many records one account, organization or project may hold (ORGANIZATIONS_PER_ACCOUNT, PROJECTS_PER_ORGANIZATION, API_KEYS_PER_PROJECT, ENVIRONMENTS_PER_PROJECT, PENDING_INVITATIONS_PER_ORGANIZATION). */
export interface TenancyQuotas {
  organizationsPerAccount: number;
  projectsPerOrganization: number;
  apiKeysPerProject: number;
  environmentsPerProject: number;
  pendingInvitationsPerOrganization: number;
}

/** A project's production and development environments, made with it: they count against ENVIRONMENTS_PER_PROJECT without holding a slot. */
const automaticEnvironments = 2;

export class OrganizationService extends TenancyService {
  private readonly apiKeys: ApiKeyService;
  private readonly quotas: TenancyQuotas;

  constructor(store: DataStore, clock: Clock, apiKeys: ApiKeyService, quotas: TenancyQuotas) {
    super(store, clock);
    this.apiKeys = apiKeys;
    this.quotas = quotas;
  }

  /**
   * 403 quota_exceeded (not 429: waiting never frees a place) when the index
   * already holds `max` members: one page of `max` read, not a count of all.
   * Checked before the write, not in one batch with it: two creates racing
   * at the last place can both pass, so the limit may be passed by the
   * number of concurrent creates, never more.
   */
  private async requireRoom(indexKey: string, max: number, what: string): Promise<void> {
    const page = await this.store.page(indexKey, max, null);
    if (page.members.length >= max) throw quotaExceeded(what, max);
  }

  newOrg(name: string, now: number): Organization {
    return { id: prefixedId("org", now), name, created_at: isoTime(now), file_retention_days: null };
  }

  /** An organization with its owner's membership, as batch ops. */
  orgOps(org: Organization, ownerId: string, now: number): StoreOp[] {
    const membership: Membership = { organization_id: org.id, user_id: ownerId, role: "owner", created_at: isoTime(now) };
    return [
      { op: "put", key: keys.org(org.id), value: org },
      { op: "put", key: keys.membership(org.id, ownerId), value: membership },
      { op: "index", key: keys.orgMembers(org.id), member: ownerId, score: now },
      { op: "index", key: keys.userOrgs(ownerId), member: org.id, score: now },
    ];
  }

  async createOrg(userId: string, name: string) {
    await this.requireRoom(keys.userOrgs(userId), this.quotas.organizationsPerAccount, "this account belongs to as many organizations as it may");
    const now = this.clock.now();
    const org = this.newOrg(name, now);
    await this.store.apply(this.orgOps(org, userId, now));
    return org;
  }

  async listOrgs(userId: string, limit: number, cursor: string | null | undefined) {
    const page = await this.store.page(keys.userOrgs(userId), limit, cursor);
    return { data: await this.records.orgs(page.members), next_cursor: page.nextCursor };
  }

  async getOrg(userId: string, orgId: string): Promise<Organization> {
    await requireMembership(this.records, userId, orgId);
    const org = await this.records.org(orgId);
    if (!org) throw new TroupeError("not_found", "organization not found");
    return org;
  }

  /** Renames the organization or sets its file retention (owners and admins). */
  async updateOrg(userId: string, orgId: string, change: { name?: string | undefined; file_retention_days?: number | null | undefined }): Promise<Organization> {
    const membership = await requireMembership(this.records, userId, orgId);
    requireRole(membership, "admin", "changing the organization");
    const org = await this.records.org(orgId);
    if (!org) throw new TroupeError("not_found", "organization not found");
    const updated: Organization = {
      ...org,
      ...(change.name === undefined ? {} : { name: change.name }),
      ...(change.file_retention_days === undefined ? {} : { file_retention_days: change.file_retention_days }),
    };
    await this.store.apply([{ op: "put", key: keys.org(orgId), value: updated }]);
    return updated;
  }

  /** The user's role in the organization; undefined when not a member. */
  async roleIn(userId: string, orgId: string): Promise<Membership["role"] | undefined> {
    return (await this.records.membership(orgId, userId))?.role;
  }

  /** The organization's own file retention: days, null (the default), undefined when it does not exist. */
  async fileRetentionDays(orgId: string): Promise<number | null | undefined> {
    return (await this.records.org(orgId))?.file_retention_days;
  }

  newProject(orgId: string, name: string, now: number): Project {
    return { id: prefixedId("prj", now), organization_id: orgId, name, created_at: isoTime(now) };
  }

  /** A project and its two environments; development comes with its test key. */
  projectOps(project: Project, now: number): { ops: StoreOp[]; environments: EnvironmentWithKey[] } {
    const ops: StoreOp[] = [
      { op: "put", key: keys.project(project.id), value: project },
      { op: "index", key: keys.orgProjects(project.organization_id), member: project.id, score: now },
    ];
    const environments: EnvironmentWithKey[] = [];
    for (const [name, production] of [["production", true], ["development", false]] as const) {
      const setup = this.environmentOps(project, name, production, now);
      ops.push(...setup.ops);
      environments.push(setup.result);
    }
    return { ops, environments };
  }

  private environmentOps(project: Project, name: string, production: boolean, now: number): { ops: StoreOp[]; result: EnvironmentWithKey } {
    const environment: Environment = {
      id: prefixedId("env", now),
      project_id: project.id,
      organization_id: project.organization_id,
      name,
      production,
      created_at: isoTime(now),
    };
    const ops: StoreOp[] = [
      { op: "put", key: keys.environment(environment.id), value: environment },
      { op: "index", key: keys.projectEnvironments(project.id), member: environment.id, score: now },
    ];
    if (production) return { ops, result: { environment } };
    const testKey = this.apiKeys.prepareTestKey(environment, now);
    ops.push(...testKey.ops);
    return { ops, result: { environment, test_key: testKey.created } };
  }

  async createProject(userId: string, orgId: string, name: string) {
    const membership = await requireMembership(this.records, userId, orgId);
    requireRole(membership, "admin", "creating a project");
    await this.requireRoom(keys.orgProjects(orgId), this.quotas.projectsPerOrganization, "this organization holds as many projects as it may");
    const now = this.clock.now();
    const project = this.newProject(orgId, name, now);
    const setup = this.projectOps(project, now);
    await this.store.apply(setup.ops);
    return { project, environments: setup.environments };
  }

  async listProjects(userId: string, orgId: string, limit: number, cursor: string | null | undefined) {
    await requireMembership(this.records, userId, orgId);
    const page = await this.store.page(keys.orgProjects(orgId), limit, cursor);
    return { data: await this.records.projects(page.members), next_cursor: page.nextCursor };
  }

  /** The project, if the user belongs to its organization (404 otherwise). */
  async projectFor(userId: string, projectId: string): Promise<{ project: Project; membership: Membership }> {
    const project = await this.records.project(projectId);
    if (!project) throw new TroupeError("not_found", "project not found");
    const membership = await requireMembership(this.records, userId, project.organization_id, "project");
    return { project, membership };
  }

  async createEnvironment(userId: string, projectId: string, input: { name: string; production?: boolean | undefined }) {
    const { project, membership } = await this.projectFor(userId, projectId);
    requireRole(membership, "admin", "creating an environment");
    const max = this.quotas.environmentsPerProject;
    // Every environment counts, so one made before slots existed too (a check that, unlike the slot, can be passed by racing creates).
    await this.requireRoom(keys.projectEnvironments(project.id), max, "this project holds as many environments as it may");
    const now = this.clock.now();
    const setup = this.environmentOps(project, input.name, input.production ?? false, now);
    await applyWithinQuota(this.store, this.environmentQuota(project.id), setup.result.environment.id, setup.ops);
    return setup.result;
  }

  /** The slots of environments made by API: the limit less the project's automatic two; environments are never deleted but with their organization. */
  private environmentQuota(projectId: string): QuotaScope {
    const max = this.quotas.environmentsPerProject;
    return {
      scope: quotaScopes.environments(projectId),
      capacity: max - automaticEnvironments,
      counting: async (ids) => new Set((await this.records.environments(ids)).map((e) => e.id)),
      refusal: () => quotaExceeded("this project holds as many environments as it may", max),
    };
  }

  async listEnvironments(userId: string, projectId: string, limit: number, cursor: string | null | undefined) {
    await this.projectFor(userId, projectId);
    const page = await this.store.page(keys.projectEnvironments(projectId), limit, cursor);
    return { data: await this.records.environments(page.members), next_cursor: page.nextCursor };
  }
}
