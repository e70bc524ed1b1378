// Schemas shared by several routes: pagination, list envelopes, and the
// tenancy records as returned (for OpenAPI).
import { domainToUnicode } from "node:url";
import { z } from "zod";
import { text } from "../core/text-schema.ts";
import { cursorPattern } from "../core/data-store.ts";
import { json, scopeValues } from "./route.ts";
import {
  type ApiKeyRecord,
  apiKeyRecordSchema,
  environmentSchema,
  invitationSchema,
  membershipSchema,
  organizationSchema,
  projectSchema,
  roleSchema,
  userSchema,
} from "../tenancy/types.ts";

export const pageQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    cursor: z.string().regex(cursorPattern, "not a cursor this API returned (next_cursor)").optional(),
  })
  .strict();

export function listOf<S extends z.ZodType>(item: S) {
  return z.object({ data: z.array(item), next_cursor: z.string().nullable() });
}

/** What every list route declares: the page query in, one page of `item` out. */
export function pagedList<S extends z.ZodType>(item: S) {
  return { query: pageQuery, responses: { 200: listOf(item) } };
}

/**
 * A GET of what the calling key's environment owns (conversations, jobs):
 * the page query in, one page of `item` out, read for the key's environment
 * only, so another environment's entries are never listed. Spread into the
 * route's declaration; `read` is the directory's per-environment list.
 */
export function environmentList<S extends z.ZodType>(
  item: S,
  read: (environmentId: string, limit: number, cursor: string | undefined) => Promise<{ data: z.output<S>[]; next_cursor: string | null }>,
) {
  return {
    ...pagedList(item),
    handler: async (ctx: { auth: { key: ApiKeyRecord }; query: z.output<typeof pageQuery> }) => json(200, await read(ctx.auth.key.environment_id, ctx.query.limit, ctx.query.cursor)),
  };
}

/** Checked as sent (the limits the document states), then stored trimmed. */
export const name = text({ min: 1, max: 200, nonBlank: true }).trim();

// zod's own email pattern with DNS labels of 1-63 characters that neither
// start nor end with "-"; the local part's 64-character limit (RFC 5321, part
// of what `format: email` means) is checked separately, since a lookahead
// makes the pattern hard for generators.
const emailPattern =
  /^(?:[A-Za-z0-9_'+\-]+\.)*[A-Za-z0-9_'+\-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;
/** An email address as `format: email` defines it (RFC 5321 lengths) within the pattern the document states. */
export const email = z
  .email({ pattern: emailPattern })
  .max(254)
  .refine((e) => e.indexOf("@") <= 64, "the part before @ must be at most 64 characters")
  .refine((e) => e.slice(e.indexOf("@") + 1).split(".").every(validLabel), "not a valid domain name (IDNA)");

/** "--" in a label's 3rd-4th characters is reserved for punycode (xn--), which must then decode (IDNA 2008). */
function validLabel(label: string): boolean {
  if (label.slice(2, 4) !== "--") return true;
  return label.toLowerCase().startsWith("xn--") && domainToUnicode(label) !== "";
}

export const scopeList = z.array(z.enum(scopeValues, { error: `must be one of ${scopeValues.join(", ")}` })).max(scopeValues.length);

export const newApiKeySchema = apiKeyRecordSchema.extend({ key: z.string().describe("the full key, shown only now") });

export const environmentWithKeySchema = z.object({ environment: environmentSchema, test_key: newApiKeySchema.optional() });

export const sessionGrantSchema = z.object({ session_token: z.string(), csrf_token: z.string(), expires_at: z.string() });

export { apiKeyRecordSchema, environmentSchema, invitationSchema, membershipSchema, organizationSchema, projectSchema, roleSchema, userSchema };
