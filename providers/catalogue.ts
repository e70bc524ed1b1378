// The model catalogue: catalogue.json (validated with zod at load), the
// models registered providers bring in their folders (providers/registry.ts),
// plus one entry per model of each configured openai-compatible endpoint. It answers
// "what is this model, what can it do, what does it cost"; the router adds
// availability (provider configured, breaker not open).
import { readFileSync } from "node:fs";
import { z } from "zod";
import type { FieldIssue } from "../core/errors.ts";
import { descriptors } from "./registry.ts";

export const categorySchema = z.enum(["text", "image", "audio", "video", "embedding", "vision", "translation"]);
export type Category = z.infer<typeof categorySchema>;
export const tierSchema = z.enum(["small", "medium", "large"]);

export const capabilitiesSchema = z
  .object({
    streaming: z.boolean().optional(),
    tools: z.boolean().optional(),
    max_input_tokens: z.number().int().positive().optional(),
    /** The most output tokens one call can produce: what a budgeted call without max_tokens reserves. */
    max_output_tokens: z.number().int().positive().optional(),
    dimensions: z.number().int().positive().optional(),
    custom_dimensions: z.boolean().optional(),
    sizes: z.array(z.string()).optional(),
    n_max: z.number().int().positive().optional(),
    voices: z.array(z.string()).optional(),
    /** Clip lengths in seconds a video model makes (a request gets the nearest). */
    durations: z.array(z.number().positive()).optional(),
    /** Video: whether a clip can start from an image (image_to_video), must, or cannot. */
    image_input: z.enum(["none", "optional", "required"]).optional(),
    /** An audio model that transcribes (speech models list voices instead). */
    transcription: z.boolean().optional(),
    /** A chat model that can be held to a JSON answer (OpenAI's response_format json_object / json_schema). */
    json_output: z.boolean().optional(),
    /** Images one upstream call makes; a request for more is split into parallel calls. */
    images_per_call: z.number().int().positive().optional(),
  })
  .strict();

export const pricingSchema = z
  .object({
    unit: z.string(),
    usd_per_unit: z.number().min(0).optional(),
    input_usd_per_unit: z.number().min(0).optional(),
    output_usd_per_unit: z.number().min(0).optional(),
    /** Input tokens read from the provider's prompt cache; absent: the input price (docs/api/usage-budgets-rate-limits.md, "Prices"). */
    cached_input_usd_per_unit: z.number().min(0).optional(),
    /** Input tokens written to the provider's prompt cache (Anthropic's 5-minute write); absent: the input price. */
    cache_write_input_usd_per_unit: z.number().min(0).optional(),
  })
  .strict();

export const modelEntrySchema = z
  .object({
    id: z.string().min(1),
    provider: z.string().min(1),
    /** The name the upstream knows it by, when it differs from id. */
    upstream_model: z.string().optional(),
    category: categorySchema,
    /** Further categories the model serves (a text model also does vision, translation). */
    also: z.array(categorySchema).default([]),
    tier: tierSchema,
    capabilities: capabilitiesSchema,
    pricing: pricingSchema,
  })
  .strict();
export type ModelEntry = z.infer<typeof modelEntrySchema>;
/** A catalogue entry as written (in catalogue.json or a provider folder's models.ts), before defaults. */
export type ModelEntryInput = z.input<typeof modelEntrySchema>;

const fileSchema = z.object({ $comment: z.string().optional(), models: z.array(modelEntrySchema) }).strict();

/** What GET /v1/models lists per model. */
export interface ModelListing {
  id: string;
  provider: string;
  category: Category;
  tier: z.infer<typeof tierSchema>;
  available: boolean;
  capabilities: z.infer<typeof capabilitiesSchema>;
  pricing: z.infer<typeof pricingSchema>;
}

export interface Usage {
  /** All input tokens, the cached and cache-written ones included (they are parts of it, not added to it). */
  input_tokens?: number;
  /** Of input_tokens, those read from the prompt cache: billed at the cached price. */
  cached_input_tokens?: number;
  /** Of input_tokens, those written to the prompt cache: billed at the cache-write price. */
  cache_write_input_tokens?: number;
  output_tokens?: number;
  /** For per-unit categories (images, seconds of audio/video). */
  units?: number;
}

export interface CompatibleModels {
  name: string;
  models: readonly string[];
}

export class Catalogue {
  readonly models: readonly ModelEntry[];
  private readonly byId: Map<string, ModelEntry>;

  constructor(models: ModelEntry[]) {
    this.models = models;
    this.byId = new Map();
    for (const m of models) {
      if (this.byId.has(m.id)) throw new Error(`catalogue: duplicate model id ${m.id}`);
      this.byId.set(m.id, m);
    }
  }

  /**
   * Loads catalogue.json (or `file`), adds the registered providers' own
   * models and the openai-compatible endpoints' models as `<name>/<model>`.
   * Every entry must name a registered provider; a folder's entries, its own.
   */
  static load(compatible: readonly CompatibleModels[] = [], file?: string): Catalogue {
    const raw: unknown = JSON.parse(readFileSync(file ?? new URL("./catalogue.json", import.meta.url), "utf8"));
    const parsed = fileSchema.safeParse(raw);
    if (!parsed.success) throw new Error(`catalogue: ${z.prettifyError(parsed.error)}`);
    const registered = new Set(descriptors.map((d) => d.name));
    for (const m of parsed.data.models) {
      if (!registered.has(m.provider)) throw new Error(`catalogue: model ${m.id} names provider ${m.provider}, which providers/registry.ts does not list`);
    }
    const models = [...parsed.data.models];
    const fromFolders = descriptors.flatMap((d) => folderModels(d.name, d.models ?? []));
    // Compatible endpoints go before the simulated models so auto prefers them.
    const firstSimulated = models.findIndex((m) => m.provider === "simulated");
    const extra: ModelEntry[] = compatible.flatMap((ep) =>
      ep.models.map(
        (model): ModelEntry => ({
          id: `${ep.name}/${model}`,
          provider: ep.name,
          upstream_model: model,
          category: "text",
          also: ["translation"],
          tier: "medium",
          capabilities: { streaming: true, tools: true },
          // Self-hosted or unknown price: listed as 0 rather than guessed.
          pricing: { unit: "1M tokens", input_usd_per_unit: 0, output_usd_per_unit: 0 },
        }),
      ),
    );
    models.splice(firstSimulated === -1 ? models.length : firstSimulated, 0, ...fromFolders, ...extra);
    return new Catalogue(models);
  }

  get(id: string): ModelEntry | undefined {
    return this.byId.get(id);
  }

  /** Models serving a category, in catalogue (preference) order. */
  ofCategory(category: Category): ModelEntry[] {
    return this.models.filter((m) => serves(m, category));
  }

  /** USD for a usage record of this model (0 for unknown models). */
  priceOf(modelId: string, usage: Usage): number {
    const m = this.byId.get(modelId);
    if (!m) return 0;
    return priceOf(m, usage);
  }
}

/** A provider folder's entries, validated like catalogue.json's; each must be that provider's. */
function folderModels(provider: string, entries: readonly ModelEntryInput[]): ModelEntry[] {
  const parsed = z.array(modelEntrySchema).safeParse(entries);
  if (!parsed.success) throw new Error(`catalogue: providers/${provider} models: ${z.prettifyError(parsed.error)}`);
  for (const m of parsed.data) {
    if (m.provider !== provider) throw new Error(`catalogue: model ${m.id} in providers/${provider} names provider ${m.provider}`);
  }
  return parsed.data;
}

export function serves(m: ModelEntry, category: Category): boolean {
  return m.category === category || m.also.includes(category);
}

/**
 * Output tokens assumed for a model whose catalogue entry has no
 * max_output_tokens (an openai-compatible endpoint's models): 32,768, the
 * most of the current OpenAI models, so a budget reservation errs high.
 */
export const DEFAULT_MAX_OUTPUT_TOKENS = 32_768;

/** The most output one call of `m` can produce (its catalogue entry, else the default above). */
export function maxOutputTokens(m: ModelEntry): number {
  return m.capabilities.max_output_tokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
}

export function priceOf(m: ModelEntry, usage: Usage): number {
  const p = m.pricing;
  const perToken = p.unit === "1M tokens" ? 1 / 1_000_000 : p.unit === "1K tokens" ? 1 / 1000 : 0;
  let usd = 0;
  if (perToken > 0) {
    const input = p.input_usd_per_unit ?? p.usd_per_unit ?? 0;
    const { plain, cached, written } = inputParts(usage);
    usd += plain * input * perToken;
    usd += cached * (p.cached_input_usd_per_unit ?? input) * perToken;
    usd += written * (p.cache_write_input_usd_per_unit ?? input) * perToken;
    usd += (usage.output_tokens ?? 0) * (p.output_usd_per_unit ?? 0) * perToken;
  } else {
    usd += (usage.units ?? 0) * (p.usd_per_unit ?? 0);
  }
  return Math.round(usd * 1e9) / 1e9;
}

/**
 * A call's input cut by price: read from cache, written to it, and the rest.
 * The counts are a provider's report: clamped so the parts never exceed the
 * whole (a report claiming more cached tokens than input bills no more than
 * the input), reads first.
 */
export function inputParts(usage: Usage): { plain: number; cached: number; written: number } {
  const total = Math.max(0, usage.input_tokens ?? 0);
  const cached = Math.min(total, Math.max(0, usage.cached_input_tokens ?? 0));
  const written = Math.min(total - cached, Math.max(0, usage.cache_write_input_tokens ?? 0));
  return { plain: total - cached - written, cached, written };
}

/** A rough per-token price for ordering by cost: input and output weighted 3:1, the usual chat mix. */
export function sortPrice(m: ModelEntry): number {
  const p = m.pricing;
  return 3 * (p.input_usd_per_unit ?? p.usd_per_unit ?? 0) + (p.output_usd_per_unit ?? 0);
}

/** What a request needs from a model; checked before any provider call. */
export interface Need {
  category: Category;
  tools?: boolean;
  streaming?: boolean;
  /** A JSON answer (response_format). */
  json?: boolean;
  /** Embeddings with an explicit `dimensions`. */
  dimensions?: number | null | undefined;
  /** Whether the model is of the kind the route needs (speaks, transcribes); a message when not. Blames `model`. */
  media?: (m: ModelEntry) => string | undefined;
  /** The request's fields a model of that kind may not take as given (voice, size, n). */
  fields?: readonly FieldNeed[];
}

/**
 * One field of a request a model may not take as given. The router names
 * it in the 400 when no configured model takes it, with the providers that
 * would and, through `offers`, the values the configured ones take.
 */
export interface FieldNeed {
  /** The field as error details name it: "body.voice". */
  path: string;
  /** What the request asks, for messages: `the voice "ash"`, `the size 10x10`. */
  asked: string;
  /** Why the model cannot take the field's value, or undefined when it can. */
  problem(m: ModelEntry): string | undefined;
  /** The values of the field a model takes ("voices": alto, bass…), listed when none of the configured models takes the one asked. */
  offers?: { noun: string; values(m: ModelEntry): readonly string[] };
}

/** The field checks of a need: the capabilities it asks for, then its own fields. */
export function fieldNeedsOf(need: Need): FieldNeed[] {
  const checks: FieldNeed[] = [];
  if (need.tools) {
    checks.push({ path: "body.tools", asked: "tools", problem: (m) => (m.capabilities.tools ? undefined : `model ${m.id} does not support tools`) });
  }
  if (need.streaming) {
    checks.push({ path: "body.stream", asked: "streaming", problem: (m) => (m.capabilities.streaming ? undefined : `model ${m.id} does not support streaming`) });
  }
  if (need.json) {
    checks.push({
      path: "body.response_format",
      asked: "a JSON answer (response_format)",
      problem: (m) => (m.capabilities.json_output ? undefined : `model ${m.id} cannot be held to a JSON answer (response_format)`),
    });
  }
  const dimensions = need.dimensions;
  if (dimensions != null) {
    checks.push({
      path: "body.dimensions",
      asked: `${dimensions} dimensions`,
      problem: (m) =>
        dimensions === m.capabilities.dimensions || m.capabilities.custom_dimensions ? undefined : `model ${m.id} only produces ${m.capabilities.dimensions} dimensions`,
      offers: { noun: "dimensions", values: (m) => (m.capabilities.dimensions === undefined ? [] : [String(m.capabilities.dimensions)]) },
    });
  }
  return [...checks, ...(need.fields ?? [])];
}

/**
 * `model` as a route accepts it: the ids of the models serving `need`, from
 * the catalogue loaded at start (so OpenAPI lists them as an `enum` and an
 * unknown or wrong-category id is refused by the same schema).
 */
export function modelIdSchema(catalogue: Catalogue, need: Need) {
  const ids = catalogue.models.filter((m) => capabilityProblem(m, need) === undefined).map((m) => m.id);
  return z.enum(ids as [string, ...string[]], {
    error: (issue) => {
      const entry = typeof issue.input === "string" ? catalogue.get(issue.input) : undefined;
      const why = (entry && capabilityProblem(entry, need)) ?? `unknown model ${JSON.stringify(issue.input)}`;
      return `${why} (GET /v1/models?category=${need.category} lists the models that can)`;
    },
  });
}

/**
 * A routed request's `model` as one rule for server and document: `model`
 * (an id from `modelIdSchema`, or null) is required when routing_strategy is
 * manual (OpenAPI: if/then), which the router would otherwise refuse.
 * `rules`: what a named model asks of the other fields, as if/then
 * (providers/model-rules.ts), stated in the document's `allOf`; the server
 * applies the same rules when it checks the request against the model.
 */
export function withModel<Shape extends z.core.$ZodShape, Config extends z.core.$ZodObjectConfig, M extends z.ZodType>(
  schema: z.ZodObject<Shape, Config>,
  model: M,
  rules: Record<string, unknown>[] = [],
) {
  return schema
    .extend({ model })
    .refine(
      (body) => {
        const b = body as { routing_strategy?: unknown; model?: unknown };
        return b.routing_strategy !== "manual" || b.model != null;
      },
      { path: ["model"], message: "routing_strategy manual needs a model" },
    )
    .meta({
      if: { properties: { routing_strategy: { const: "manual" } }, required: ["routing_strategy"] },
      then: { properties: { model: { type: "string" } }, required: ["model"] },
      ...(rules.length > 0 ? { allOf: rules } : {}),
    });
}

/** Why the model cannot serve the request, or undefined when it can. */
export function capabilityProblem(m: ModelEntry, need: Need): string | undefined {
  return capabilityIssue(m, need)?.message;
}

/**
 * Why the model cannot serve the request, naming the field at fault: `model`
 * for a model of the wrong kind, else the first field it cannot take.
 */
export function capabilityIssue(m: ModelEntry, need: Need): FieldIssue | undefined {
  if (!serves(m, need.category)) {
    return { path: "body.model", message: `model ${m.id} is a ${m.category} model and cannot serve ${need.category} requests` };
  }
  const kind = need.media?.(m);
  if (kind) return { path: "body.model", message: kind };
  for (const field of fieldNeedsOf(need)) {
    const message = field.problem(m);
    if (message) return { path: field.path, message };
  }
  return undefined;
}
