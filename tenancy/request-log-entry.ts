// One compact request-log entry per API-key call (docs/operations/request-log.md):
// who called (organization, environment, key), what (route, model, provider,
// deployment), how it ended (status, error code, latency, time to first
// byte) and what it cost (tokens, nano-dollars, cache and BYOK flags when the
// usage record carries them). Never the prompt or the answer.
//
// Stored as a positional array (lmdb msgpack): the field names would double
// an entry's size, and a million entries is the size the log is sized for.
// The schema version comes first, so a later format can be told apart.
import { z } from "zod";

/** The entry as the gateway builds it and the API returns it (less `project_id`, which the store keys it by). */
export interface RequestLogEntry {
  request_id: string;
  /** When the request arrived (epoch ms). */
  created_ms: number;
  organization_id: string;
  project_id: string;
  environment_id: string;
  api_key_id: string;
  live: boolean;
  method: string;
  /** The route's template (`/v1/chat/completions`). */
  route: string;
  model: string | null;
  provider: string | null;
  /** The upstream deployment that answered, when the router names one. */
  deployment: string | null;
  status: number;
  error_code: string | null;
  /** Whole request, in 0.01 ms. */
  latency_ms: number;
  /** Until the first response byte (a stream's headers); null when nothing was written. */
  ttfb_ms: number | null;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  cost_nanos: number;
  /** The response cache's verdict (`hit`, `miss`, …) when the usage record carries one. */
  cache: string | null;
  /** True when the organization's own provider credential served the call; null: not recorded. */
  byok: boolean | null;
}

const entryVersion = 1;

type Stored = [
  number, // version
  number, // created_ms
  string, // organization_id
  string, // environment_id
  string, // api_key_id
  boolean, // live
  string, // method
  string, // route
  string | null, // model
  string | null, // provider
  string | null, // deployment
  number, // status
  string | null, // error_code
  number, // latency_ms
  number | null, // ttfb_ms
  number, // input_tokens
  number, // output_tokens
  number, // cached_input_tokens
  number, // cost_nanos
  string | null, // cache
  boolean | null, // byok
];

export function storedEntry(e: RequestLogEntry): Stored {
  return [
    entryVersion,
    e.created_ms,
    e.organization_id,
    e.environment_id,
    e.api_key_id,
    e.live,
    e.method,
    e.route,
    e.model,
    e.provider,
    e.deployment,
    e.status,
    e.error_code,
    e.latency_ms,
    e.ttfb_ms,
    e.input_tokens,
    e.output_tokens,
    e.cached_input_tokens,
    e.cost_nanos,
    e.cache,
    e.byok,
  ];
}

const str = z.string();
const optStr = z.string().nullable();
const num = z.number();
const storedSchema = z.tuple([
  z.literal(entryVersion),
  num,
  str,
  str,
  str,
  z.boolean(),
  str,
  str,
  optStr,
  optStr,
  optStr,
  num,
  optStr,
  num,
  num.nullable(),
  num,
  num,
  num,
  num,
  optStr,
  z.boolean().nullable(),
]);

/** The entry a stored array stands for; undefined for a value this release cannot read (never a throw). */
export function entryFromStored(projectId: string, requestId: string, value: unknown): RequestLogEntry | undefined {
  const parsed = storedSchema.safeParse(value);
  if (!parsed.success) return undefined;
  const [, created_ms, organization_id, environment_id, api_key_id, live, method, route, model, provider, deployment, status, error_code, latency_ms, ttfb_ms, input_tokens, output_tokens, cached_input_tokens, cost_nanos, cache, byok] =
    parsed.data;
  return {
    request_id: requestId,
    created_ms,
    organization_id,
    project_id: projectId,
    environment_id,
    api_key_id,
    live,
    method,
    route,
    model,
    provider,
    deployment,
    status,
    error_code,
    latency_ms,
    ttfb_ms,
    input_tokens,
    output_tokens,
    cached_input_tokens,
    cost_nanos,
    cache,
    byok,
  };
}

/** The entry as `GET /v1/projects/{id}/requests` returns it. */
export const requestLogEntrySchema = z.object({
  request_id: z.string(),
  created_at: z.string().describe("when the request arrived (ISO 8601)"),
  organization_id: z.string(),
  project_id: z.string(),
  environment_id: z.string(),
  api_key_id: z.string(),
  live: z.boolean(),
  method: z.string(),
  route: z.string().describe("the route's template, e.g. /v1/chat/completions"),
  model: z.string().nullable(),
  provider: z.string().nullable(),
  deployment: z.string().nullable(),
  status: z.number().int(),
  error_code: z.string().nullable(),
  latency_ms: z.number(),
  ttfb_ms: z.number().nullable(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  cached_input_tokens: z.number().int(),
  cost_usd: z.number(),
  cache: z.string().nullable(),
  byok: z.boolean().nullable(),
});
export type RequestLogEntryBody = z.infer<typeof requestLogEntrySchema>;

export function entryBody(e: RequestLogEntry): RequestLogEntryBody {
  const { created_ms, cost_nanos, ...rest } = e;
  return { ...rest, created_at: new Date(created_ms).toISOString(), cost_usd: cost_nanos / 1e9 };
}
