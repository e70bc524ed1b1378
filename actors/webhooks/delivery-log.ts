// A webhook's delivery records (one per attempt) and the payloads of its
// finished events, kept in the tenancy DataStore (lmdb embedded, Redis in the
// cluster) instead of the WebhookActor's state. The actor state is read,
// checked and written whole every turn; with up to WEBHOOK_MAX_DELIVERIES
// records and 50 payloads in it, that was most of a turn's cost under load.
// The actor keeps only the ids (newest first, bounded), so listing, trimming
// and the idempotency check need no store read; the documents are written
// here, one key each, and read only when the API asks for them. A pending
// attempt's record is not written at all: its outbox entry holds every field
// of it, so the actor derives it on read, and the document is written once,
// with the attempt's outcome.
//
// A turn gathers its writes in a TurnWrites and applies them in one atomic
// batch at its end, BEFORE the host commits the actor state, and only then
// hands the turn's attempts to the dispatcher. So a crash after the batch
// but before the commit leaves at most a record the state does not list
// (never shown: listing goes by the state's ids) or a record the next turn
// overwrites under the same key (the expired lease's "no result" outcome;
// until then the stored outcome is shown rather than the derived pending one):
// no attempt's record is lost, and nothing was sent that the store had not
// recorded first.
import type { DataStore, StoreOp } from "../../core/data-store.ts";
import type { OutboxWrites } from "./outbox.ts";
import { deliverySchema, eventPayloadSchema, type Delivery, type DispatchedAttempt, type EventPayload } from "./types.ts";
import { z } from "zod";

const recordKey = (webhookId: string, deliveryId: string) => `webhook-delivery:${webhookId}:${deliveryId}`;
const eventKey = (webhookId: string, eventId: string) => `webhook-event:${webhookId}:${eventId}`;

/** A finished event as kept for "retry a delivery": its payload and the attempts it had. */
const finishedEventSchema = z.object({ event: eventPayloadSchema, attempts: z.number().int().min(0) });
export type FinishedEvent = z.infer<typeof finishedEventSchema>;

export class DeliveryLog {
  private readonly store: DataStore;

  constructor(store: DataStore) {
    this.store = store;
  }

  /** The records with these ids, in the same order; undefined where none is stored (or it does not read). */
  async records(webhookId: string, ids: string[]): Promise<(Delivery | undefined)[]> {
    if (ids.length === 0) return [];
    const raws = await this.store.getMany(ids.map((id) => recordKey(webhookId, id)));
    return raws.map((raw) => {
      const parsed = deliverySchema.safeParse(raw);
      return parsed.success ? parsed.data : undefined;
    });
  }

  async finished(webhookId: string, eventId: string): Promise<FinishedEvent | undefined> {
    const parsed = finishedEventSchema.safeParse(await this.store.get(eventKey(webhookId, eventId)));
    return parsed.success ? parsed.data : undefined;
  }

  /** Collects one turn's writes for the webhook; `announce` gets the records callers wait for once written. */
  begin(webhookId: string, dispatch: (attempts: DispatchedAttempt[]) => void, announce: (records: Delivery[]) => void = () => undefined): TurnWrites {
    return new TurnWrites(this.store, webhookId, dispatch, announce);
  }
}

/** One turn's writes (the last one per key wins), and the attempts to send and records to announce once they are durable. */
export class TurnWrites implements OutboxWrites {
  private readonly store: DataStore;
  private readonly webhookId: string;
  private readonly dispatch: (attempts: DispatchedAttempt[]) => void;
  private readonly ops = new Map<string, StoreOp>();
  private readonly attempts: DispatchedAttempt[] = [];
  private readonly announce_: (records: Delivery[]) => void;
  private readonly announced: Delivery[] = [];

  constructor(store: DataStore, webhookId: string, dispatch: (attempts: DispatchedAttempt[]) => void, announce: (records: Delivery[]) => void) {
    this.store = store;
    this.webhookId = webhookId;
    this.dispatch = dispatch;
    this.announce_ = announce;
  }

  putRecord(record: Delivery): void {
    const key = recordKey(this.webhookId, record.id);
    this.ops.set(key, { op: "put", key, value: record });
  }

  dropRecord(id: string): void {
    const key = recordKey(this.webhookId, id);
    this.ops.set(key, { op: "delete", key });
  }

  keepEvent(event: EventPayload, attempts: number): void {
    const key = eventKey(this.webhookId, event.id);
    this.ops.set(key, { op: "put", key, value: { event, attempts } satisfies FinishedEvent });
  }

  dropEvent(eventId: string): void {
    const key = eventKey(this.webhookId, eventId);
    this.ops.set(key, { op: "delete", key });
  }

  send(attempts: DispatchedAttempt[]): void {
    this.attempts.push(...attempts);
  }

  announce(record: Delivery): void {
    this.announced.push(record);
  }

  /** Writes the batch (atomic, durable), then starts the attempts and announces the outcomes. Throwing fails the turn: nothing is sent. */
  async finish(): Promise<void> {
    if (this.ops.size > 0) await this.store.apply([...this.ops.values()]);
    this.ops.clear();
    if (this.attempts.length > 0) this.dispatch(this.attempts.splice(0));
    if (this.announced.length > 0) this.announce_(this.announced.splice(0));
  }
}
