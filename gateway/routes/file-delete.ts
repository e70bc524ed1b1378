// DELETE /v1/files/{id} (docs/api/media.md, "Deleting a file"): the owning
// organization removes a stored file — an API key of that organization, or
// an owner or admin of it in a session. Anyone else gets 404, as for a file
// that does not exist: a file URL is a capability, and holding it must not
// tell a stranger whose it is, nor let them delete it. Afterwards the URL is
// 404 on every replica (the bytes and their record are gone from the data
// directory or the bucket every replica reads).
import { z } from "zod";
import { TroupeError } from "../../core/errors.ts";
import type { IndexedFileStore } from "../../media/indexed-file-store.ts";
import { roleAtLeast } from "../../tenancy/access.ts";
import type { Role } from "../../tenancy/types.ts";
import { defineRoute, json } from "../route.ts";

export interface FileDeleteDeps {
  files: IndexedFileStore;
  /** The user's role in the organization, undefined when not a member. */
  roleIn(userId: string, orgId: string): Promise<Role | undefined>;
}

const deletedSchema = z.object({ id: z.string(), deleted: z.literal(true) });

export function fileDeleteRoutes(deps: FileDeleteDeps) {
  return [
    defineRoute({
      method: "delete",
      path: "/v1/files/:id",
      summary: "Delete a stored file (its organization's API key, or an owner or admin session): its URL answers 404 afterwards",
      tag: "files",
      auth: "any",
      responses: { 200: deletedSchema },
      errors: ["not_found", "forbidden"],
      handler: async (ctx) => {
        const id = ctx.params.id;
        const file = await deps.files.head(id);
        const notFound = new TroupeError("not_found", `no file ${id}`);
        if (!file) throw notFound;
        if (ctx.auth.kind === "api_key") {
          if (ctx.auth.key.organization_id !== file.organization_id) throw notFound;
        } else {
          const role = await deps.roleIn(ctx.auth.userId, file.organization_id);
          if (role === undefined) throw notFound;
          if (!roleAtLeast(role, "admin")) throw new TroupeError("forbidden", `deleting a file requires the admin role or higher; you are ${role}`);
        }
        // Deleted by another request meanwhile: it is gone either way, but this call did not delete it.
        if (!(await deps.files.delete(id))) throw notFound;
        return json(200, { id, deleted: true as const });
      },
    }),
  ];
}
