// A project's request-log settings (GET/PATCH /v1/projects/{id}/request-log):
// whether entries keep the prompt and the answer (off by default), and for
// how many days. Kept in the data store and read when a call ends from a
// per-replica copy trusted for a few seconds, as the cache settings are
// (both are tenancy/project-settings-documents.ts). A change is broadcast
// (gateway/features/request-log.ts): every replica drops its copy when the
// PATCH answers; a lost message is bounded by the copy's 5 s. An
// organization's deletion is broadcast too: every replica's erasure removes
// its copies at once.
import { z } from "zod";
import type { Clock } from "../core/clock.ts";
import type { DataStore } from "../core/data-store.ts";
import { ProjectSettingsDocuments } from "./project-settings-documents.ts";

export const requestLogSettingsSchema = z
  .object({
    content_logging: z.boolean().describe("entries keep the request's messages/input and the answer's text (each up to 32 KiB); off by default"),
    content_retention_days: z
      .number()
      .int()
      .min(1)
      .max(3660)
      .describe("days an entry keeps its content; never longer than the log keeps the entry (REQUEST_LOG_RETENTION_SECONDS), the shorter applies"),
  })
  .strict();
export type RequestLogSettings = z.infer<typeof requestLogSettingsSchema>;
export const requestLogSettingsPatchSchema = requestLogSettingsSchema.partial().strict();
export type RequestLogSettingsPatch = z.infer<typeof requestLogSettingsPatchSchema>;

export const defaultRequestLogSettings: RequestLogSettings = Object.freeze({ content_logging: false, content_retention_days: 1 });

/** The document GET/PATCH /v1/projects/{id}/request-log read and change, one a project in the data store. */
export class RequestLogSettingsStore extends ProjectSettingsDocuments<RequestLogSettings> {
  constructor(store: DataStore, clock: Clock) {
    super(store, clock, { key: "request-log-settings", schema: requestLogSettingsSchema, defaults: defaultRequestLogSettings });
  }
}
