// Account, organizations, projects, environments and invitations: session
// only, role-checked, and scoped so another organization's resources are 404.
import { z } from "zod";
import type { AccountService } from "../../tenancy/accounts.ts";
import { formBodyMaxBytes } from "../body-limits.ts";
import { defineRoute, json, routeGroup } from "../route.ts";
import { usageToDateSchema, withUsageToDate, type ReadUsageToDate } from "../usage-to-date.ts";
import { text } from "../../core/text-schema.ts";
import {
  email,
  environmentSchema,
  environmentWithKeySchema,
  invitationSchema,
  membershipSchema,
  name,
  organizationSchema,
  pagedList,
  projectSchema,
  roleSchema,
  userSchema,
} from "../schemas.ts";

const named = z.object({ name }).strict();
/** null: back to the deployment's FILE_RETENTION_DAYS. */
const orgChange = z
  .object({ name: name.optional(), file_retention_days: z.number().int().min(1).max(36_500).nullable().optional() })
  .strict()
  .refine((v) => v.name !== undefined || v.file_retention_days !== undefined, { message: "name or file_retention_days is required" })
  // The same rule, stated in the OpenAPI document (the fuzzer generates bodies from it).
  .meta({ minProperties: 1 });

// Every route here is a dashboard session's, its body a form's few fields;
// each area is its own section of the document.
const accountRoute = routeGroup({ tag: "accounts", auth: "session", maxBodyBytes: formBodyMaxBytes });
const orgRoute = routeGroup({ tag: "organizations", auth: "session", maxBodyBytes: formBodyMaxBytes });
const projectRoute = routeGroup({ tag: "projects", auth: "session", maxBodyBytes: formBodyMaxBytes });
const environmentRoute = routeGroup({ tag: "environments", auth: "session", maxBodyBytes: formBodyMaxBytes });

/** `usageToDate` adds each environment's usage to date and last use to its list (absent: zeros). */
export function accountRoutes(accounts: AccountService, usageToDate?: ReadUsageToDate) {
  return [
    defineRoute({
      ...accountRoute("get", "/v1/account"),
      summary: "The signed-in user and their memberships",
      responses: { 200: z.object({ user: userSchema, memberships: z.array(z.object({ organization: organizationSchema, role: roleSchema })) }) },
      handler: async (ctx) => json(200, await accounts.account(ctx.auth.userId)),
    }),
    defineRoute({
      ...orgRoute("get", "/v1/orgs"),
      summary: "Organizations the user belongs to",
      ...pagedList(organizationSchema),
      handler: async (ctx) => json(200, await accounts.orgs.listOrgs(ctx.auth.userId, ctx.query.limit, ctx.query.cursor)),
    }),
    defineRoute({
      ...orgRoute("post", "/v1/orgs"),
      summary: "Create an organization (you become its owner)",
      body: named,
      responses: { 201: organizationSchema },
      // ORGANIZATIONS_PER_ACCOUNT reached.
      errors: ["quota_exceeded"],
      handler: async (ctx) => json(201, await accounts.orgs.createOrg(ctx.auth.userId, ctx.body.name)),
    }),
    defineRoute({
      ...orgRoute("get", "/v1/orgs/:org_id"),
      summary: "One organization",
      responses: { 200: organizationSchema },
      errors: ["not_found"],
      handler: async (ctx) => json(200, await accounts.orgs.getOrg(ctx.auth.userId, ctx.params.org_id)),
    }),
    defineRoute({
      ...orgRoute("patch", "/v1/orgs/:org_id"),
      summary: "Rename an organization or set how many days its stored files are kept (owners and admins)",
      body: orgChange,
      responses: { 200: organizationSchema },
      errors: ["not_found", "forbidden"],
      handler: async (ctx) => json(200, await accounts.orgs.updateOrg(ctx.auth.userId, ctx.params.org_id, ctx.body)),
    }),
    defineRoute({
      ...projectRoute("get", "/v1/orgs/:org_id/projects"),
      summary: "Projects of an organization",
      ...pagedList(projectSchema),
      errors: ["not_found"],
      handler: async (ctx) => json(200, await accounts.orgs.listProjects(ctx.auth.userId, ctx.params.org_id, ctx.query.limit, ctx.query.cursor)),
    }),
    defineRoute({
      ...projectRoute("post", "/v1/orgs/:org_id/projects"),
      summary: "Create a project with its production and development environments",
      body: named,
      responses: { 201: z.object({ project: projectSchema, environments: z.array(environmentWithKeySchema) }) },
      // quota_exceeded: PROJECTS_PER_ORGANIZATION reached.
      errors: ["not_found", "quota_exceeded"],
      handler: async (ctx) => json(201, await accounts.orgs.createProject(ctx.auth.userId, ctx.params.org_id, ctx.body.name)),
    }),
    defineRoute({
      ...environmentRoute("get", "/v1/projects/:project_id/environments"),
      summary: "Environments of a project",
      ...pagedList(environmentSchema.extend({ last_used_at: z.string().nullable(), usage: usageToDateSchema })),
      errors: ["not_found"],
      handler: async (ctx) =>
        json(200, await withUsageToDate(await accounts.orgs.listEnvironments(ctx.auth.userId, ctx.params.project_id, ctx.query.limit, ctx.query.cursor), usageToDate)),
    }),
    defineRoute({
      ...environmentRoute("post", "/v1/projects/:project_id/environments"),
      summary: "Create an environment; a non-production one comes with its test key, shown once",
      body: z.object({ name, production: z.boolean().optional() }).strict(),
      responses: { 201: environmentWithKeySchema },
      // quota_exceeded: ENVIRONMENTS_PER_PROJECT reached.
      errors: ["not_found", "quota_exceeded"],
      handler: async (ctx) => json(201, await accounts.orgs.createEnvironment(ctx.auth.userId, ctx.params.project_id, ctx.body)),
    }),
    defineRoute({
      ...orgRoute("get", "/v1/orgs/:org_id/invitations"),
      summary: "Invitations of an organization (owners and admins)",
      ...pagedList(invitationSchema),
      errors: ["not_found"],
      handler: async (ctx) => json(200, await accounts.invitations.list(ctx.auth.userId, ctx.params.org_id, ctx.query.limit, ctx.query.cursor)),
    }),
    defineRoute({
      ...orgRoute("post", "/v1/orgs/:org_id/invitations"),
      summary: "Invite someone by email with a role; the token is shown once",
      body: z.object({ email, role: roleSchema }).strict(),
      responses: { 201: z.object({ invitation: invitationSchema, token: z.string() }) },
      // quota_exceeded: PENDING_INVITATIONS_PER_ORGANIZATION reached.
      errors: ["not_found", "quota_exceeded"],
      handler: async (ctx) => json(201, await accounts.invitations.create(ctx.auth.userId, ctx.params.org_id, ctx.body)),
    }),
    defineRoute({
      ...orgRoute("post", "/v1/invitations/accept"),
      summary: "Accept an invitation sent to your email",
      body: z.object({ token: text({ min: 1, max: 200 }) }).strict(),
      responses: { 200: membershipSchema },
      errors: ["not_found", "conflict"],
      handler: async (ctx) => json(200, await accounts.invitations.accept(ctx.auth.userId, ctx.body.token)),
    }),
  ];
}
