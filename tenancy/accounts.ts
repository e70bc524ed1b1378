// Accounts (docs/api/auth-and-accounts.md): signup and the signed-in user's view,
// and the services behind the account routes — sessions (sessions.ts),
// organizations/projects/environments (organizations.ts) and invitations
// (invitations.ts). Signup writes the user, the organization, its default
// project and environments and the first session in one atomic batch.
import type { Clock } from "../core/clock.ts";
import { isoTime } from "../core/clock.ts";
import type { TenancyConfig } from "../core/config.ts";
import { TroupeError } from "../core/errors.ts";
import { prefixedId } from "../core/ids.ts";
import type { ApiKeyService } from "./api-keys.ts";
import { ClaimTakenError, type DataStore, type StoreOp } from "../core/data-store.ts";
import { InvitationService } from "./invitations.ts";
import { OrganizationService } from "./organizations.ts";
import { hashPassword } from "./passwords.ts";
import { keys } from "./records.ts";
import { TenancyService } from "./tenancy-service.ts";
import { publicUser, SessionService } from "./sessions.ts";
import { SignupThrottle } from "./signup-throttle.ts";
import type { StoredUser } from "./types.ts";
import { requireWellFormed } from "./well-formed.ts";

export type { EnvironmentWithKey } from "./organizations.ts";
export type { SessionGrant } from "./sessions.ts";

export class AccountService extends TenancyService {
  readonly sessions: SessionService;
  readonly orgs: OrganizationService;
  readonly invitations: InvitationService;
  private readonly config: TenancyConfig;
  private readonly signupThrottle: SignupThrottle;

  constructor(store: DataStore, config: TenancyConfig, clock: Clock, apiKeys: ApiKeyService) {
    super(store, clock);
    this.config = config;
    this.sessions = new SessionService(store, config, clock);
    this.orgs = new OrganizationService(store, clock, apiKeys, config.quotas);
    this.invitations = new InvitationService(store, clock, config.quotas.pendingInvitationsPerOrganization);
    this.signupThrottle = new SignupThrottle(store, config.signupThrottle);
  }

  /** Throttled per client address (signup-throttle.ts). */
  async signup(input: { email: string; password: string; name?: string | undefined; organization_name?: string | undefined }, clientAddress: string) {
    if (!this.config.signupEnabled) throw new TroupeError("forbidden", "signup is turned off on this server");
    requireWellFormed({ email: input.email, password: input.password });
    await this.signupThrottle.admit(clientAddress);
    const now = this.clock.now();
    const user: StoredUser = {
      id: prefixedId("usr", now),
      email: input.email.toLowerCase(),
      name: input.name ?? null,
      created_at: isoTime(now),
      password_hash: await hashPassword(input.password),
    };
    const orgName = input.organization_name ?? `${input.name ?? user.email}'s organization`;
    const org = this.orgs.newOrg(orgName, now);
    const project = this.orgs.newProject(org.id, "Default project", now);
    const projectSetup = this.orgs.projectOps(project, now);
    const session = this.sessions.issue(user.id, now);
    const ops: StoreOp[] = [
      { op: "claim", key: keys.email(user.email), value: user.id },
      { op: "put", key: keys.user(user.id), value: user },
      ...this.orgs.orgOps(org, user.id, now),
      ...projectSetup.ops,
      ...session.ops,
    ];
    try {
      await this.store.apply(ops);
    } catch (error) {
      if (error instanceof ClaimTakenError) throw new TroupeError("conflict", "an account with this email already exists");
      throw error;
    }
    return { user: publicUser(user), organization: org, project, environments: projectSetup.environments, ...session.grant };
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
}
