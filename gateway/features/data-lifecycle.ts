// Data on request and by policy: DELETE /v1/files/{id}, the per-organization
// file retention sweeper, and DELETE /v1/orgs/{id}, which erases an
// organization from every store the other features keep it in.
import { FileRetentionSweeper } from "../../media/file-retention.ts";
import { fileDeleteRoutes } from "../routes/file-delete.ts";
import { orgDeleteRoutes } from "../routes/org-delete.ts";
import type { BatchesFeature } from "./batches.ts";
import type { CacheFeature } from "./cache.ts";
import type { RequestLogFeature } from "./request-log.ts";
import type { ConversationsFeature } from "./conversations.ts";
import type { Feature } from "./feature.ts";
import type { JobsFeature } from "./jobs.ts";
import type { ResponsesFeature } from "./responses.ts";
import type { OpenAiConversationsFeature } from "../compat/openai/conversations/feature.ts";
import type { SharedServices } from "./shared-services.ts";
import type { VectorsFeature } from "./vectors.ts";
import type { WebhooksFeature } from "./webhooks.ts";

export interface Holders {
  conversations: ConversationsFeature;
  jobs: JobsFeature;
  webhooks: WebhooksFeature;
  vectors: VectorsFeature;
  responses: ResponsesFeature;
  openAiConversations: OpenAiConversationsFeature;
  batches: BatchesFeature;
  cache: CacheFeature;
  requestLog: RequestLogFeature;
}

export function dataLifecycleFeature(s: SharedServices, holders: Holders): Feature {
  const { accounts, files, store, log } = s;
  const retention = new FileRetentionSweeper({ files, store, retentionOf: (org) => accounts.orgs.fileRetentionDays(org), settings: s.config.media.retention, clock: s.clock, log });
  return {
    routes: [
      ...fileDeleteRoutes({ files, roleIn: (user, org) => accounts.orgs.roleIn(user, org) }),
      ...orgDeleteRoutes(accounts, {
        ...{ store, apiKeys: s.apiKeys, actors: s.actors, files, log },
        ...{ conversations: holders.conversations.directory, jobs: holders.jobs.directory, webhooks: holders.webhooks.directory, vectors: holders.vectors.vectors, responses: holders.responses.store, openAiConversations: holders.openAiConversations.store, batches: holders.batches, responseCache: holders.cache, requestLog: holders.requestLog.erasure },
      }),
    ],
    start: () => retention.start(),
    drain: () => retention.stop(),
  };
}
