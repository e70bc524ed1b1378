// The request log (docs/operations/request-log.md): every API-key call the
// route runner ends becomes one entry, joined with its usage record, written
// in batches to its own lmdb file; the project's log routes read it and the
// console draws its charts from the aggregates kept beside it.
import { z } from "zod";
import { isTroupeError } from "../../core/errors.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { RequestLogStore } from "../../tenancy/request-log-store.ts";
import { RequestLogWriter, type CallFacts } from "../../tenancy/request-log.ts";
import type { EndedCall } from "../route-runner.ts";
import { requestLogRoutes } from "../routes/requests.ts";
import type { Feature } from "./feature.ts";
import type { SharedServices } from "./shared-services.ts";

/**
 * Each replica keeps its own log file, so an organization's deletion is
 * broadcast: every replica erases the entries and aggregates it holds.
 */
const erasedChannel = "request-log:erased";
const erasedMessage = z.object({ organization_id: z.string(), project_ids: z.array(z.string()) });

export interface RequestLogFeature extends Feature {
  store: RequestLogStore;
  /** For organization deletion: erases here and tells every other replica to. */
  erasure: { eraseOrganization(orgId: string, projectIds: readonly string[]): Promise<number> };
  writer: RequestLogWriter;
  /** For the gateway (GatewayOptions.callEnded): never throws, never waits. */
  callEnded(call: EndedCall): void;
  /** For the usage sink: each record joins its request's entry. */
  noteUsage(usage: UsageRecord): void;
}

/** The facts an entry keeps of an ended call; undefined for calls without an API key (sessions, refused credentials). */
export function callFacts(call: EndedCall, nowMs: number, nowPerf: number): CallFacts | undefined {
  const auth = call.auth;
  if (auth?.kind !== "api_key") return undefined;
  const latency = nowPerf - call.startedMs;
  const status = call.state.status;
  const code = call.error === undefined ? null : isTroupeError(call.error) ? call.error.code : "internal_error";
  return {
    request_id: call.requestId,
    created_ms: Math.round(nowMs - latency),
    organization_id: auth.key.organization_id,
    project_id: auth.key.project_id,
    environment_id: auth.key.environment_id,
    api_key_id: auth.key.id,
    live: auth.key.live,
    method: call.method.toUpperCase(),
    route: call.route,
    status,
    // A stream cut by its provider after its 200 was written ends with the error it was cut by.
    error_code: code,
    // 0.01 ms resolution, as the request line's.
    latency_ms: Math.round(latency * 100) / 100,
    requested_model: call.model ?? null,
    ttfb_ms: call.state.firstByteMs > 0 ? Math.round((call.state.firstByteMs - call.startedMs) * 100) / 100 : null,
  };
}

export function requestLogFeature(s: SharedServices): RequestLogFeature {
  const { config, clock, log } = s;
  const settings = config.observability.requestLog;
  const store = new RequestLogStore(config.dataDir, clock, { retentionMs: settings.retentionSeconds * 1000, maxEntries: settings.maxEntries });
  const writer = new RequestLogWriter(store, clock, log);
  const erasing = new Set<Promise<unknown>>();
  /** Entries noted before the deletion are written first, so none is written after it. */
  const eraseHere = async (orgId: string, projectIds: readonly string[]) => {
    await writer.flush();
    return store.eraseOrganization(orgId, projectIds);
  };
  const onErased = (message: string) => {
    let body: unknown;
    try {
      body = JSON.parse(message);
    } catch {
      body = undefined;
    }
    const parsed = erasedMessage.safeParse(body);
    if (!parsed.success) return log.warn("request log: a malformed erasure message was ignored", { message });
    const done = eraseHere(parsed.data.organization_id, parsed.data.project_ids)
      .catch((error: unknown) => log.warn("request log: a broadcast erasure failed", { organization_id: parsed.data.organization_id, error: String(error) }))
      .finally(() => erasing.delete(done));
    erasing.add(done);
  };
  return {
    store,
    writer,
    erasure: {
      async eraseOrganization(orgId, projectIds) {
        const erased = await eraseHere(orgId, projectIds);
        const message = JSON.stringify({ organization_id: orgId, project_ids: projectIds });
        await s.store.publish(erasedChannel, message).catch((error: unknown) => log.warn("request log: the erasure broadcast failed", { error: String(error) }));
        return erased;
      },
    },
    start: () => s.store.subscribe(erasedChannel, onErased),
    callEnded(call) {
      try {
        const facts = callFacts(call, clock.now(), performance.now());
        if (facts) writer.noteCall(facts);
      } catch (error) {
        log.warn("request log: an entry was not noted", { request_id: call.requestId, error: String(error) });
      }
    },
    noteUsage: (u) => writer.noteUsage(u),
    routes: requestLogRoutes({ store: s.store, orgs: s.accounts.orgs, log: store }),
    async stop() {
      await s.store.unsubscribe(erasedChannel, onErased).catch(() => undefined);
      await Promise.all([...erasing]);
      await writer.close();
      await store.close();
    },
  };
}
