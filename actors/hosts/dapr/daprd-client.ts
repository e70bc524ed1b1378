// Troupe's calls into its daprd sidecar's HTTP API over keep-alive
// connections (undici Pool): actor invocation, actor state (one key per
// actor, written transactionally), timers, reminders (daprd hands them to
// the scheduler service) and metadata. Every call is one round trip; the
// host keeps their number per turn at the minimum.
import { Pool } from "undici";
import { parseVersioned, versionedJson } from "../../../core/schema-version.ts";
import { daprMetadata, errorFromResponse, goDuration, isUndeliveredActorCall, type DaprMetadata, type ScheduledCall } from "./wire.ts";

/** The single state key an actor's whole state lives under. */
export const stateKey = "state";

export interface DaprdClientOptions {
  daprHost: string;
  daprHttpPort: number;
  /** Keep-alive connections to daprd. */
  connections?: number;
}

interface Reply {
  status: number;
  text: string;
}

interface RetriedRequest {
  method: "GET" | "POST" | "PUT";
  path: string;
  body?: string;
  headers?: Record<string, string>;
}

/** Which failed answers are worth sending again, and for how long. */
interface RetryRule {
  windowMs: number;
  firstDelayMs: number;
  retries(reply: Reply): boolean;
}

const jsonHeaders = { "content-type": "application/json" };
/**
 * How long a state read or write keeps retrying while daprd answers 5xx (its
 * state store unreachable): a Redis outage of a few seconds delays a turn
 * instead of failing it. Safe to repeat: a write upserts the whole state.
 */
const stateStoreRetry: RetryRule = {
  windowMs: 10_000,
  firstDelayMs: 100,
  // 4xx: the request itself is wrong, retrying cannot help.
  retries: (reply) => reply.status >= 500,
};
/**
 * How long an actor call is sent again while daprd answers that it could not
 * deliver it (isUndeliveredActorCall). daprd's own retries last ~5 s on one
 * cached gRPC connection per address; after a replica was down a while, that
 * connection sits in gRPC's growing reconnect backoff, so a replica restarted
 * at the same address (a container restarted in its pod) is ready before
 * daprd tries it again: found by `npm run rolling-restart` after a 13-second
 * stop. Repeating is what daprd itself does for these answers, and a turn
 * carries a request id the conversation recognises if it ran after all.
 */
const undeliveredCallRetry: RetryRule = {
  windowMs: 10_000,
  firstDelayMs: 250,
  retries: (reply) => isUndeliveredActorCall(reply.status, reply.text),
};

export class DaprdClient {
  private readonly pool: Pool;

  constructor(options: DaprdClientOptions) {
    this.pool = new Pool(`http://${options.daprHost}:${options.daprHttpPort}`, {
      connections: options.connections ?? 128,
      keepAliveTimeout: 60_000,
      // Actor turns can be long (model calls); the caller's signal bounds them.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  }

  private async send(method: "GET" | "POST" | "PUT" | "DELETE", path: string, body?: string, signal?: AbortSignal, headers?: Record<string, string>): Promise<Reply> {
    const response = await this.pool.request({
      method,
      path,
      ...(body === undefined ? {} : { body, headers: headers ? { ...jsonHeaders, ...headers } : jsonHeaders }),
      ...(signal ? { signal } : {}),
    });
    return { status: response.statusCode, text: await response.body.text() };
  }

  private async expectOk(what: string, method: "GET" | "POST" | "PUT" | "DELETE", path: string, body?: string): Promise<Reply> {
    const reply = await this.send(method, path, body);
    if (reply.status >= 300) throw errorFromResponse(reply.status, reply.text, what);
    return reply;
  }

  /**
   * Sends a request until it succeeds or `retry` refuses its answer, with
   * backoff from `firstDelayMs` doubling to 1 s, giving up once the next wait
   * would pass `windowMs`; the caller's signal stops it at any point.
   */
  private async sendRetrying(what: string, request: RetriedRequest, retry: RetryRule, signal?: AbortSignal): Promise<Reply> {
    const deadline = Date.now() + retry.windowMs;
    for (let delayMs = retry.firstDelayMs; ; delayMs = Math.min(delayMs * 2, 1_000)) {
      signal?.throwIfAborted();
      const reply = await this.send(request.method, request.path, request.body, signal, request.headers);
      if (reply.status < 300) return reply;
      if (!retry.retries(reply) || Date.now() + delayMs > deadline) throw errorFromResponse(reply.status, reply.text, what);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }

  /**
   * Invokes an actor method; the returned text is the method's JSON output
   * (empty for undefined). Sent again, with backoff (250 ms doubling to 1 s),
   * while daprd could not deliver it, for up to 10 s (undeliveredCallRetry).
   * `headers` carry the W3C trace context, which daprd forwards to the
   * replica hosting the actor.
   */
  async invoke(type: string, id: string, method: string, input: unknown, signal?: AbortSignal, headers?: Record<string, string>): Promise<string> {
    const body = input === undefined ? "" : JSON.stringify(input);
    const path = `${actorPath(type, id)}/method/${encodeURIComponent(method)}`;
    const reply = await this.sendRetrying(`call ${type}.${method}`, { method: "PUT", path, body, ...(headers ? { headers } : {}) }, undeliveredCallRetry, signal);
    return reply.text;
  }

  /** The actor's stored state migrated to today's schema version, or undefined when it has none yet. */
  async readState(type: string, id: string): Promise<unknown> {
    const reply = await this.sendRetrying(`state read of ${type}/${id}`, { method: "GET", path: `${actorPath(type, id)}/state/${stateKey}` }, stateStoreRetry);
    if (reply.status === 204 || reply.text === "") return undefined;
    return parseVersioned(`actor:${type}`, reply.text);
  }

  /** One transactional upsert of the whole state (already JSON), in its schema-version envelope; null deletes it. */
  async writeState(type: string, id: string, stateJson: string | null, signal?: AbortSignal): Promise<void> {
    const body =
      stateJson === null
        ? `[{"operation":"delete","request":{"key":"${stateKey}"}}]`
        : `[{"operation":"upsert","request":{"key":"${stateKey}","value":${versionedJson(stateJson)}}}]`;
    await this.sendRetrying(`state write of ${type}/${id}`, { method: "POST", path: `${actorPath(type, id)}/state`, body }, stateStoreRetry, signal);
  }

  async setTimer(type: string, id: string, name: string, dueMs: number, periodMs: number | undefined, call: ScheduledCall): Promise<void> {
    const body = { dueTime: goDuration(dueMs), ...(periodMs === undefined ? {} : { period: goDuration(periodMs) }), callback: call.method, data: call };
    await this.expectOk(`timer ${name} of ${type}/${id}`, "POST", `${actorPath(type, id)}/timers/${encodeURIComponent(name)}`, JSON.stringify(body));
  }

  async clearTimer(type: string, id: string, name: string): Promise<void> {
    await this.expectOk(`timer delete ${name} of ${type}/${id}`, "DELETE", `${actorPath(type, id)}/timers/${encodeURIComponent(name)}`);
  }

  async setReminder(type: string, id: string, name: string, dueMs: number, periodMs: number | undefined, call: ScheduledCall): Promise<void> {
    const body = { dueTime: goDuration(dueMs), ...(periodMs === undefined ? {} : { period: goDuration(periodMs) }), data: call };
    await this.expectOk(`reminder ${name} of ${type}/${id}`, "POST", `${actorPath(type, id)}/reminders/${encodeURIComponent(name)}`, JSON.stringify(body));
  }

  async clearReminder(type: string, id: string, name: string): Promise<void> {
    await this.expectOk(`reminder delete ${name} of ${type}/${id}`, "DELETE", `${actorPath(type, id)}/reminders/${encodeURIComponent(name)}`);
  }

  async metadata(): Promise<DaprMetadata> {
    const reply = await this.expectOk("metadata", "GET", "/v1.0/metadata");
    return daprMetadata.parse(JSON.parse(reply.text));
  }

  async healthy(): Promise<boolean> {
    const reply = await this.send("GET", "/v1.0/healthz");
    return reply.status >= 200 && reply.status < 300;
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}

function actorPath(type: string, id: string): string {
  return `/v1.0/actors/${encodeURIComponent(type)}/${encodeURIComponent(id)}`;
}
