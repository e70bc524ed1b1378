// Where stored responses are kept: each in its ResponseActor, and its id in
// a per-organization index of the data store, written first, so deleting the
// organization finds every response it has (docs/decisions.md, "Responses
// API"). Retention is the actor's (a reminder at expiry); the index entry of
// an expired or deleted response is removed with it, or by the erasure.
import { isTroupeError } from "../../../../core/errors.ts";
import { indexMembers, type DataStore } from "../../../../core/data-store.ts";
import { callActor, type ActorHost } from "../../../../actors/host.ts";
import type { ResponseActorDefinition, StoredResponse } from "../../../../actors/responses/response-actor.ts";
import type { ResponseHistory, Reader } from "./history.ts";

const orgIndexKey = (orgId: string) => `org-responses:${orgId}`;

export class ResponseStore {
  private readonly actors: ActorHost;
  private readonly actor: ResponseActorDefinition;
  private readonly data: DataStore;
  readonly history: ResponseHistory;

  constructor(deps: { actors: ActorHost; actor: ResponseActorDefinition; data: DataStore; history: ResponseHistory }) {
    this.actors = deps.actors;
    this.actor = deps.actor;
    this.data = deps.data;
    this.history = deps.history;
  }

  /** The organization's index entry, written before the actor's state (a background response's enqueue too). */
  async index(id: string, organizationId: string, nowMs: number): Promise<void> {
    await this.data.apply([{ op: "index", key: orgIndexKey(organizationId), member: id, score: nowMs }]);
  }

  async save(id: string, stored: StoredResponse, nowMs: number): Promise<void> {
    await this.index(id, stored.owner.organization_id, nowMs);
    await callActor(this.actors, this.actor, id, "put", { stored });
  }

  async get(id: string, reader: Reader): Promise<StoredResponse | undefined> {
    return (await this.history.read(id, reader))?.stored;
  }

  async delete(id: string, reader: Reader): Promise<boolean> {
    this.history.forget(id);
    const { deleted } = await callActor(this.actors, this.actor, id, "delete", reader);
    if (deleted) await this.data.apply([{ op: "unindex", key: orgIndexKey(reader.organization_id), member: id }]);
    return deleted;
  }

  /** Deleting an organization: every response it stored, whatever the environment. */
  async eraseOrganization(orgId: string): Promise<number> {
    const ids = await indexMembers(this.data, orgIndexKey(orgId));
    for (const id of ids) {
      this.history.forget(id);
      await callActor(this.actors, this.actor, id, "erase", { organization_id: orgId }).catch((error: unknown) => {
        if (!(isTroupeError(error) && error.code === "not_found")) throw error;
      });
    }
    if (ids.length > 0) await this.data.apply(ids.map((member) => ({ op: "unindex" as const, key: orgIndexKey(orgId), member })));
    return ids.length;
  }
}
