// Who reads which entries of a project's request log: owners and admins every
// key's, a member only those of the keys they created (a key record's
// `created_by`; a key without one belongs to no member). A project of an
// organization the user is not in is 404, as everywhere (access.ts).
import { z } from "zod";
import { indexMembers, type DataStore } from "../core/data-store.ts";
import { roleAtLeast } from "./access.ts";
import type { OrganizationService } from "./organizations.ts";
import { keys } from "./records.ts";
import type { Project } from "./types.ts";

const keyCreator = z.object({ id: z.string(), created_by: z.string() });

export interface RequestLogReader {
  project: Project;
  /** undefined: every key's entries; otherwise only these keys'. */
  keyIds: ReadonlySet<string> | undefined;
}

export async function requestLogReader(store: DataStore, orgs: OrganizationService, userId: string, projectId: string): Promise<RequestLogReader> {
  const { project, membership } = await orgs.projectFor(userId, projectId);
  if (roleAtLeast(membership.role, "admin")) return { project, keyIds: undefined };
  const own = new Set<string>();
  for (const environmentId of await indexMembers(store, keys.projectEnvironments(projectId))) {
    const keyIds = await indexMembers(store, keys.environmentKeys(environmentId));
    for (const doc of await store.getMany(keyIds.map(keys.apiKey))) {
      const key = keyCreator.safeParse(doc);
      if (key.success && key.data.created_by === userId) own.add(key.data.id);
    }
  }
  return { project, keyIds: own };
}
