// Reading stored responses for a continuation: the `previous_response_id`
// chain walked back link by link (each a small ResponseActor read), and
// `item_reference`s resolved through the response their id names. A stored
// response never changes after it is written, so what was read is cached by
// id (bounded by count) as the chat messages it becomes: a long chain's next
// turn reads one response from its actor, and finds the rest here. Each
// cached entry keeps its owner and expiry and is checked on every use, as
// the actor checks them; a delete through this process drops it (another
// replica's copy lives until it is evicted — docs/guides/responses.md, limits).
import { invalidRequest, TroupeError, type FieldIssue } from "../../../../core/errors.ts";
import type { RefOf } from "../../../../actors/actor.ts";
import { callActor, type ActorHost } from "../../../../actors/host.ts";
import type { ResponseActorDefinition, StoredResponse } from "../../../../actors/responses/response-actor.ts";
import type { ChatMessage } from "../../../../providers/chat-request.ts";
import { itemPlace, itemsToMessages, type Item } from "./items.ts";
import { inputItem, type InputItem } from "./request.ts";

/** Responses a continuation may reach back through; past it the request is a 400 (a chain that long should be a conversation). */
export const MAX_CHAIN_DEPTH = 1_000;
/** Responses kept read in memory per process (each holds its messages). */
const CACHE_ENTRIES = 10_000;

export interface Reader {
  organization_id: string;
  environment_id: string;
}

interface Cached {
  stored: StoredResponse;
  messages: ChatMessage[];
}

export function parseItem(item: Item): InputItem | undefined {
  const parsed = inputItem.safeParse(item);
  return parsed.success ? parsed.data : undefined;
}

function messagesOf(stored: StoredResponse): ChatMessage[] {
  const output = Array.isArray(stored.response.output) ? (stored.response.output as Item[]) : [];
  const items = [...stored.input, ...output].flatMap((i) => {
    const p = parseItem(i);
    return p ? [p] : [];
  });
  const issues: FieldIssue[] = [];
  return itemsToMessages(items, "previous_response_id", issues).messages;
}

export class ResponseHistory {
  private readonly cache = new Map<string, Cached>();

  private readonly actors: ActorHost;
  private readonly actor: RefOf<ResponseActorDefinition>;
  private readonly now: () => number;

  /** `actor`: the definition, or a reference to it (actorRef) where the definition is built after this. */
  constructor(actors: ActorHost, actor: RefOf<ResponseActorDefinition>, now: () => number) {
    this.actors = actors;
    this.actor = actor;
    this.now = now;
  }

  private visible(entry: Cached, reader: Reader): boolean {
    const { owner, expires_at } = entry.stored;
    return expires_at > this.now() && owner.organization_id === reader.organization_id && owner.environment_id === reader.environment_id;
  }

  /** The stored response as `reader` may see it, else undefined. */
  async read(id: string, reader: Reader): Promise<Cached | undefined> {
    const hit = this.cache.get(id);
    if (hit) {
      this.cache.delete(id);
      this.cache.set(id, hit);
      return this.visible(hit, reader) ? hit : undefined;
    }
    const stored = await callActor(this.actors, this.actor, id, "get", reader);
    if (!stored) return undefined;
    const entry = { stored, messages: messagesOf(stored) };
    this.cache.set(id, entry);
    if (this.cache.size > CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    return entry;
  }

  forget(id: string): void {
    this.cache.delete(id);
  }

  /** The chain ending at `previousId`, oldest first, as chat messages; a link that is missing (deleted, expired, another's) is a 400 naming the field. */
  async chain(previousId: string, reader: Reader): Promise<ChatMessage[]> {
    const parts: ChatMessage[][] = [];
    let id: string | null = previousId;
    while (id !== null) {
      if (parts.length >= MAX_CHAIN_DEPTH) throw invalidRequest([{ path: "previous_response_id", message: `a chain may reach back at most ${MAX_CHAIN_DEPTH} responses` }]);
      const entry: Cached | undefined = await this.read(id, reader);
      if (!entry) {
        await this.refuseRunning(id, reader);
        const message = id === previousId ? `Previous response with id '${id}' not found.` : `Response '${id}' earlier in the chain of '${previousId}' is gone (deleted or expired).`;
        throw new TroupeError("invalid_request", message, { details: [{ path: "previous_response_id", message }] });
      }
      parts.push(entry.messages);
      id = entry.stored.previous_response_id;
    }
    return parts.reverse().flat();
  }

  /**
   * A background response still queued or in progress is not yet a stored
   * one: continuing it is a 400 saying so, as OpenAI answers it, not "not
   * found" (docs/decisions.md, "Responses API"). Another reader's is not
   * visible here either, so it stays not found.
   */
  private async refuseRunning(id: string, reader: Reader): Promise<void> {
    const current = await callActor(this.actors, this.actor, id, "current", reader);
    const status = current?.response.status;
    if (!current?.background || (status !== "queued" && status !== "in_progress")) return;
    const message = `Previous response with id '${id}' is still ${status === "queued" ? "queued" : "in progress"}; continue it once it has completed.`;
    throw new TroupeError("invalid_request", message, { details: [{ path: "previous_response_id", message }] });
  }

  /** The input with each item reference replaced by the item it names (an unknown one is a 400 naming it). */
  async resolve(items: readonly InputItem[], reader: Reader): Promise<InputItem[]> {
    if (!items.some((i) => i.type === "item_reference")) return [...items];
    const out: InputItem[] = [];
    for (const [i, item] of items.entries()) {
      if (item.type !== "item_reference") {
        out.push(item);
        continue;
      }
      const place = itemPlace(item.id);
      const entry = place ? await this.read(place.responseId, reader) : undefined;
      const list = entry && place ? (place.input ? entry.stored.input : ((entry.stored.response.output as Item[] | undefined) ?? [])) : [];
      const found = place ? list[place.position] : undefined;
      const parsed = found ? parseItem(found) : undefined;
      if (!parsed || parsed.type === "item_reference") throw invalidRequest([{ path: `input.${i}.id`, message: `Item with id '${item.id}' not found.` }]);
      out.push(parsed);
    }
    return out;
  }
}
