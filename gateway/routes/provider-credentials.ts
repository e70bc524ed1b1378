// An organization's own provider keys (bring your own key,
// docs/operations/byok.md): PUT, GET and DELETE under
// /v1/orgs/{org_id}/provider-credentials, with a session of an owner or an
// admin (a member is 403, a non-member 404). Write-only: answers show the
// key's last four characters, never the key. `environment_id` narrows a key
// to one environment of the organization (it then wins there).
import { z } from "zod";
import { TroupeError } from "../../core/errors.ts";
import type { AccountService } from "../../tenancy/accounts.ts";
import { roleAtLeast } from "../../tenancy/access.ts";
import { recordsOf } from "../../tenancy/records.ts";
import type { DataStore } from "../../core/data-store.ts";
import { providerCredentialViewSchema, type ProviderCredentialStore } from "../../tenancy/provider-credentials.ts";
import { ownCredentialProviders } from "../../providers/own-credentials.ts";
import { formBodyMaxBytes } from "../body-limits.ts";
import { defineRoute, json } from "../route.ts";

const environmentIdField = z.string().min(1).max(64).describe("An environment of this organization (env_…): only its keys use this credential, before the organization's");
const putBody = z
  .object({
    api_key: z.string().min(8, "at least 8 characters").max(4096).describe("The provider key; never shown again, only its last four characters"),
    environment_id: environmentIdField.nullable().optional(),
    allow_fallback: z.boolean().default(false).describe("When the provider refuses this key, serve the call with Troupe's own key instead of 403 provider_credential_rejected"),
  })
  .strict();
const deleteQuery = z.object({ environment_id: environmentIdField.optional() }).strict();
const listAnswer = z.object({ data: z.array(providerCredentialViewSchema) });

export interface ProviderCredentialRouteDeps {
  accounts: AccountService;
  store: DataStore;
  credentials: ProviderCredentialStore;
}

function providerOf(name: string): string {
  if (!(ownCredentialProviders as readonly string[]).includes(name)) {
    throw new TroupeError("not_found", `no provider ${name} takes a stored credential (one of ${ownCredentialProviders.join(", ")})`);
  }
  return name;
}

export function providerCredentialRoutes(deps: ProviderCredentialRouteDeps) {
  const records = recordsOf(deps.store);
  /** Owners and admins only; the environment, when named, must be the organization's (else 404, as another organization's is). */
  const authorize = async (userId: string, orgId: string, environmentId: string | null | undefined): Promise<void> => {
    const role = await deps.accounts.orgs.roleIn(userId, orgId);
    if (role === undefined) throw new TroupeError("not_found", "organization not found");
    if (!roleAtLeast(role, "admin")) throw new TroupeError("forbidden", `managing provider credentials requires the admin role or higher; you are ${role}`);
    if (environmentId) {
      const env = await records.environment(environmentId);
      if (!env || env.organization_id !== orgId) throw new TroupeError("not_found", `environment ${environmentId} not found in this organization`);
    }
  };
  return [
    defineRoute({
      method: "put",
      path: "/v1/orgs/:org_id/provider-credentials/:provider",
      summary: "Store the organization's own key for a provider (bring your own key; owners and admins); write-only, its last four characters are shown",
      tag: "organizations",
      auth: "session",
      maxBodyBytes: formBodyMaxBytes,
      body: putBody,
      responses: { 200: z.object({ credential: providerCredentialViewSchema }) },
      errors: ["not_found", "forbidden"],
      handler: async (ctx) => {
        const provider = providerOf(ctx.params.provider);
        await authorize(ctx.auth.userId, ctx.params.org_id, ctx.body.environment_id);
        const credential = await deps.credentials.put(ctx.params.org_id, provider, {
          apiKey: ctx.body.api_key,
          environmentId: ctx.body.environment_id ?? null,
          allowFallback: ctx.body.allow_fallback,
        });
        return json(200, { credential });
      },
    }),
    defineRoute({
      method: "get",
      path: "/v1/orgs/:org_id/provider-credentials",
      summary: "The organization's stored provider credentials (owners and admins): provider, scope and last four characters, never the key",
      tag: "organizations",
      auth: "session",
      responses: { 200: listAnswer },
      errors: ["not_found", "forbidden"],
      handler: async (ctx) => {
        await authorize(ctx.auth.userId, ctx.params.org_id, undefined);
        return json(200, { data: await deps.credentials.list(ctx.params.org_id) });
      },
    }),
    defineRoute({
      method: "delete",
      path: "/v1/orgs/:org_id/provider-credentials/:provider",
      summary: "Remove the organization's (or, with environment_id, an environment's) stored key for a provider (owners and admins)",
      tag: "organizations",
      auth: "session",
      query: deleteQuery,
      responses: { 204: null },
      errors: ["not_found", "forbidden"],
      handler: async (ctx) => {
        const provider = providerOf(ctx.params.provider);
        await authorize(ctx.auth.userId, ctx.params.org_id, ctx.query.environment_id);
        await deps.credentials.delete(ctx.params.org_id, provider, ctx.query.environment_id ?? null);
        return json(204);
      },
    }),
  ];
}
