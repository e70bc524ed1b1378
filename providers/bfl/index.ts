// The Black Forest Labs adapter: submit (POST /v1/<model> with width and
// height) → poll the answer's `polling_url` until `Ready` → `result.sample`,
// a signed URL valid about 10 minutes that re-hosting copies at once. The
// polling URL carries our key, so it must stay on the provider's domain.
import { isIP } from "node:net";
import { z } from "zod";
import { sleep } from "../deadline.ts";
import { ProviderCallError } from "../errors.ts";
import { createUpstreamClient, sendForJson, type UpstreamClient } from "../upstream-request.ts";
import type { ImageGenerationRequest, ProviderImage } from "../media-types.ts";
import { parseUpstream } from "../parse-upstream.ts";
import type { CallOptions, ProviderAdapter } from "../types.ts";
import { int, optionalString } from "../../core/env.ts";
import { defineProvider } from "../descriptor.ts";

interface BflConfig {
  provider: string;
  baseUrl: string;
  apiKey: string;
  pollIntervalMs: number;
}

const submitSchema = z.object({ id: z.string(), polling_url: z.string() }).passthrough();
const pollSchema = z
  .object({ status: z.string(), result: z.object({ sample: z.string() }).passthrough().nullable().optional() })
  .passthrough();

/** The polling URL's host is the base host or a sibling of it (api.bfl.ai → api.us1.bfl.ai). */
export function sameProviderDomain(baseUrl: string, pollingUrl: string): boolean {
  let base: URL;
  let poll: URL;
  try {
    base = new URL(baseUrl);
    poll = new URL(pollingUrl);
  } catch {
    return false;
  }
  if (poll.protocol !== base.protocol) return false;
  if (poll.host === base.host) return true;
  // An IP address has no parent domain: only the same host and port will do.
  if (isIP(base.hostname) !== 0 || base.hostname.startsWith("[")) return false;
  const parent = base.hostname.split(".").slice(1).join(".");
  return parent.includes(".") && poll.hostname.endsWith(`.${parent}`);
}

async function bflImage(cfg: BflConfig, client: UpstreamClient, req: ImageGenerationRequest, opts: CallOptions): Promise<ProviderImage> {
  const headers = { "x-key": cfg.apiKey, accept: "application/json" };
  const submitted = parseUpstream(
    cfg.provider,
    submitSchema,
    await sendForJson(cfg.provider, client, `${cfg.baseUrl.replace(/\/$/, "")}/v1/${req.model}`, {
      headers,
      body: { prompt: req.prompt, width: req.width, height: req.height, output_format: "png" },
      signal: opts.signal,
    }),
  );
  if (!sameProviderDomain(cfg.baseUrl, submitted.polling_url)) {
    throw new ProviderCallError(cfg.provider, "protocol", `${cfg.provider} sent a polling URL outside its domain`);
  }
  // Until the attempt's deadline aborts the signal.
  for (;;) {
    const polled = parseUpstream(
      cfg.provider,
      pollSchema,
      await sendForJson(cfg.provider, client, submitted.polling_url, { method: "GET", headers, signal: opts.signal }),
    );
    if (polled.status === "Ready") {
      if (!polled.result?.sample) throw new ProviderCallError(cfg.provider, "protocol", `${cfg.provider} is Ready without result.sample`);
      return { kind: "url", url: polled.result.sample };
    }
    if (polled.status !== "Pending" && polled.status !== "Queued" && polled.status !== "Processing") {
      // Error, Failed, Content/Request Moderated, Task not found: this request will not produce an image here.
      throw new ProviderCallError(cfg.provider, "http", `${cfg.provider} task ${submitted.id} ended with status ${polled.status}`, { status: 502 });
    }
    await sleep(cfg.pollIntervalMs, opts.signal);
  }
}

export function createBflAdapter(opts: { baseUrl: string; apiKey: string; pollIntervalMs: number; client?: UpstreamClient }): ProviderAdapter {
  const cfg: BflConfig = { provider: "bfl", baseUrl: opts.baseUrl, apiKey: opts.apiKey, pollIntervalMs: opts.pollIntervalMs };
  const owned = opts.client === undefined;
  const client = opts.client ?? createUpstreamClient();
  return {
    provider: cfg.provider,
    // One image per task: n images are n tasks (the images entry point splits them).
    generateImages: async (req, o) => Promise.all(Array.from({ length: req.n }, () => bflImage(cfg, client, req, o))),
    close: async () => {
      if (owned) await client.close();
    },
  };
}

export const descriptor = defineProvider({
  name: "bfl",
  title: "Black Forest Labs",
  key: "bfl",
  env: {
    BFL_API_KEY: optionalString,
    BFL_BASE_URL: z.url().default("https://api.bfl.ai"),
    /** Black Forest Labs is submit-then-poll: how often its result is asked for. */
    BFL_POLL_INTERVAL_MS: int(10, 60_000).default(500),
  },
  secretEnv: ["BFL_API_KEY"],
  settings: (e) => ({ apiKey: e.BFL_API_KEY, baseUrl: e.BFL_BASE_URL, pollIntervalMs: e.BFL_POLL_INTERVAL_MS }),
  create: (s, deps) =>
    s.apiKey ? [createBflAdapter({ baseUrl: s.baseUrl, apiKey: s.apiKey, pollIntervalMs: s.pollIntervalMs, ...(deps.client ? { client: deps.client } : {}) })] : [],
})
