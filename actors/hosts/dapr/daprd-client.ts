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

const jsonHeaders = { "content-type": "application/json" };
/**
 * How long a state read or write keeps retrying while daprd answers 5xx (its
 * state store unreachable): a Redis outage of a few seconds delays a turn
 * instead of failing it. Safe to repeat: a write upserts the whole state.
 */
const stateRetryWindowMs = 10_000;
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
const undeliveredCallRetryWindowMs = 10_000;

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

  /** expectOk, retried with backoff (100 ms doubling to 1 s) on 5xx within stateRetryWindowMs. */
  private async expectOkRetrying(what: string, method: "GET" | "POST", path: string, body?: string, signal?: AbortSignal): Promise<Reply> {
    const deadline = Date.now() + stateRetryWindowMs;
    for (let delayMs = 100; ; delayMs = Math.min(delayMs * 2, 1_000)) {
      signal?.throwIfAborted();
      const reply = await this.send(method, path, body, signal);
      if (reply.status < 300) return reply;
      // 4xx: the request itself is wrong, retrying cannot help.
      if (reply.status < 500 || Date.now() + delayMs > deadline) throw errorFromResponse(reply.status, reply.text, what);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }

  /**
   * Invokes an actor method; the returned text is the method's JSON output
   * (empty for undefined). Sent again, with backoff (250 ms doubling to 1 s),
   * while daprd could not deliver it, within undeliveredCallRetryWindowMs.
   * `headers` carry the W3C trace context, which daprd forwards to the
   * replica hosting the actor.
   */
  async invoke(type: string, id: string, method: string, input: unknown, signal?: AbortSignal, headers?: Record<string, string>): Promise<string> {
    const body = input === undefined ? "" : JSON.stringify(input);
    const path = `${actorPath(type, id)}/method/${encodeURIComponent(method)}`;
    const deadline = Date.now() + undeliveredCallRetryWindowMs;
    for (let delayMs = 250; ; delayMs = Math.min(delayMs * 2, 1_000)) {
      signal?.throwIfAborted();
      const reply = await this.send("PUT", path, body, signal, headers);
      if (reply.status < 300) return reply.text;
      if (!isUndeliveredActorCall(reply.status, reply.text) || Date.now() + delayMs > deadline) throw errorFromResponse(reply.status, reply.text, `call ${type}.${method}`);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }

  /** The actor's stored state migrated to today's schema version, or undefined when it has none yet. */
  async readState(type: string, id: string): Promise<unknown> {
    const reply = await this.expectOkRetrying(`state read of ${type}/${id}`, "GET", `${actorPath(type, id)}/state/${stateKey}`);
    if (reply.status === 204 || reply.text === "") return undefined;
    return parseVersioned(`actor:${type}`, reply.text);
  }

  /** One transactional upsert of the whole state (already JSON), in its schema-version envelope; null deletes it. */
  async writeState(type: string, id: string, stateJson: string | null, signal?: AbortSignal): Promise<void> {
    const body =
      stateJson === null
        ? `[{"operation":"delete","request":{"key":"${stateKey}"}}]`
        : `[{"operation":"upsert","request":{"key":"${stateKey}","value":${versionedJson(stateJson)}}}]`;
    await this.expectOkRetrying(`state write of ${type}/${id}`, "POST", `${actorPath(type, id)}/state`, body, signal);
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
