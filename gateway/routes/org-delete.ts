// DELETE /v1/orgs/{org_id} (docs/api/auth-and-accounts.md, "Deleting an
// organization"): owners only, with the organization's name or id repeated
// in `confirm` — deleting everything an organization has cannot be undone,
// so a stray or scripted call without that confirmation is refused (400
// naming the field). Non-members get 404, members below owner 403.
import { z } from "zod";
import { invalidRequest, TroupeError } from "../../core/errors.ts";
import type { AccountService } from "../../tenancy/accounts.ts";
import { eraseOrganization, erasureReportSchema, type ErasureDeps } from "../organization-erasure.ts";
import { formBodyMaxBytes } from "../body-limits.ts";
import { defineRoute, json } from "../route.ts";

const body = z.object({ confirm: z.string().max(200).describe("The organization's name or id, repeated to confirm the deletion") }).strict();
const answer = z.object({
  id: z.string(),
  deleted: z.literal(true),
  erased: erasureReportSchema,
});

export function orgDeleteRoutes(accounts: AccountService, deps: ErasureDeps) {
  return [
    defineRoute({
      method: "delete",
      path: "/v1/orgs/:org_id",
      summary: "Delete an organization and everything it has (owners only; `confirm` repeats its name or id); usage records are kept, anonymised",
      tag: "organizations",
      auth: "session",
      maxBodyBytes: formBodyMaxBytes,
      body,
      responses: { 200: answer },
      errors: ["not_found", "forbidden"],
      handler: async (ctx) => {
        const orgId = ctx.params.org_id;
        const role = await accounts.orgs.roleIn(ctx.auth.userId, orgId);
        if (role === undefined) throw new TroupeError("not_found", "organization not found");
        if (role !== "owner") throw new TroupeError("forbidden", `deleting an organization requires the owner role; you are ${role}`);
        const org = await accounts.orgs.getOrg(ctx.auth.userId, orgId);
        if (ctx.body.confirm !== org.name && ctx.body.confirm !== org.id) {
          throw invalidRequest([{ path: "body.confirm", message: "must repeat the organization's name or id exactly to confirm the deletion" }]);
        }
        const erased = await eraseOrganization(deps, orgId);
        return json(200, { id: orgId, deleted: true as const, erased });
      },
    }),
  ];
}
