// Role checks shared by every account operation. A resource of an
// organization the user does not belong to is 404 (its existence is never
// revealed); a role too low inside the user's own organization is 403.
import { TroupeError } from "../core/errors.ts";
import type { Records } from "./records.ts";
import type { Membership, Role } from "./types.ts";

const rank: Record<Role, number> = { member: 1, admin: 2, owner: 3 };

export async function requireMembership(records: Records, userId: string, orgId: string, what = "organization"): Promise<Membership> {
  const membership = await records.membership(orgId, userId);
  if (!membership) throw new TroupeError("not_found", `${what} not found`);
  return membership;
}

export function requireRole(membership: Membership, minimum: Role, action: string): void {
  if (rank[membership.role] < rank[minimum]) {
    throw new TroupeError("forbidden", `${action} requires the ${minimum} role or higher; you are ${membership.role}`);
  }
}

export function roleAtLeast(role: Role, minimum: Role): boolean {
  return rank[role] >= rank[minimum];
}
