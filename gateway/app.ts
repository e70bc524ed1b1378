// Composition root: builds the stores and services from the config, the
// route list, and the gateway. `startTroupe` is what `npm start`, the
// cluster replicas and the end-to-end tests all run.
import { mkdirSync } from "node:fs";
import { systemClock, type Clock } from "../core/clock.ts";
import type { Config } from "../core/config.ts";
import type { Logger } from "../core/log.ts";
import { AccountService } from "../tenancy/accounts.ts";
import { ApiKeyService } from "../tenancy/api-keys.ts";
import { EmbeddedTenancyStore } from "../tenancy/embedded-store.ts";
import { RedisTenancyStore } from "../tenancy/redis-store.ts";
import type { TenancyStore } from "../tenancy/store.ts";
import { createAuthenticator } from "./authenticate.ts";
import type { RouteDefinition } from "./route.ts";
import { accountRoutes } from "./routes/account.ts";
import { apiKeyRoutes } from "./routes/api-keys.ts";
import { authRoutes } from "./routes/auth.ts";
import { createGateway, type Gateway } from "./server.ts";

export interface TroupeServices {
  config: Config;
  log: Logger;
  clock: Clock;
  store: TenancyStore;
  accounts: AccountService;
  apiKeys: ApiKeyService;
}

export interface StartOptions {
  clock?: Clock;
  /** Extra routes (tests register probes for the auth pipeline this way). */
  extraRoutes?: (services: TroupeServices) => RouteDefinition[];
}

export interface RunningTroupe {
  services: TroupeServices;
  gateway: Gateway;
  port: number;
  url: string;
  stop(): Promise<void>;
}

export function createTenancyStore(config: Config, clock: Clock): TenancyStore {
  if (config.redisUrl) return new RedisTenancyStore(config.redisUrl);
  mkdirSync(config.dataDir, { recursive: true });
  return new EmbeddedTenancyStore(config.dataDir, clock);
}

export async function startTroupe(config: Config, log: Logger, options: StartOptions = {}): Promise<RunningTroupe> {
  const clock = options.clock ?? systemClock;
  const store = createTenancyStore(config, clock);
  const apiKeys = new ApiKeyService(store, config.tenancy, clock, log);
  await apiKeys.start();
  const accounts = new AccountService(store, config.tenancy, clock, apiKeys);
  const services: TroupeServices = { config, log, clock, store, accounts, apiKeys };

  const routes: RouteDefinition[] = [
    ...authRoutes(accounts, config.tenancy),
    ...accountRoutes(accounts),
    ...apiKeyRoutes(apiKeys),
    ...(options.extraRoutes?.(services) ?? []),
  ];

  const gateway = createGateway({
    routes,
    authenticator: createAuthenticator(accounts, apiKeys, config.tenancy.apiKeyPrefix),
    apiKeys,
    log,
    maxBodyBytes: config.maxBodyBytes,
    secureCookies: config.publicUrl?.startsWith("https://") ?? false,
    ready: async () => {
      await store.lookup("readiness-probe");
      return true;
    },
    openApiInfo: { title: "Troupe", version: "1.0.0" },
  });
  const port = await gateway.listen(config.host, config.port);
  const shownHost = config.host === "0.0.0.0" || config.host === "::" ? "localhost" : config.host;
  const url = config.publicUrl ?? `http://${shownHost}:${port}`;

  let stopped: Promise<void> | undefined;
  return {
    services,
    gateway,
    port,
    url,
    stop: () =>
      (stopped ??= (async () => {
        await gateway.shutdown(config.shutdownGraceMs);
        await store.close();
      })()),
  };
}
