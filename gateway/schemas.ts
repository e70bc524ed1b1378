// Schemas shared by several routes: pagination, list envelopes, and the
// tenancy records as returned (for OpenAPI).
import { z } from "zod";
import { scopeValues } from "./route.ts";
import {
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
    cursor: z.string().max(512).optional(),
  })
  .strict();

export function listOf<S extends z.ZodType>(item: S) {
  return z.object({ data: z.array(item), next_cursor: z.string().nullable() });
}

export const name = z.string().trim().min(1, "must not be empty").max(200);

export const scopeList = z.array(z.enum(scopeValues, { error: `must be one of ${scopeValues.join(", ")}` })).max(scopeValues.length);

export const newApiKeySchema = apiKeyRecordSchema.extend({ key: z.string().describe("the full key, shown only now") });

export const environmentWithKeySchema = z.object({ environment: environmentSchema, test_key: newApiKeySchema.optional() });

export const sessionGrantSchema = z.object({ session_token: z.string(), csrf_token: z.string(), expires_at: z.string() });

export { apiKeyRecordSchema, environmentSchema, invitationSchema, membershipSchema, organizationSchema, projectSchema, roleSchema, userSchema };
