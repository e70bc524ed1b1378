// Invitations: an owner or admin invites an email address with a role; the
// token (shown once, only its SHA-256 stored as a claim) lets the user with
// that email join within a week. An organization has at most
// PENDING_INVITATIONS_PER_ORGANIZATION pending at once (neither accepted nor
// expired), exactly even under concurrent creates (core/quota-slots.ts).
import type { Clock } from "../core/clock.ts";
import { isoTime } from "../core/clock.ts";
import { TroupeError } from "../core/errors.ts";
import { prefixedId } from "../core/ids.ts";
import { applyWithinQuota, quotaExceeded, type QuotaScope } from "../core/quota-slots.ts";
import { requireMembership, requireRole, roleAtLeast } from "./access.ts";
import type { DataStore } from "../core/data-store.ts";
import { newInvitationToken, sha256 } from "./key-format.ts";
import { keys, quotaScopes } from "./records.ts";
import { TenancyService } from "./tenancy-service.ts";
import type { Invitation, Membership, Role } from "./types.ts";
import { requireWellFormed } from "./well-formed.ts";

const invitationTtlMs = 7 * 24 * 3600_000; // a week, like most dashboards

export class InvitationService extends TenancyService {
  /** PENDING_INVITATIONS_PER_ORGANIZATION. */
  private readonly pendingPerOrganization: number;

  constructor(store: DataStore, clock: Clock, pendingPerOrganization: number) {
    super(store, clock);
    this.pendingPerOrganization = pendingPerOrganization;
  }

  /** An invitation holds its slot until it is accepted or expires. */
  private pendingQuota(orgId: string): QuotaScope {
    const max = this.pendingPerOrganization;
    return {
      scope: quotaScopes.pendingInvitations(orgId),
      capacity: max,
      counting: async (ids) => {
        const now = this.clock.now();
        return new Set((await this.records.invitations(ids)).filter((i) => i.accepted_at === null && Date.parse(i.expires_at) > now).map((i) => i.id));
      },
      refusal: () => quotaExceeded("this organization has as many pending invitations as it may", max),
    };
  }

  async create(userId: string, orgId: string, input: { email: string; role: Role }) {
    requireWellFormed({ email: input.email });
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
    await applyWithinQuota(this.store, this.pendingQuota(orgId), invitation.id, [
      { op: "put", key: keys.invitation(invitation.id), value: invitation },
      { op: "claim", key: keys.invitationToken(sha256(token)), value: invitation.id },
      // So deleting the organization can release the claim (it is found by the token's hash only).
      { op: "put", key: keys.invitationTokenOf(invitation.id), value: sha256(token) },
      { op: "index", key: keys.orgInvitations(orgId), member: invitation.id, score: now },
    ]);
    return { invitation, token };
  }

  async list(userId: string, orgId: string, limit: number, cursor: string | null | undefined) {
    const membership = await requireMembership(this.records, userId, orgId);
    requireRole(membership, "admin", "listing invitations");
    const page = await this.store.page(keys.orgInvitations(orgId), limit, cursor);
    return { data: await this.records.invitations(page.members), next_cursor: page.nextCursor };
  }

  async accept(userId: string, token: string): Promise<Membership> {
    requireWellFormed({ token });
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
