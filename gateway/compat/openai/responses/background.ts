// Runs background responses (`background: true`, docs/guides/responses.md)
// in this process: the provider call streams, its events go to the
// response's actor in batches (each report also its heartbeat, and the
// answer tells a cancelled or deleted run to stop), the call is billed once
// on its usage_key (the response id) before the actor hears it ended, and
// the actor keeps the status, the event log and the watchdog that starts or
// fails a run after a restart (actors/responses/response-actor.ts). A run is
// never run twice: only a queued one is claimed, and one found running by a
// process that is gone is failed, not retried — its provider call may have
// answered and been billed already.
import { isTroupeError, TroupeError } from "../../../../core/errors.ts";
import { callActor, type ActorHost } from "../../../../actors/host.ts";
import { openParts, partsFor, type JobBudget } from "../../../../actors/job/job-budget.ts";
import type { RunEvent, RunState } from "../../../../actors/responses/background-run.ts";
import { actorRef } from "../../../../actors/actor.ts";
import { RESPONSE_ACTOR, type ResponseActorDefinition, type StoredResponse } from "../../../../actors/responses/response-actor.ts";
import type { Logger } from "../../../../core/log.ts";
import type { Router } from "../../../../providers/router.ts";
import { isFinish, type StreamFinish } from "../../../../providers/types.ts";
import type { Reservation } from "../../../../tenancy/ledger.ts";
import type { UsageMeter, UsageRecord } from "../../../../providers/usage.ts";
import type { ResponseConversationHook } from "./create.ts";
import type { ResponseHistory } from "./history.ts";
import type { Item } from "./items.ts";
import { responseUlid } from "./items.ts";
import { responseCreateSchema } from "./request.ts";
import { responseObject, statusOf, usageOf, type ResponseFrame } from "./response-object.ts";
import { ResponseEventStream } from "./stream.ts";
import { toChatRequest } from "./translate.ts";

/** A reference, not the definition: the definition is built with this runner (its watchdog starts runs here). */
const responseActor = actorRef<ResponseActorDefinition>(RESPONSE_ACTOR);

/** Tries of the finish call, a second apart (past them the watchdog fails the response). */
const FINISH_ATTEMPTS = 5;
const FINISH_RETRY_MS = 1_000;

/** How often a run reports (its events, its heartbeat; a cancel on another replica is seen within it). */
const REPORT_MS = 250;

export interface BackgroundRunnerDeps {
  actors: ActorHost;
  router: Pick<Router, "chatStream" | "catalogue">;
  history: ResponseHistory;
  meter: UsageMeter;
  /** Bills one record durably, idempotently on its usage_key, then releases the holds it settles (the project's part, the key's). */
  bill(record: UsageRecord, settles: readonly Reservation[]): Promise<void>;
  budget?: Pick<JobBudget, "restoreParts" | "releaseParts"> | undefined;
  /** The Conversations API: a response naming a conversation reads its items first and appends its own once it ended. */
  conversations?: ResponseConversationHook | undefined;
  log: Logger;
  /** This process's runner name. */
  runner: string;
}

export class BackgroundRunner {
  private readonly running = new Map<string, AbortController>();
  private readonly runs_ = new Set<Promise<void>>();
  private readonly deps: BackgroundRunnerDeps;

  constructor(deps: BackgroundRunnerDeps) {
    this.deps = deps;
  }

  get name(): string {
    return this.deps.runner;
  }

  runs(id: string): boolean {
    return this.running.has(id);
  }

  /** Starts the run of a queued response here (the actor's claim decides whether there is one to run). */
  start(id: string): void {
    if (this.running.has(id)) return;
    const controller = new AbortController();
    this.running.set(id, controller);
    const run = this.run(id, controller)
      .catch((error: unknown) => this.deps.log.warn("background response run failed", { response_id: id, error }))
      .finally(() => {
        this.running.delete(id);
        this.runs_.delete(run);
      });
    this.runs_.add(run);
  }

  /** Stops this process's provider call of the response at once (cancel, delete). */
  abort(id: string): void {
    this.running.get(id)?.abort(new TroupeError("invalid_request", "the response was cancelled"));
  }

  /** Stops every run of this process and waits for them (shutdown, before the actor host stops): the actors' watchdogs fail them after the restart. */
  async stop(): Promise<void> {
    for (const controller of this.running.values()) controller.abort(new Error("Troupe is stopping"));
    await Promise.all([...this.runs_]);
  }

  private async run(id: string, controller: AbortController): Promise<void> {
    const { actors, runner } = this.deps;
    const actor = responseActor;
    const claimed = await callActor(actors, actor, id, "claim", { runner });
    if (!claimed) return;
    const { stored, run } = claimed;
    const reporter = new Reporter(this.deps, id, controller);
    let billed = false;
    let finished: Item;
    try {
      if (run.budget && this.deps.budget) await this.deps.budget.restoreParts(run.budget, openParts(run.budget));
      const outcome = await this.call(id, stored, run, reporter, controller.signal);
      billed = outcome.billed;
      finished = outcome.response;
    } catch (error) {
      if (controller.signal.aborted) {
        // Cancelled, deleted or stopping: the actor ended it (or its watchdog will); what was not billed goes back to the budget.
        await reporter.close();
        if (run.budget && !billed) await this.deps.budget?.releaseParts(run.budget, openParts(run.budget).map((p) => p.id)).catch(() => undefined);
        return;
      }
      const failure = isTroupeError(error) ? error : new TroupeError("internal_error", error instanceof Error ? error.message : "the response failed");
      finished = { ...reporter.current(stored), status: "failed", usage: null, error: { code: failure.code === "internal_error" ? "server_error" : failure.code, message: failure.message } };
      reporter.terminal(finished);
    }
    await reporter.close();
    // Refused when the run ended otherwise meanwhile (cancelled while the last events were made): that end stands.
    // Tried a few times: on Dapr the actor may be moving to another replica (one was lost) for a few seconds.
    const end = { runner, events: reporter.takePending(), response: finished, billed };
    let accepted = false;
    for (let attempt = 1; ; attempt++) {
      try {
        ({ accepted } = await callActor(actors, actor, id, "finish", end));
        break;
      } catch (error) {
        if (attempt >= FINISH_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, FINISH_RETRY_MS));
      }
    }
    // As a foreground response that is stored: its input and output join the conversation it names.
    const conversation = conversationOf(run.body);
    if (accepted && conversation && this.deps.conversations) {
      await this.deps.conversations.append(conversation, stored.owner, [...stored.input, ...((finished.output as Item[] | undefined) ?? [])]);
    }
  }

  /** The provider call, streamed into the event log; billed before its end is reported. */
  private async call(id: string, stored: StoredResponse, run: RunState, reporter: Reporter, signal: AbortSignal): Promise<{ response: Item; billed: boolean }> {
    const body = responseCreateSchema.parse(run.body);
    const ulid = responseUlid(id)!;
    const created = typeof stored.response.created_at === "number" ? stored.response.created_at : 0;
    const frame: ResponseFrame = { id, createdSeconds: created, body, store: true };
    const reader = { organization_id: stored.owner.organization_id, environment_id: stored.owner.environment_id };
    const conversation = conversationOf(run.body);
    const earlier = conversation && this.deps.conversations ? await this.deps.conversations.items(conversation, stored.owner) : [];
    const chat = await toChatRequest(this.deps.router.catalogue, this.deps.history, reader, body, ulid, earlier);
    const stream = new ResponseEventStream(ulid);
    const inProgress = responseObject(frame, { status: "in_progress", model: body.model, output: [], usage: null });
    reporter.add(stream.opening(inProgress), inProgress);
    let finish: StreamFinish | undefined;
    let billed = false;
    for await (const event of this.deps.router.chatStream(chat.request, { signal, category: chat.category })) {
      if (isFinish(event)) {
        finish = event;
        const record = this.deps.meter.build({ ...run.payer, request_id: id }, run.category, event);
        await this.deps.bill(record, partsFor(run.budget, 0));
        billed = true;
      }
      reporter.add(stream.events(event));
      if (finish) break;
    }
    if (!finish) throw new TroupeError("provider_error", "the provider's stream ended without finishing");
    const out = stream.output(finish);
    const { status, incomplete_details } = statusOf(out.finish_reason);
    const response = responseObject(frame, { status, incomplete_details, model: out.model, output: stream.items, usage: usageOf(out) });
    reporter.terminal(response, stream.closing(response));
    return { response, billed };
  }
}

function conversationOf(body: Record<string, unknown>): string | undefined {
  const c = body.conversation;
  if (typeof c === "string") return c;
  if (c && typeof c === "object" && "id" in c && typeof c.id === "string") return c.id;
  return undefined;
}

/**
 * A run's reports to its actor: events gathered and sent at most every
 * REPORT_MS (one report in flight at a time), plus a beat every REPORT_MS
 * when nothing happened; an answer saying stop aborts the call.
 */
class Reporter {
  private pending: RunEvent[] = [];
  private response: Item | undefined;
  private sending: Promise<void> = Promise.resolve();
  private lastSent = 0;
  private readonly timer: NodeJS.Timeout;
  private readonly deps: BackgroundRunnerDeps;
  private readonly id: string;
  private readonly controller: AbortController;
  private closed = false;
  private inFlight = false;

  constructor(deps: BackgroundRunnerDeps, id: string, controller: AbortController) {
    this.deps = deps;
    this.id = id;
    this.controller = controller;
    this.timer = setInterval(() => this.flush(), REPORT_MS);
    this.timer.unref();
  }

  current(stored: StoredResponse): Item {
    return this.response ?? stored.response;
  }

  add(events: RunEvent[], response?: Item): void {
    this.pending.push(...events);
    if (events.length > 0) this.lastSequence = events.at(-1)!.sequence_number;
    if (response) this.response = response;
    if (Date.now() - this.lastSent >= REPORT_MS) this.flush();
  }

  /** The final object and its terminal event (a failure's: response.failed), sent with finish. */
  terminal(response: Item, closing?: RunEvent): void {
    const last = closing ?? { type: "response.failed", sequence_number: this.lastSequence + 1, response };
    this.pending.push(last);
    this.lastSequence = last.sequence_number;
    this.response = response;
  }

  /** The last sequence number made (sent or pending). */
  private lastSequence = -1;

  takePending(): RunEvent[] {
    const events = this.pending;
    this.pending = [];
    return events;
  }

  private flush(): void {
    // One report at a time, none queued behind it: a slow actor gets bigger batches, not a backlog of beats.
    if (this.closed || this.inFlight) return;
    this.inFlight = true;
    this.sending = this.sending.then(async () => {
      const events = this.pending;
      this.pending = [];
      this.lastSent = Date.now();
      try {
        const { stop } = await callActor(this.deps.actors, responseActor, this.id, "progress", { runner: this.deps.runner, events, ...(this.response ? { response: this.response } : {}) });
        if (stop) this.controller.abort(new Error("the run was stopped"));
      } catch (error) {
        // Sent again with the next report (the actor skips what it already has).
        this.pending = [...events, ...this.pending];
        this.deps.log.warn("background response report failed", { response_id: this.id, error });
      } finally {
        this.inFlight = false;
      }
    });
  }

  /** Waits for the report in flight and stops reporting; what is still pending goes with finish. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.sending;
    this.closed = true;
  }
}
