// DELETE /v1/files/{id} (docs/api/media.md, "Deleting a file"): a file
// belongs to the environment whose key made it, as jobs and conversations
// do, so only an API key of that environment deletes it, and only one whose
// scopes could have made it (a chat-only key never deletes a video job's
// result). An owner or admin session of the organization deletes any of its
// files. Another organization's or another environment's file answers 404,
// as a file that does not exist: a file URL is a capability, and holding it
// must not tell a stranger whose it is, nor let them delete it. A file
// stored before files recorded their environment is deleted by an owner or
// admin session only: which environment made it is unknown, and letting
// every key of the organization delete it is how a development key removed
// a production job's result. Afterwards the URL is 404 on every replica (the
// bytes and their record are gone from the data directory or the bucket
// every replica reads).
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
      summary: "Delete a stored file (an API key of the environment that made it, with the scope that made it, or an owner or admin session): its URL answers 404 afterwards",
      tag: "files",
      auth: "any",
      responses: { 200: deletedSchema },
      errors: ["not_found", "forbidden", "insufficient_scope"],
      handler: async (ctx) => {
        const id = ctx.params.id;
        const file = await deps.files.head(id);
        const notFound = new TroupeError("not_found", `no file ${id}`);
        if (!file) throw notFound;
        if (ctx.auth.kind === "api_key") {
          const key = ctx.auth.key;
          if (key.organization_id !== file.organization_id) throw notFound;
          if (file.environment_id === null) {
            throw new TroupeError("forbidden", `file ${id} was stored before files recorded their environment; an owner or admin session deletes it`);
          }
          if (file.environment_id !== key.environment_id) throw notFound;
          // An unscoped key grants every category; a scoped one deletes only what its scopes could have made.
          if (file.scope !== null && key.scopes.length > 0 && !key.scopes.includes(file.scope)) {
            throw new TroupeError("insufficient_scope", `deleting this file needs the "${file.scope}" scope, which made it; this API key's scopes are ${key.scopes.join(", ")}`, {
              details: { required_scope: file.scope, key_scopes: key.scopes },
            });
          }
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
