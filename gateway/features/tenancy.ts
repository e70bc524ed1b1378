// Accounts, organizations, projects, environments and API keys: sign-up and
// login, the account routes and the key routes; the files a model call
// produced (served straight from the file store, with ranges).
import { accountRoutes } from "../routes/account.ts";
import { apiKeyRoutes } from "../routes/api-keys.ts";
import { authRoutes } from "../routes/auth.ts";
import { attachFiles, filesRawPath } from "../routes/files.ts";
import type { KeyBudgets } from "../../tenancy/api-keys.ts";
import type { Feature } from "./feature.ts";
import type { SharedServices } from "./shared-services.ts";

/** `budgets`: where a key's own monthly budget is enforced (billing). */
export function tenancyFeature(s: SharedServices, budgets: KeyBudgets): Feature {
  const { accounts, ledger } = s;
  const usageToDate = (ids: string[]) => ledger.usageToDate(ids);
  return {
    routes: [...authRoutes(accounts, s.config.tenancy), ...accountRoutes(accounts, usageToDate), ...apiKeyRoutes(s.apiKeys, budgets, usageToDate)],
    rawPaths: [filesRawPath],
    attachRaw: (app) => attachFiles(app, s.files, s.log),
  };
}
