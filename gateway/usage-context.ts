// How an HTTP call becomes a usage context (providers/usage.ts): the calling
// API key pays, and the request id identifies the record. Session calls
// (the dashboard) have no payer and are not metered. The AI routes share
// their dependencies here: the router, and the meter their calls go to.
import type { Router } from "../providers/router.ts";
import type { Payer, UsageContext, UsageMeter } from "../providers/usage.ts";
import type { ApiKeyRecord } from "../tenancy/types.ts";
import type { AuthContext } from "./auth-context.ts";
import type { CallBilling } from "./billed-call.ts";

export interface AiRouteDeps {
  router: Router;
  usage: UsageMeter;
  /** Budgets and reservations (absent: every call is only recorded). */
  billing?: CallBilling | undefined;
}

/** Who pays for a call: the calling key's organization, project and environment. */
export function payerOf(k: ApiKeyRecord): Payer {
  return { organization_id: k.organization_id, project_id: k.project_id, environment_id: k.environment_id, api_key_id: k.id, live: k.live };
}

export function usageContextOf(ctx: { auth: AuthContext; requestId: string }): UsageContext | undefined {
  if (ctx.auth.kind !== "api_key") return undefined;
  return { ...payerOf(ctx.auth.key), request_id: ctx.requestId };
}
