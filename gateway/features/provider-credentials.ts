// Bring your own key (docs/operations/byok.md): the organizations' stored
// provider credentials, their routes, and the router's resolver: a call
// made with an API key (its organization and environment come from the
// request's async context, set by the route runner for a billed call of an
// organization that stored a key — `storedBy` — or a project that caches)
// goes out with the organization's own key for that provider first.
// Sealed with the webhook secrets' key (WEBHOOK_SECRET_KEY, else the data
// directory's key file), so one key protects every secret Troupe stores.
// The store and the resolver are built with the shared services, before the
// router, which takes the resolver when it is constructed.
import type { Clock } from "../../core/clock.ts";
import type { DataStore } from "../../core/data-store.ts";
import { createSecretBox, webhookSecretKey } from "../../core/secret-box.ts";
import { OwnCredentialAdapters, ownCredentialProviders, type OwnCredentialProvider, type OwnCredentialResolver } from "../../providers/own-credentials.ts";
import { ProviderCredentialStore } from "../../tenancy/provider-credentials.ts";
import { currentCacheRequest } from "../cache/cache-request.ts";
import type { Config } from "../config.ts";
import { providerCredentialRoutes } from "../routes/provider-credentials.ts";
import type { Feature } from "./feature.ts";
import type { SharedServices } from "./shared-services.ts";

const ownProviders: ReadonlySet<string> = new Set(ownCredentialProviders);

/** The stored credentials, the router's resolver over them, and the close of the adapters it made. */
export interface OwnCredentials {
  store: ProviderCredentialStore;
  resolve: OwnCredentialResolver;
  /** Whether the organization stored any provider key (a read that fails says yes: the resolver looks, as before): when it did, its API-key calls carry their owner for the resolver (route-runner.ts). */
  storedBy(orgId: string): Promise<boolean>;
  close(): Promise<void>;
}

export function createOwnCredentials(config: Config, store: DataStore, clock: Clock): OwnCredentials {
  const credentials = new ProviderCredentialStore(store, createSecretBox(webhookSecretKey(config.webhooks.secretKey, config.dataDir)), clock);
  const settings: Readonly<Record<string, unknown>> = config.providers;
  const adapters = new OwnCredentialAdapters(settings);
  const resolve: OwnCredentialResolver = (provider) => {
    // The caller's organization: set for API-key calls of billed routes; none for sessions and background work.
    const owner = currentCacheRequest()?.owner;
    if (!owner || !ownProviders.has(provider)) return undefined;
    return credentials.resolve(owner.organization_id, owner.environment_id, provider).then((c) => {
      if (!c) return undefined;
      const adapter = adapters.adapterFor(provider as OwnCredentialProvider, c.apiKey, c.version);
      return adapter ? { adapter, label: c.label, allowFallback: c.allowFallback } : undefined;
    });
  };
  return { store: credentials, resolve, storedBy: (orgId) => credentials.storedAny(orgId).catch(() => true), close: () => adapters.close() };
}

export function providerCredentialsFeature(s: SharedServices): Feature {
  return { routes: providerCredentialRoutes({ accounts: s.accounts, store: s.store, credentials: s.ownCredentials.store }) };
}
