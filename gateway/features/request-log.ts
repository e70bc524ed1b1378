// The request log (docs/operations/request-log.md): every API-key call the
// route runner ends becomes one entry, joined with its usage record, written
// in batches to its own lmdb file; the project's log routes read it and the
// console draws its charts from the aggregates kept beside it. A project
// that turned content logging on (its request-log settings) has each entry
// keep the prompt and the answer too, until its content retention ends.
import { z } from "zod";
import { isTroupeError } from "../../core/errors.ts";
import type { UsageRecord } from "../../providers/usage.ts";
import { entryContentOf, type EntryContent } from "../../tenancy/request-log-content.ts";
import { RequestLogSettingsStore, type RequestLogSettings } from "../../tenancy/request-log-settings.ts";
import { RequestLogStore } from "../../tenancy/request-log-store.ts";
import { RequestLogWriter, type CallFacts } from "../../tenancy/request-log.ts";
import { RequestLogReplicas } from "../../tenancy/request-log-replicas.ts";
import { localSeries, type RequestLogSeriesReads } from "../../tenancy/request-log-series.ts";
import type { CallEndedHook, EndedCall } from "../route-runner.ts";
import { requestLogRoutes } from "../routes/requests.ts";
import type { Feature } from "./feature.ts";
import type { SharedServices } from "./shared-services.ts";

/**
 * Each replica keeps its own log file, so an organization's deletion is
 * broadcast: every replica erases the entries and aggregates it holds.
 */
const erasedChannel = "request-log:erased";
const erasedMessage = z.object({ organization_id: z.string(), project_ids: z.array(z.string()) });
/**
 * Each replica reads a project's settings from a copy trusted for 5 s; a
 * change is broadcast so every replica drops its copy at once (content
 * logging turned off is off on every replica when the PATCH answers; a lost
 * message is bounded by the copy's 5 s).
 */
const settingsChangedChannel = "request-log:settings-changed";
const settingsChangedMessage = z.object({ project_ids: z.array(z.string()) });

export interface RequestLogFeature extends Feature {
  store: RequestLogStore;
  /** The console's charts and key use: this replica's aggregates, or every replica's added when several share Redis. */
  series: RequestLogSeriesReads;
  /** For organization deletion: erases here and tells every other replica to. */
  erasure: { eraseOrganization(orgId: string, projectIds: readonly string[]): Promise<number> };
  writer: RequestLogWriter;
  /** For the gateway (GatewayOptions.callEnded): never throws, never waits; asked first whether a stream's text is wanted. */
  callEnded: CallEndedHook;
  /** For the usage sink: each record joins its request's entry. */
  noteUsage(usage: UsageRecord): void;
}

/** The facts an entry keeps of an ended call or closed WebSocket; undefined for calls without an API key (sessions, refused credentials). */
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
    // A socket's entry: its latency is how long it was open, its first byte the upgrade.
    websocket: call.socket ? { close_code: call.socket.closeCode, bytes_in: call.socket.bytesIn, bytes_out: call.socket.bytesOut } : undefined,
  };
}

export function requestLogFeature(s: SharedServices): RequestLogFeature {
  const { config, clock, log } = s;
  const settings = config.observability.requestLog;
  const store = new RequestLogStore(config.dataDir, clock, { retentionMs: settings.retentionSeconds * 1000, maxEntries: settings.maxEntries });
  const writer = new RequestLogWriter(store, clock, log);
  // Several replicas share a Redis data store: a read asks each for the entries it holds.
  const replicas = s.store.kind === "redis" ? new RequestLogReplicas({ store: s.store, local: store, clock, log }) : undefined;
  const settingsStore = new RequestLogSettingsStore(s.store, clock);
  const retentionMs = settings.retentionSeconds * 1000;
  /** The content an entry keeps, when its project logs content: until the shorter of the two retentions. */
  const contentOf = (call: EndedCall, facts: CallFacts, project: RequestLogSettings): EntryContent | undefined => {
    if (!project.content_logging) return undefined;
    const keptMs = Math.min(project.content_retention_days * 86_400_000, retentionMs);
    return entryContentOf(call.body, call.answer, facts.created_ms + keptMs, call.streamedAnswer);
  };
  /** A stream's text is gathered as it is sent only for a project that logs content (a settings read that fails: not gathered). */
  const keepsStreamText: CallEndedHook["keepsStreamText"] = (auth) => {
    const project = settingsStore.settingsOf(auth.key.project_id);
    return project instanceof Promise ? project.then((p) => p.content_logging, () => false) : project.content_logging;
  };
  const contentFor = (call: EndedCall, facts: CallFacts): CallFacts["content"] => {
    if (call.body === undefined && call.answer === undefined) return undefined;
    const project = settingsStore.settingsOf(facts.project_id);
    if (!(project instanceof Promise)) return contentOf(call, facts, project);
    return project.then(
      (p) => contentOf(call, facts, p),
      (error: unknown) => {
        log.warn("request log: the project's settings were not read; the entry keeps no content", { request_id: facts.request_id, error: String(error) });
        return undefined;
      },
    );
  };
  const erasing = new Set<Promise<unknown>>();
  /** Entries noted before the deletion are written first, so none is written after it. */
  const eraseHere = async (orgId: string, projectIds: readonly string[]) => {
    await writer.flush();
    await settingsStore.remove(projectIds);
    return store.eraseOrganization(orgId, projectIds);
  };
  const onErased = (message: string) => {
    const parsed = erasedMessage.safeParse(jsonOrUndefined(message));
    if (!parsed.success) return log.warn("request log: a malformed erasure message was ignored", { message });
    const done = eraseHere(parsed.data.organization_id, parsed.data.project_ids)
      .catch((error: unknown) => log.warn("request log: a broadcast erasure failed", { organization_id: parsed.data.organization_id, error: String(error) }))
      .finally(() => erasing.delete(done));
    erasing.add(done);
  };
  const onSettingsChanged = (message: string) => {
    const parsed = settingsChangedMessage.safeParse(jsonOrUndefined(message));
    if (!parsed.success) return log.warn("request log: a malformed settings message was ignored", { message });
    settingsStore.forget(parsed.data.project_ids);
  };
  const broadcastSettings = {
    settingsOf: (projectId: string) => settingsStore.settingsOf(projectId),
    async update(projectId: string, patch: Partial<RequestLogSettings>): Promise<RequestLogSettings> {
      const next = await settingsStore.update(projectId, patch);
      const message = JSON.stringify({ project_ids: [projectId] });
      await s.store.publish(settingsChangedChannel, message).catch((error: unknown) => log.warn("request log: the settings broadcast failed; other replicas see the change within 5 s", { error: String(error) }));
      return next;
    },
  };
  return {
    store,
    series: replicas ?? localSeries(store),
    writer,
    erasure: {
      async eraseOrganization(orgId, projectIds) {
        const erased = await eraseHere(orgId, projectIds);
        const message = JSON.stringify({ organization_id: orgId, project_ids: projectIds });
        await s.store.publish(erasedChannel, message).catch((error: unknown) => log.warn("request log: the erasure broadcast failed", { error: String(error) }));
        return erased;
      },
    },
    start: async () => {
      await s.store.subscribe(erasedChannel, onErased);
      await s.store.subscribe(settingsChangedChannel, onSettingsChanged);
      await replicas?.start();
    },
    callEnded: Object.assign((call: EndedCall): void => {
      try {
        const facts = callFacts(call, clock.now(), performance.now());
        if (facts) writer.noteCall({ ...facts, content: contentFor(call, facts) });
      } catch (error) {
        log.warn("request log: an entry was not noted", { request_id: call.requestId, error: String(error) });
      }
    }, { keepsStreamText }),
    noteUsage: (u) => writer.noteUsage(u),
    routes: requestLogRoutes({ store: s.store, orgs: s.accounts.orgs, log: replicas ?? store, settings: broadcastSettings }),
    async stop() {
      await replicas?.stop();
      await s.store.unsubscribe(erasedChannel, onErased).catch(() => undefined);
      await s.store.unsubscribe(settingsChangedChannel, onSettingsChanged).catch(() => undefined);
      await Promise.all([...erasing]);
      await writer.close();
      await store.close();
    },
  };
}

function jsonOrUndefined(message: string): unknown {
  try {
    return JSON.parse(message);
  } catch {
    return undefined;
  }
}
