// Bring your own key (docs/operations/byok.md), as the router sees it: an
// organization's own credential for a provider, already opened, and the
// adapter that calls the provider with it. The router asks its resolver (set
// by the gateway, which knows the calling organization and its stored
// credentials) before each attempt; a call that has one goes out with it
// first. Adapters are the provider's own, made by its descriptor from the
// provider's settings with the organization's key in place of Troupe's, and
// kept per credential version in a bounded map (the least recently used is
// closed when it is full).
import type { UpstreamClient } from "./upstream-request.ts";
import type { ProviderAdapter } from "./types.ts";
import type { ProviderDeps } from "./descriptor.ts";
import { descriptors } from "./registry.ts";
import { settingsFor } from "./deployments.ts";
import { deployableProviders, type DeployableProvider } from "./deployments-file.ts";

/** The providers an organization may bring its own key for: those whose settings are a key and a base URL. */
export const ownCredentialProviders = deployableProviders;
export type OwnCredentialProvider = DeployableProvider;

export interface OwnCredential {
  adapter: ProviderAdapter;
  /** How the 4xx names it: which stored credential, by scope and last four characters (never the key). */
  label: string;
  /** The organization allowed Troupe's own key when the provider refuses this one. */
  allowFallback: boolean;
}

/** The calling organization's credential for `provider`, or undefined (none stored, or no organization calling). */
export type OwnCredentialResolver = (provider: string) => Promise<OwnCredential | undefined> | undefined;

export class OwnCredentialAdapters {
  private readonly settings: Readonly<Record<string, unknown>>;
  private readonly client: UpstreamClient | undefined;
  private readonly max: number;
  private readonly adapters = new Map<string, ProviderAdapter>();

  constructor(settings: Readonly<Record<string, unknown>>, opts: { client?: UpstreamClient | undefined; max?: number } = {}) {
    this.settings = settings;
    this.client = opts.client;
    this.max = opts.max ?? 256;
  }

  /** The adapter for this key of `provider`; `version` names the stored credential's revision (a replaced key gets a new adapter). */
  adapterFor(provider: OwnCredentialProvider, apiKey: string, version: string): ProviderAdapter | undefined {
    const cacheKey = `${provider}\u0000${version}`;
    const cached = this.adapters.get(cacheKey);
    if (cached) {
      this.adapters.delete(cacheKey);
      this.adapters.set(cacheKey, cached);
      return cached;
    }
    const d = descriptors.find((x) => x.name === provider);
    if (!d) return undefined;
    const base = (this.settings[d.key] ?? {}) as Readonly<Record<string, unknown>>;
    const made = (d.create as (s: unknown, deps: ProviderDeps) => ProviderAdapter[])(settingsFor(base, { provider, api_key: apiKey, base_url: undefined, azure_deployments: undefined }), { client: this.client });
    const adapter = made[0];
    if (!adapter) return undefined;
    this.adapters.set(cacheKey, adapter);
    if (this.adapters.size > this.max) {
      const [oldestKey, oldest] = this.adapters.entries().next().value!;
      this.adapters.delete(oldestKey);
      void oldest.close?.().catch(() => undefined);
    }
    return adapter;
  }

  async close(): Promise<void> {
    await Promise.all([...this.adapters.values()].map((a) => a.close?.().catch(() => undefined)));
    this.adapters.clear();
  }
}
