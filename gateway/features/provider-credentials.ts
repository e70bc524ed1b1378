// Bring your own key (docs/operations/byok.md): the organizations' stored
// provider credentials, their routes, and the router's resolver: a call
// made with an API key (its organization and environment come from the
// request's async context, set by the route runner for every billed call)
// goes out with the organization's own key for that provider first.
// Sealed with the webhook secrets' key (WEBHOOK_SECRET_KEY, else the data
// directory's key file), so one key protects every secret Troupe stores.
import { createSecretBox, webhookSecretKey } from "../../core/secret-box.ts";
import { OwnCredentialAdapters, ownCredentialProviders, type OwnCredentialProvider } from "../../providers/own-credentials.ts";
import { ProviderCredentialStore } from "../../tenancy/provider-credentials.ts";
import { currentCacheRequest } from "../cache/cache-request.ts";
import { providerCredentialRoutes } from "../routes/provider-credentials.ts";
import type { Feature } from "./feature.ts";
import type { SharedServices } from "./shared-services.ts";

const ownProviders: ReadonlySet<string> = new Set(ownCredentialProviders);

export function providerCredentialsFeature(s: SharedServices): Feature {
  const credentials = new ProviderCredentialStore(s.store, createSecretBox(webhookSecretKey(s.config.webhooks.secretKey, s.config.dataDir)), s.clock);
  const settings: Readonly<Record<string, unknown>> = s.config.providers;
  const adapters = new OwnCredentialAdapters(settings);
  s.router.useOwnCredentials((provider) => {
    // The caller's organization: set for API-key calls of billed routes; none for sessions and background work.
    const owner = currentCacheRequest()?.owner;
    if (!owner || !ownProviders.has(provider)) return undefined;
    return credentials.resolve(owner.organization_id, owner.environment_id, provider).then((c) => {
      if (!c) return undefined;
      const adapter = adapters.adapterFor(provider as OwnCredentialProvider, c.apiKey, c.version);
      return adapter ? { adapter, label: c.label, allowFallback: c.allowFallback } : undefined;
    });
  });
  return {
    routes: providerCredentialRoutes({ accounts: s.accounts, store: s.store, credentials }),
    stop: () => adapters.close(),
  };
}
