// Tenancy records as stored and as returned (docs/api/auth-and-accounts.md,
// docs/api/keys.md). Every record read back from a store is parsed with these
// schemas, so a corrupt or foreign record never travels further.
import { z } from "zod";

export const roleValues = ["owner", "admin", "member"] as const;
export const roleSchema = z.enum(roleValues);
export type Role = z.infer<typeof roleSchema>;

export const userSchema = z.object({
  id: z.string(),
  email: z.string(),
  name: z.string().nullable(),
  created_at: z.string(),
});
export type User = z.infer<typeof userSchema>;

/** Stored user: the public fields plus the password hash, never returned. */
export const storedUserSchema = userSchema.extend({ password_hash: z.string() });
export type StoredUser = z.infer<typeof storedUserSchema>;

export const organizationSchema = z.object({
  id: z.string(),
  name: z.string(),
  created_at: z.string(),
  /** Days its stored files are kept (media/file-retention.ts); null: the deployment's FILE_RETENTION_DAYS. Older records have none. */
  file_retention_days: z.number().int().nullable().default(null),
});
export type Organization = z.infer<typeof organizationSchema>;

export const membershipSchema = z.object({
  organization_id: z.string(),
  user_id: z.string(),
  role: roleSchema,
  created_at: z.string(),
});
export type Membership = z.infer<typeof membershipSchema>;

export const projectSchema = z.object({
  id: z.string(),
  organization_id: z.string(),
  name: z.string(),
  created_at: z.string(),
});
export type Project = z.infer<typeof projectSchema>;

export const environmentSchema = z.object({
  id: z.string(),
  project_id: z.string(),
  organization_id: z.string(),
  name: z.string(),
  production: z.boolean(),
  created_at: z.string(),
});
export type Environment = z.infer<typeof environmentSchema>;

export const apiKeyRecordSchema = z.object({
  id: z.string(),
  name: z.string(),
  display_prefix: z.string(),
  scopes: z.array(z.string()),
  live: z.boolean(),
  environment_id: z.string(),
  project_id: z.string(),
  organization_id: z.string(),
  rate_limit_per_minute: z.number().int(),
  /** Input + output tokens per minute; null: no token limit. Keys stored before this field have none. */
  token_limit_per_minute: z.number().int().nullable().default(null),
  /** The models the key may use: ids, globs (`claude-*`) and tiers (`tier:small`); null: every model. Keys stored before this field have none. */
  models: z.array(z.string()).nullable().default(null),
  /** Calls in flight at once (per replica); null: no limit. */
  max_concurrent: z.number().int().nullable().default(null),
  /** The key's own monthly budget (live spend, USD), beside its project's; null: none. Keys stored before this field have none. */
  monthly_budget_usd: z.number().nullable().default(null),
  /** Whether a live call past the key's budget is refused (402) or only alerted on. */
  hard_limit: z.boolean().default(true),
  /** Fractions of the key's budget at which key.budget.alert is sent, once each per month. */
  alert_thresholds: z.array(z.number()).default([0.5, 0.8, 1.0]),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
});
export type ApiKeyRecord = z.infer<typeof apiKeyRecordSchema>;

/**
 * Stored key: the record plus the SHA-256 of the full key (never the key) and
 * the user who created it — the request log shows a member their own keys'
 * calls (request-log-access.ts). Neither is in the /v1 key record. null: an
 * environment's automatic test key and keys stored before this field.
 */
export const storedApiKeySchema = apiKeyRecordSchema.extend({ key_hash: z.string(), created_by: z.string().nullable().default(null) });
export type StoredApiKey = z.infer<typeof storedApiKeySchema>;

export const sessionSchema = z.object({
  id: z.string(),
  user_id: z.string(),
  created_at: z.string(),
  expires_at: z.string(),
});
export type Session = z.infer<typeof sessionSchema>;

export const invitationSchema = z.object({
  id: z.string(),
  organization_id: z.string(),
  email: z.string(),
  role: roleSchema,
  invited_by: z.string(),
  created_at: z.string(),
  expires_at: z.string(),
  accepted_at: z.string().nullable(),
});
export type Invitation = z.infer<typeof invitationSchema>;
