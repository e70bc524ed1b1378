// The configuration of this build: core/config.ts's settings with the
// providers' (providers/registry.ts) composed in. The two meet here, above
// every layer, so core/ never loads the adapters; start (main.ts), the
// scripts, the benchmarks and the tests load the configuration from here.
import { configLoader, type Config as ConfigWith } from "../core/config.ts";
import { providerConfig, type ProviderSettingsMap } from "../providers/registry.ts";

const loader = configLoader(providerConfig);

/** Parses an environment (default: the process's) into the frozen configuration; throws naming each invalid setting. */
export const loadConfig = loader.load;

/** Every environment variable Troupe reads (docs/configuration.md and the Helm chart's check are held to it). */
export const settingNames = loader.settingNames;

/** The whole configuration, the providers' settings included. */
export type Config = ConfigWith<ProviderSettingsMap>;
