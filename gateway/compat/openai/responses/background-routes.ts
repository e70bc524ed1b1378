// The background side of the Responses routes (docs/guides/responses.md,
// "Background responses"): creating one (held against the budget, queued in
// its actor, started here), following its event log as a stream (a resumed
// stream reads the log after `starting_after`, then the live events until the
// terminal one), and cancelling it.
import { TroupeError } from "../../../../core/errors.ts";
import { callActor, type ActorHost } from "../../../../actors/host.ts";
import type { JobBudget } from "../../../../actors/job/job-budget.ts";
import type { RunState } from "../../../../actors/responses/background-run.ts";
import type { ResponseActorDefinition, StoredResponse } from "../../../../actors/responses/response-actor.ts";
import type { Payer } from "../../../../providers/usage.ts";
import { json, streamed, type RouteContext, type RouteResult, type SseWriter } from "../../../route.ts";
import { ignoredParamsHeaders } from "../../ignored-params.ts";
import type { BackgroundRunner } from "./background.ts";
import type { Reader } from "./history.ts";
import type { Item } from "./items.ts";
import type { ResponseCreateBody } from "./request.ts";

/** How often a follower reads the log of a run still going (ms). */
const FOLLOW_MS = 100;

export interface BackgroundServices {
  runner: BackgroundRunner;
  actors: ActorHost;
  actor: ResponseActorDefinition;
  budget?: Pick<JobBudget, "reserveParts" | "releaseParts"> | undefined;
}

/** The create call's part once it is translated: hold, queue, start, answer queued (or its stream, with stream: true). */
export async function queueBackground(
  bg: BackgroundServices,
  ctx: Pick<RouteContext<ResponseCreateBody, undefined, string, "api_key">, "body" | "sse" | "signal">,
  queued: { id: string; stored: StoredResponse; payer: Payer; category: "chat" | "vision"; estimateNanos: number; ignored: string[]; index(): Promise<void> },
): Promise<RouteResult> {
  const { id, stored, payer } = queued;
  // Held before anything is queued, as a foreground call is admitted: under the project's hard limit and the key's own;
  // either one reached is refused (402 budget_exceeded) before any provider call.
  const held = bg.budget ? await bg.budget.reserveParts(payer, `resp:${id}`, [queued.estimateNanos], { keyBudget: true }) : undefined;
  const run: RunState = {
    status: "queued",
    body: ctx.body as Record<string, unknown>,
    payer,
    category: queued.category,
    budget: held ? { ...held, parts: held.parts.map((p) => ({ ...p, open: true })) } : null,
    events: [],
    runner: null,
    heartbeat_at: 0,
    announced: false,
  };
  try {
    await queued.index();
    await callActor(bg.actors, bg.actor, id, "enqueue", { stored, run });
  } catch (error) {
    if (held) await bg.budget?.releaseParts(held, held.parts.map((p) => p.id)).catch(() => undefined);
    throw error;
  }
  bg.runner.start(id);
  if (!ctx.body.stream) return json(200, stored.response, ignoredParamsHeaders(queued.ignored));
  const reader = { organization_id: stored.owner.organization_id, environment_id: stored.owner.environment_id };
  return followRun(bg, ctx.sse(), id, reader, -1);
}

/** Streams a background response's events after `after` (-1: all), live until its terminal event or the client leaves. */
export async function followRun(bg: Pick<BackgroundServices, "actors" | "actor">, sse: SseWriter, id: string, reader: Reader, after: number): Promise<typeof streamed> {
  let last = after;
  while (!sse.closed) {
    const page = await callActor(bg.actors, bg.actor, id, "events", { ...reader, after: last });
    if (!page) break; // deleted meanwhile
    for (const e of page.events) {
      if (sse.closed) break;
      await sse.send(e, e.type);
      last = e.sequence_number;
    }
    if (page.final) break;
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_MS));
  }
  sse.end();
  return streamed;
}

/** POST …/{id}/cancel: the actor decides (400 for a response not run in the background); this process's call, if it runs it, stops now. */
export async function cancelBackground(bg: BackgroundServices, id: string, reader: Reader): Promise<Item> {
  const response = await callActor(bg.actors, bg.actor, id, "cancel", reader);
  if (response.status === "cancelled") bg.runner.abort(id);
  return response;
}

/** Retrieve of a response still running in the background (a stored one is read through the history): null when there is none. */
export async function currentBackground(bg: Pick<BackgroundServices, "actors" | "actor">, id: string, reader: Reader): Promise<{ response: Item; background: boolean } | null> {
  return callActor(bg.actors, bg.actor, id, "current", reader);
}

export function notFound(id: string): TroupeError {
  return new TroupeError("not_found", `No response with id '${id}' found.`);
}
