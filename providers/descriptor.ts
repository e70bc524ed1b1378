// What one provider folder exports: its settings (a zod shape of the
// environment variables it reads, parsed by core/config.ts with everything
// else), which of them are secrets (the Helm chart takes those from Secrets
// only), how its settings become adapters, and its catalogue entries.
// providers/registry.ts lists one descriptor per line; config, the router,
// the catalogue, the chart check and the docs test all read that list.
import type { z } from "zod";
import type { UpstreamClient } from "./upstream-request.ts";
import type { ModelEntryInput } from "./catalogue.ts";
import type { ProviderAdapter } from "./types.ts";

/** What `create` gets besides its settings. */
export interface ProviderDeps {
  /** Injected in tests; absent: each adapter owns a keep-alive HTTP/1.1 client. */
  client?: UpstreamClient | undefined;
}

export interface ProviderDescriptor<Key extends string, Shape extends z.ZodRawShape, Settings> {
  /** The provider name results and the catalogue use (the folder's name). */
  readonly name: string;
  /** Human name, the first cell of its row in docs/providers.md. */
  readonly title: string;
  /** Where its settings sit in config.providers (camelCase of the name). */
  readonly key: Key;
  /** Every environment variable it reads, with its validation and default. */
  readonly env: Shape;
  /** The variables among `env` that hold credentials (never plain chart values). */
  readonly secretEnv: readonly (keyof Shape & string)[];
  /** The parsed variables → the settings config.providers[key] holds. */
  settings(env: z.output<z.ZodObject<Shape>>): Settings;
  /** The adapters these settings turn on: none when the provider is not configured (no key). */
  create(settings: Settings, deps: ProviderDeps): ProviderAdapter[];
  /** Its catalogue entries (checked at load: provider must be `name`); placed before the simulated models. */
  readonly models?: readonly ModelEntryInput[];
}

/**
 * Any descriptor, for code that walks the registry without its settings'
 * types (settings and create take `never`: the walker casts, knowing config
 * parsed `env` for `settings` and `settings` made what `create` gets).
 */
export interface AnyProviderDescriptor {
  readonly name: string;
  readonly title: string;
  readonly key: string;
  readonly env: z.ZodRawShape;
  readonly secretEnv: readonly string[];
  settings(env: never): unknown;
  create(settings: never, deps: ProviderDeps): ProviderAdapter[];
  readonly models?: readonly ModelEntryInput[];
}

/** Identity with inference: each folder writes `export const provider = defineProvider({...})`. */
export function defineProvider<const Key extends string, Shape extends z.ZodRawShape, Settings>(
  d: ProviderDescriptor<Key, Shape, Settings>,
): ProviderDescriptor<Key, Shape, Settings> {
  return d;
}
