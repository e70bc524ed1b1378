// The deployments the file declares, installed in the router's adapter map
// (docs/operations/deployments.md): one DeploymentPool per provider the file
// names, in place of the adapter its own variables would make (those stay
// the one-deployment shorthand for providers the file does not name). Each
// deployment's adapter is the provider's own, made by its descriptor's
// `create` from the provider's settings with the deployment's key and base
// URL put in: no adapter knows about deployments.
//
// `reload` (SIGHUP) reads the file again: a valid one is installed (calls in
// flight finish on the old adapters), an invalid one leaves the installed set
// alone and is reported with the reason.
import type { Logger } from "../core/log.ts";
import type { UpstreamClient } from "./upstream-request.ts";
import type { ProviderAdapter } from "./types.ts";
import type { BreakerOptions } from "./router-health.ts";
import { descriptors } from "./registry.ts";
import type { ProviderDeps } from "./descriptor.ts";
import { DeploymentPool, isDeploymentPool, type BuiltDeployment } from "./deployment-pool.ts";
import { readDeploymentsFile, readDeploymentsFileSync, type DeploymentSpec, type DeploymentsFile } from "./deployments-file.ts";

export interface DeploymentsOptions {
  path: string;
  /** config.providers: each provider's settings under its key (the base every deployment overrides). */
  settings: Readonly<Record<string, unknown>>;
  /** The router's adapter map, changed in place. */
  adapters: Map<string, ProviderAdapter>;
  breaker: BreakerOptions;
  client?: UpstreamClient | undefined;
  now?: () => number;
}

export type ReloadOutcome = { ok: true; deployments: string[] } | { ok: false; error: string };

/**
 * A provider's settings with a deployment's credential and base URL in place
 * of its own (also an organization's own key: providers/own-credentials.ts).
 */
export function settingsFor(base: Readonly<Record<string, unknown>>, spec: Pick<DeploymentSpec, "provider" | "api_key" | "base_url" | "azure_deployments">): Record<string, unknown> {
  if (spec.provider === "azure") {
    const deployments = { ...((base.deployments as Record<string, string> | undefined) ?? {}), ...(spec.azure_deployments ?? {}) };
    return { ...base, apiKey: spec.api_key, endpoint: spec.base_url ?? base.endpoint, deployments };
  }
  return { ...base, apiKey: spec.api_key, ...(spec.base_url !== undefined ? { baseUrl: spec.base_url } : {}) };
}

export class Deployments {
  private readonly opts: DeploymentsOptions;
  /** The adapters the providers' own variables made, put back when the file stops naming their provider. */
  private readonly shorthand = new Map<string, ProviderAdapter>();
  private reloading: Promise<ReloadOutcome> = Promise.resolve({ ok: true, deployments: [] });

  constructor(opts: DeploymentsOptions) {
    this.opts = opts;
    for (const [provider, adapter] of opts.adapters) if (!isDeploymentPool(adapter)) this.shorthand.set(provider, adapter);
  }

  /** Reads and installs the file at start; an invalid file stops the start (thrown, naming the field). */
  loadAtStart(): string[] {
    const file = readDeploymentsFileSync(this.opts.path);
    this.install(this.build(file));
    return file.deployments.map((d) => d.name);
  }

  /** Reads the file again and installs it; when invalid, keeps the installed set and says why. Reloads run one at a time. */
  reload(log?: Logger): Promise<ReloadOutcome> {
    this.reloading = this.reloading.then(async () => {
      try {
        const file = await readDeploymentsFile(this.opts.path);
        this.install(this.build(file));
        const names = file.deployments.map((d) => d.name);
        log?.info("deployments reloaded", { path: this.opts.path, deployments: names });
        return { ok: true, deployments: names } as const;
      } catch (e) {
        const error = e instanceof Error ? e.message : String(e);
        log?.error("deployments file not reloaded: the installed deployments stay", { path: this.opts.path, reason: error });
        return { ok: false, error } as const;
      }
    });
    return this.reloading;
  }

  /** Closes the providers' own adapters that deployments replaced (the router closes those in its map). */
  async close(): Promise<void> {
    const { adapters } = this.opts;
    await Promise.all([...this.shorthand].filter(([provider, a]) => adapters.get(provider) !== a).map(([, a]) => a.close?.()));
  }

  /** Adapters per provider for the file's deployments; on a failure, those already made are closed. */
  private build(file: DeploymentsFile): Map<string, BuiltDeployment[]> {
    const byProvider = new Map<string, BuiltDeployment[]>();
    try {
      for (const spec of file.deployments) {
        const d = descriptors.find((x) => x.name === spec.provider);
        if (!d) throw new Error(`${this.opts.path}: provider ${spec.provider} is not registered`);
        const base = (this.opts.settings[d.key] ?? {}) as Readonly<Record<string, unknown>>;
        const made = (d.create as (s: unknown, deps: ProviderDeps) => ProviderAdapter[])(settingsFor(base, spec), { client: this.opts.client });
        const adapter = made[0];
        if (made.length !== 1 || !adapter) throw new Error(`${this.opts.path}: deployment ${spec.name} did not make one ${spec.provider} adapter`);
        byProvider.set(spec.provider, [...(byProvider.get(spec.provider) ?? []), { spec, adapter }]);
      }
    } catch (e) {
      for (const list of byProvider.values()) for (const b of list) void b.adapter.close?.().catch(() => undefined);
      throw e;
    }
    return byProvider;
  }

  private install(built: Map<string, BuiltDeployment[]>): void {
    const { adapters } = this.opts;
    for (const [provider, list] of built) {
      const current = adapters.get(provider);
      if (current && isDeploymentPool(current)) current.install(list);
      else adapters.set(provider, new DeploymentPool(provider, list, this.opts.breaker, this.opts.now));
    }
    // Providers the file no longer names: back to their own variables' adapter, or off.
    for (const [provider, adapter] of [...adapters]) {
      if (!isDeploymentPool(adapter) || built.has(provider)) continue;
      void adapter.close();
      const own = this.shorthand.get(provider);
      if (own) adapters.set(provider, own);
      else adapters.delete(provider);
    }
  }
}
