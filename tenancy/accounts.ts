// Accounts: signup, login/logout/sessions, organizations, projects,
// environments and invitations (DESIGN.md §4 "Accounts"). Every change that
// touches several records is one atomic store batch.
import type { Clock } from "../core/clock.ts";
import { isoTime } from "../core/clock.ts";
import { TroupeError } from "../core/errors.ts";
import { prefixedId, secretToken } from "../core/ids.ts";
import type { TenancyConfig } from "../core/config.ts";
import { requireMembership, requireRole, roleAtLeast } from "./access.ts";
import { newInvitationToken, newSessionToken, sha256 } from "./key-format.ts";
import { hashPassword, verifyAgainstDummy, verifyPassword } from "./passwords.ts";
import { keys, recordsOf, type Records } from "./records.ts";
import { ClaimTakenError, type StoreOp, type DataStore } from "./data-store.ts";
import type { ApiKeyService, NewTestKey } from "./api-keys.ts";
import type { Environment, Invitation, Membership, Organization, Project, Role, Session, StoredUser, User } from "./types.ts";

export interface EnvironmentWithKey {
  environment: Environment;
  test_key?: NewTestKey;
}

export interface SessionGrant {
  session_token: string;
  csrf_token: string;
  expires_at: string;
}

const invitationTtlMs = 7 * 24 * 3600_000; // a week, like most dashboards

function publicUser(user: StoredUser): User {
  return { id: user.id, email: user.email, name: user.name, created_at: user.created_at };
}

export class AccountService {
  private readonly store: DataStore;
  private readonly records: Records;
  private readonly config: TenancyConfig;
  private readonly clock: Clock;
  private readonly apiKeys: ApiKeyService;

  constructor(store: DataStore, config: TenancyConfig, clock: Clock, apiKeys: ApiKeyService) {
    this.store = store;
    this.records = recordsOf(store);
    this.config = config;
    this.clock = clock;
    this.apiKeys = apiKeys;
  }

  private now(): string {
    return isoTime(this.clock.now());
  }

  async signup(input: { email: string; password: string; name?: string | undefined; organization_name?: string | undefined }) {
    if (!this.config.signupEnabled) throw new TroupeError("forbidden", "signup is turned off on this server");
    const now = this.clock.now();
    const user: StoredUser = {
      id: prefixedId("usr", now),
      email: input.email.toLowerCase(),
      name: input.name ?? null,
      created_at: isoTime(now),
      password_hash: await hashPassword(input.password),
    };
    const orgName = input.organization_name ?? `${input.name ?? user.email}'s organization`;
    const org = this.newOrg(orgName, now);
    const ops: StoreOp[] = [
      { op: "claim", key: keys.email(user.email), value: user.id },
      { op: "put", key: keys.user(user.id), value: user },
      ...this.orgOps(org, user.id, now),
    ];
    const project = this.newProject(org.id, "Default project", now);
    const projectSetup = this.projectOps(project, now);
    ops.push(...projectSetup.ops);
    const grant = this.sessionOps(user.id, now);
    ops.push(...grant.ops);
    try {
      await this.store.apply(ops);
    } catch (error) {
      if (error instanceof ClaimTakenError) throw new TroupeError("conflict", "an account with this email already exists");
      throw error;
    }
    return {
      user: publicUser(user),
      organization: org,
      project,
      environments: projectSetup.environments,
      ...grant.grant,
    };
  }

  async login(input: { email: string; password: string }) {
    const userId = await this.store.lookup(keys.email(input.email));
    const user = userId ? await this.records.user(userId) : undefined;
    const ok = user ? await verifyPassword(input.password, user.password_hash) : await verifyAgainstDummy(input.password);
    if (!user || !ok) throw new TroupeError("unauthorized", "email or password is wrong");
    const now = this.clock.now();
    const session = this.sessionOps(user.id, now);
    await this.store.apply(session.ops);
    return { user: publicUser(user), ...session.grant };
  }

  private sessionOps(userId: string, now: number): { ops: StoreOp[]; grant: SessionGrant } {
    const token = newSessionToken();
    const ttlMs = this.config.sessionTtlSeconds * 1000;
    const session: Session = {
      id: prefixedId("ses", now),
      user_id: userId,
      csrf_token: secretToken(128),
      created_at: isoTime(now),
      expires_at: isoTime(now + ttlMs),
    };
    return {
      ops: [{ op: "put", key: keys.session(sha256(token)), value: session, ttlMs }],
      grant: { session_token: token, csrf_token: session.csrf_token, expires_at: session.expires_at },
    };
  }

  /** The session a token names, or undefined when unknown or expired. */
  async resolveSession(token: string): Promise<Session | undefined> {
    const session = await this.records.session(sha256(token));
    if (!session || Date.parse(session.expires_at) <= this.clock.now()) return undefined;
    return session;
  }

  async logout(tokenHash: string): Promise<void> {
    await this.store.apply([{ op: "delete", key: keys.session(tokenHash) }]);
  }

  async account(userId: string) {
    const user = await this.records.user(userId);
    if (!user) throw new TroupeError("unauthorized", "the session's user no longer exists");
    const orgIds = (await this.store.page(keys.userOrgs(userId), 1000)).members;
    const [orgs, memberships] = await Promise.all([this.records.orgs(orgIds), this.records.memberships(orgIds, userId)]);
    const roleOf = new Map(memberships.map((m) => [m.organization_id, m.role]));
    return {
      user: publicUser(user),
      memberships: orgs.map((organization) => ({ organization, role: roleOf.get(organization.id) ?? "member" })),
    };
  }

  private newOrg(name: string, now: number): Organization {
    return { id: prefixedId("org", now), name, created_at: isoTime(now) };
  }

  private orgOps(org: Organization, ownerId: string, now: number): StoreOp[] {
    const membership: Membership = { organization_id: org.id, user_id: ownerId, role: "owner", created_at: isoTime(now) };
    return [
      { op: "put", key: keys.org(org.id), value: org },
      { op: "put", key: keys.membership(org.id, ownerId), value: membership },
      { op: "index", key: keys.orgMembers(org.id), member: ownerId, score: now },
      { op: "index", key: keys.userOrgs(ownerId), member: org.id, score: now },
    ];
  }

  async createOrg(userId: string, name: string) {
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

  private newProject(orgId: string, name: string, now: number): Project {
    return { id: prefixedId("prj", now), organization_id: orgId, name, created_at: isoTime(now) };
  }

  /** A project and its two environments; development comes with its test key. */
  private projectOps(project: Project, now: number): { ops: StoreOp[]; environments: EnvironmentWithKey[] } {
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
    const now = this.clock.now();
    const setup = this.environmentOps(project, input.name, input.production ?? false, now);
    await this.store.apply(setup.ops);
    return setup.result;
  }

  async listEnvironments(userId: string, projectId: string, limit: number, cursor: string | null | undefined) {
    await this.projectFor(userId, projectId);
    const page = await this.store.page(keys.projectEnvironments(projectId), limit, cursor);
    return { data: await this.records.environments(page.members), next_cursor: page.nextCursor };
  }

  async createInvitation(userId: string, orgId: string, input: { email: string; role: Role }) {
    const membership = await requireMembership(this.records, userId, orgId);
    requireRole(membership, "admin", "inviting members");
    if (input.role === "owner" && !roleAtLeast(membership.role, "owner")) {
      throw new TroupeError("forbidden", "only owners can invite owners");
    }
    const now = this.clock.now();
    const token = newInvitationToken();
    const invitation: Invitation = {
      id: prefixedId("inv", now),
      organization_id: orgId,
      email: input.email.toLowerCase(),
      role: input.role,
      invited_by: userId,
      created_at: isoTime(now),
      expires_at: isoTime(now + invitationTtlMs),
      accepted_at: null,
    };
    await this.store.apply([
      { op: "put", key: keys.invitation(invitation.id), value: invitation },
      { op: "claim", key: keys.invitationToken(sha256(token)), value: invitation.id },
      { op: "index", key: keys.orgInvitations(orgId), member: invitation.id, score: now },
    ]);
    return { invitation, token };
  }

  async listInvitations(userId: string, orgId: string, limit: number, cursor: string | null | undefined) {
    const membership = await requireMembership(this.records, userId, orgId);
    requireRole(membership, "admin", "listing invitations");
    const page = await this.store.page(keys.orgInvitations(orgId), limit, cursor);
    return { data: await this.records.invitations(page.members), next_cursor: page.nextCursor };
  }

  async acceptInvitation(userId: string, token: string): Promise<Membership> {
    const invitationId = await this.store.lookup(keys.invitationToken(sha256(token)));
    const invitation = invitationId ? await this.records.invitation(invitationId) : undefined;
    if (!invitation) throw new TroupeError("not_found", "invitation not found");
    if (invitation.accepted_at) throw new TroupeError("conflict", "invitation was already accepted");
    if (Date.parse(invitation.expires_at) <= this.clock.now()) throw new TroupeError("conflict", "invitation has expired");
    const user = await this.records.user(userId);
    if (!user || user.email !== invitation.email) {
      throw new TroupeError("forbidden", "this invitation was sent to another email address");
    }
    if (await this.records.membership(invitation.organization_id, userId)) {
      throw new TroupeError("conflict", "you are already a member of this organization");
    }
    const now = this.clock.now();
    const membership: Membership = { organization_id: invitation.organization_id, user_id: userId, role: invitation.role, created_at: isoTime(now) };
    await this.store.apply([
      { op: "put", key: keys.invitation(invitation.id), value: { ...invitation, accepted_at: isoTime(now) } },
      { op: "put", key: keys.membership(invitation.organization_id, userId), value: membership },
      { op: "index", key: keys.orgMembers(invitation.organization_id), member: userId, score: now },
      { op: "index", key: keys.userOrgs(userId), member: invitation.organization_id, score: now },
    ]);
    return membership;
  }
}
