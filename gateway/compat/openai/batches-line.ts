// One batch line run in process through the mount's own route (the OpenAI
// mount's chat completions, embeddings or responses, the Anthropic mount's messages):
// the same body schema, scope check, model allowlist, budget reservation,
// translation, router and billing as the HTTP call, so a line's answer body
// is exactly what the mount answers. Only the credential differs: the line
// runs as the key that created the batch (a snapshot), and its request id is
// `batch:<batch id>:line:<index>`, which the usage ledger is idempotent on,
// so a line run again after a crash is billed once. Each line counts against
// the key's limits (per-minute windows and max_concurrent, the batch lines'
// own, of the key's sizes); a line those would refuse is not answered with
// a 429 but waits (`later`) for the window to turn.
import { isTroupeError, TroupeError } from "../../../core/errors.ts";
import type { LineOutcome } from "../../../actors/batch/batch-runner.ts";
import type { BatchData } from "../../../actors/batch/types.ts";
import { allowlistOfKey, withModelAllowlist } from "../../../providers/router-allowlist.ts";
import type { BatchLaneLimits } from "../../../tenancy/key-rate-limit.ts";
import { checkInputScope } from "../../admission.ts";
import type { AuthContext } from "../../auth-context.ts";
import { admitRoute } from "../../route-billing.ts";
import { streamed, type RouteContext, type RouteDefinition, type RouteResult } from "../../route.ts";
import { tokenEstimate } from "../../token-estimate.ts";
import { parseWith } from "../../validation.ts";

/** A line's request id: what its usage record is keyed on (billed once however often it runs). */
export const lineRequestId = (batchId: string, index: number): string => `batch:${batchId}:line:${index}`;

/** The key's limits a line is counted against: its batch lines' windows (tenancy/key-rate-limit.ts). */
export type LineLimits = BatchLaneLimits;

export interface LineAnswer {
  status: number;
  body: unknown;
  requestId: string;
}

export type LineRun = { kind: "answer"; answer: LineAnswer } | { kind: "budget" } | { kind: "later"; retryInMs: number };

/**
 * Runs `route` with `body` (`bodyBytes` long as sent) as `batch`'s key. A
 * 402 is not an answer: the caller pauses the batch (`budget`); nor is the
 * key's own rate limit, requests or tokens per minute or max_concurrent
 * (`later`: run the line again after `retryInMs`); every other refusal or
 * failure is the line's answer, in the route's dialect.
 */
export async function runRouteLine(route: RouteDefinition, batch: BatchData, index: number, body: unknown, bodyBytes: number, limits: LineLimits): Promise<LineRun> {
  const requestId = lineRequestId(batch.id, index);
  const auth: AuthContext = { kind: "api_key", key: batch.key };
  let ends: Array<() => void> = [];
  try {
    const parsed: unknown = route.body ? parseWith(route.body, batch.endpoint === "/v1/responses" ? statelessByDefault(body) : (body ?? {}), "body") : undefined;
    const flags = typeof parsed === "object" && parsed !== null ? (parsed as { stream?: unknown; background?: unknown }) : {};
    if (flags.stream === true) throw new TroupeError("invalid_request", "a batch line cannot stream", { details: [{ path: "body.stream", message: "must be false or absent in a batch" }] });
    // A batch is already asynchronous; a background response would answer the line before it ran.
    if (flags.background === true) throw new TroupeError("invalid_request", "a batch line cannot run in the background", { details: [{ path: "body.background", message: "must be false or absent in a batch" }] });
    if (route.inputScope) checkInputScope(auth, route.inputScope(parsed));
    const ctx = lineContext(requestId, parsed, auth);
    // Counted only once the line is known to be a valid call, as admission and the route runner count an HTTP one.
    const counted = await countAgainstKey(limits, batch, requestId, route.billing ? tokenEstimate(bodyBytes, parsed) : 0);
    if (counted.kind === "later") return counted;
    ends = counted.ends;
    const allow = allowlistOfKey(batch.key);
    const run = async (): Promise<RouteResult> => {
      const bill = route.billing ? await admitRoute(route.billing, ctx) : undefined;
      if (bill) ctx.bill = (figures) => bill.bill(figures);
      try {
        return await route.handler(ctx);
      } finally {
        await bill?.release();
      }
    };
    const result = await (allow ? withModelAllowlist(allow, run) : run());
    if (result === streamed || !("body" in result)) throw new TroupeError("internal_error", "the route answered no JSON body");
    return { kind: "answer", answer: { status: result.status, body: result.body, requestId } };
  } catch (error) {
    const troupeError = isTroupeError(error) ? error : new TroupeError("internal_error", error instanceof Error ? error.message : "the line failed");
    if (troupeError.code === "budget_exceeded") return { kind: "budget" };
    const rendered = route.dialect ? route.dialect.renderError(troupeError, requestId) : { status: troupeError.status, body: { error: { code: troupeError.code, message: troupeError.message } } };
    return { kind: "answer", answer: { status: rendered.status, body: rendered.body, requestId } };
  } finally {
    for (const end of ends) end();
  }
}

/**
 * One request in the key's requests-per-minute window, one call in flight
 * under its max_concurrent, and the line's estimated tokens in its token
 * window: what ends the last two as the line ends, or `later` with the wait
 * the refusal gave (nothing is left held then).
 */
async function countAgainstKey(limits: LineLimits, batch: BatchData, requestId: string, tokens: number): Promise<{ kind: "counted"; ends: Array<() => void> } | { kind: "later"; retryInMs: number }> {
  const ends: Array<() => void> = [];
  try {
    await limits.checkRateLimit(batch.key);
    const endCall = limits.enterCall(batch.key);
    if (endCall) ends.push(endCall);
    const releaseTokens = tokens > 0 ? await limits.reserveTokens(batch.key, requestId, tokens) : undefined;
    if (releaseTokens) ends.push(releaseTokens);
    return { kind: "counted", ends };
  } catch (error) {
    for (const end of ends) end();
    if (isTroupeError(error) && error.code === "rate_limited") return { kind: "later", retryInMs: (error.retryAfterSeconds ?? 1) * 1000 };
    throw error;
  }
}

/**
 * A Responses API line is stateless unless it says otherwise: `store` absent
 * means false (docs/api/batches.md, "Responses lines"), so a 50,000-line
 * batch does not leave 50,000 stored responses behind; a line with
 * `store: true` is stored in the batch's environment as an interactive call's.
 */
export function statelessByDefault(body: unknown): unknown {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return body ?? {};
  return "store" in body && (body as { store?: unknown }).store != null ? body : { ...body, store: false };
}

/** A route context with no connection behind it: nothing streams, no cookie is set, nothing aborts it. */
function lineContext(requestId: string, body: unknown, auth: AuthContext): RouteContext<unknown, undefined> {
  return {
    requestId,
    params: {},
    body,
    query: undefined,
    headers: {},
    remoteAddress: "batch",
    auth,
    signal: new AbortController().signal,
    sse: () => {
      throw new TroupeError("invalid_request", "a batch line cannot stream");
    },
    setCookie: () => undefined,
    bill: () => {
      throw new Error("ctx.bill on a route that declares no billed call");
    },
  };
}

/** OpenAI's output line of a batch request. */
export function openAiOutputLine(batch: BatchData, index: number, customId: string, answer: LineAnswer): { ok: boolean; text: string } {
  const ok = answer.status >= 200 && answer.status < 300;
  const line = { id: `batch_req_${batch.id.replace(/^batch_/, "")}_${index}`, custom_id: customId, response: { status_code: answer.status, request_id: answer.requestId, body: answer.body }, error: null };
  return { ok, text: JSON.stringify(line) };
}

export type { LineOutcome };
