// Every provider Troupe knows, one line each. A provider is its folder
// (providers/<name>/, exporting `descriptor`) plus its line here: config
// parses the settings the descriptors declare, createAdapters builds their
// adapters, the catalogue adds their models, and the chart check and
// test/providers/registry.test.ts hold the chart and the docs to the list.
// Order is the order of the adapters and of the descriptors' own models.
import type { z } from "zod";
import type { ProviderConfigPart } from "../core/config.ts";
import type { AnyProviderDescriptor } from "./descriptor.ts";
import { descriptor as openai } from "./openai/index.ts";
import { descriptor as anthropic } from "./anthropic/index.ts";
import { descriptor as gemini } from "./gemini/index.ts";
import { descriptor as cohere } from "./cohere/index.ts";
import { descriptor as openaiCompatible } from "./openai-compatible/index.ts";
import { descriptor as elevenlabs } from "./elevenlabs/index.ts";
import { descriptor as stability } from "./stability/index.ts";
import { descriptor as bfl } from "./bfl/index.ts";
import { descriptor as runway } from "./runway/index.ts";
import { descriptor as luma } from "./luma/index.ts";
import { descriptor as simulated } from "./simulated/index.ts";
import { descriptor as azure } from "./azure/index.ts";
import { descriptor as mistral } from "./mistral/index.ts";

export const providerRegistry = [
  simulated,
  openai,
  anthropic,
  gemini,
  cohere,
  elevenlabs,
  stability,
  bfl,
  runway,
  luma,
  openaiCompatible,
  azure,
  mistral,
] as const;

type Registered = (typeof providerRegistry)[number];
/** config.providers' per-provider part: each descriptor's settings under its key. */
export type ProviderSettingsMap = { [D in Registered as D["key"]]: ReturnType<D["settings"]> };

/** The registry without its settings' types, for code that walks it. */
export const descriptors: readonly AnyProviderDescriptor[] = providerRegistry;

/**
 * The environment variables of all providers, merged into one zod shape. Two
 * descriptors may declare one variable only with the same schema object
 * (VIDEO_POLL_INTERVAL_MS); names and keys must be unique.
 */
export const providerEnvShape: z.ZodRawShape = buildEnvShape(descriptors);

export function buildEnvShape(list: readonly AnyProviderDescriptor[]): z.ZodRawShape {
  const shape: Record<string, z.ZodRawShape[string]> = {};
  const names = new Set<string>();
  const keys = new Set<string>();
  for (const d of list) {
    if (names.has(d.name)) throw new Error(`provider registry: ${d.name} is registered twice`);
    if (keys.has(d.key)) throw new Error(`provider registry: config key ${d.key} is used twice`);
    names.add(d.name);
    keys.add(d.key);
    for (const [variable, schema] of Object.entries(d.env)) {
      const seen = shape[variable];
      if (seen !== undefined && seen !== schema) throw new Error(`provider registry: ${variable} is declared by two providers differently`);
      shape[variable] = schema;
    }
    for (const secret of d.secretEnv) {
      if (!(secret in d.env)) throw new Error(`provider registry: ${d.name} lists secret ${secret} that is not among its settings`);
    }
  }
  return shape;
}

/** Each descriptor's settings from the parsed environment (core/config.ts parsed it with `providerEnvShape`). */
export function providerSettings(parsed: Readonly<Record<string, unknown>>): ProviderSettingsMap {
  const out: Record<string, unknown> = {};
  for (const d of descriptors) {
    // The parse above gave every variable of d.env its validated value: exactly what d.settings takes.
    out[d.key] = (d.settings as (e: Readonly<Record<string, unknown>>) => unknown)(parsed);
  }
  return out as ProviderSettingsMap;
}

/**
 * The providers' part of the configuration: core/config.ts parses these
 * variables with its own settings and puts each descriptor's settings under
 * its key of `config.providers`. gateway/config.ts composes the two, so the
 * layer below never loads the adapters.
 */
export const providerConfig: ProviderConfigPart<ProviderSettingsMap> = { envShape: providerEnvShape, settings: providerSettings };

/** The variables the chart may take from Secrets only (scripts/chart-check.sh reads this). */
export const providerSecretEnv: readonly string[] = descriptors.flatMap((d) => d.secretEnv);
