// How an HTTP call becomes a usage context (providers/usage.ts): the calling
// API key pays, and the request id identifies the record. Session calls
// (the dashboard) have no payer and are not metered. The AI routes share
// their dependencies here: the router, and the meter their calls go to.
import type { Router } from "../providers/router.ts";
import type { Payer, UsageContext, UsageMeter } from "../providers/usage.ts";
import type { AuthContext } from "./auth-context.ts";

export interface AiRouteDeps {
  router: Router;
  usage: UsageMeter;
}

export function payerOf(auth: AuthContext): Payer | undefined {
  if (auth.kind !== "api_key") return undefined;
  const k = auth.key;
  return { organization_id: k.organization_id, project_id: k.project_id, environment_id: k.environment_id, api_key_id: k.id, live: k.live };
}

export function usageContextOf(ctx: { auth: AuthContext; requestId: string }): UsageContext | undefined {
  const payer = payerOf(ctx.auth);
  return payer && { ...payer, request_id: ctx.requestId };
}
