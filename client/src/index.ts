// @troupe/client: a typed client for Troupe's /v1 API (README.md beside this folder).
export { createTroupeClient, type TroupeClient, type TroupeClientOptions } from "./client.ts";
export { unwrap, unwrapWithResponse } from "./unwrap.ts";
export type { AgentHelpers, WaitOptions } from "./agents.ts";
export type { EventSocketOptions } from "./events-socket.ts";
export {
  AuthenticationError,
  BudgetExceededError,
  ConflictError,
  ConnectionError,
  InvalidRequestError,
  NotFoundError,
  PermissionDeniedError,
  ProviderError,
  RateLimitError,
  ServerError,
  TroupeError,
  errorFromResponse,
  parseRetryAfter,
  type ErrorCode,
  type TroupeErrorInit,
} from "./errors.ts";
export { defaultSleep, isRetryableStatus, retryingFetch, type Fetch, type RetryOptions, type Sleep } from "./retry.ts";
export type * from "./types.ts";
export type { components, operations, paths } from "./schema.js";
