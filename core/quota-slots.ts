// Quotas that hold exactly under concurrency, on either store and across
// replicas (API_KEYS_PER_PROJECT, ENVIRONMENTS_PER_PROJECT,
// PENDING_INVITATIONS_PER_ORGANIZATION, WEBHOOK_ENDPOINTS_PER_ORGANIZATION;
// docs/security-and-limits.md, "Account quotas"). A scope (one project's keys, one organization's pending
// invitations) has `capacity` numbered slots. Slot i's current holder is a
// document, `quota-holder:<scope>:<i>`; a create takes a slot that is empty
// or whose holder no longer counts (a revoked key, an accepted or expired
// invitation) with the unique claim `quota-turn:<scope>:<i>:<previous holder>`
// in the same atomic batch as the record it admits. Of creates racing for one
// slot exactly one commits; the others read the slots again and take another
// or are refused. The claims are never released (one small claim per
// create): releasing one would let a create that read the old holder late
// take the slot a second time. Each is indexed under its scope
// (`quota-turns:<scope>`), so deleting the organization removes them all
// (quotaErasureOps).
import { ClaimTakenError, indexMembers, type DataStore, type StoreOp } from "./data-store.ts";
import { TroupeError } from "./errors.ts";

export interface QuotaScope {
  /** Names the scope: `api-keys:<project id>`. */
  scope: string;
  /** Slots in the scope: the limit (less what counts without a slot). */
  capacity: number;
  /** The ids among `holderIds` that still count against the limit. */
  counting(holderIds: string[]): Promise<Set<string>>;
  /** The 403 quota_exceeded answered when every slot is held. */
  refusal(): TroupeError;
}

/** Passes at most this many lost races (each one another create's success) before answering 409. */
const maxRaces = 1_000;

const holderKey = (scope: string, slot: number) => `quota-holder:${scope}:${slot}`;
const turnKey = (scope: string, slot: number, previous: string | undefined) => `quota-turn:${scope}:${slot}:${previous ?? "-"}`;
const turnsIndexKey = (scope: string) => `quota-turns:${scope}`;

/** A quota_exceeded naming the limit, shaped as the organization and project quotas' (tenancy/organizations.ts). */
export function quotaExceeded(what: string, max: number): TroupeError {
  return new TroupeError("quota_exceeded", `${what}: the limit is ${max}`, { details: [{ path: "body", message: `at most ${max} (the limit)` }] });
}

/** The free slots of the scope, each with the holder a taker must name. */
async function freeSlots(store: DataStore, quota: QuotaScope): Promise<{ slot: number; previous: string | undefined }[]> {
  const slots = Array.from({ length: quota.capacity }, (_, i) => i);
  const raws = await store.getMany(slots.map((i) => holderKey(quota.scope, i)));
  const holders = raws.map((raw) => (typeof raw === "string" ? raw : undefined));
  const counting = await quota.counting(holders.filter((h): h is string => h !== undefined));
  const free: { slot: number; previous: string | undefined }[] = [];
  for (const i of slots) {
    const holder = holders[i];
    if (holder === undefined || !counting.has(holder)) free.push({ slot: i, previous: holder });
  }
  return free;
}

/** Applies `ops` (the record `holderId` and what goes with it) together with a slot of the scope, or refuses with quota.refusal(); resolves to the slot taken. */
export async function applyWithinQuota(store: DataStore, quota: QuotaScope, holderId: string, ops: StoreOp[]): Promise<number> {
  for (let race = 0; race < maxRaces; race++) {
    const free = await freeSlots(store, quota);
    if (free.length === 0) throw quota.refusal();
    // A random free slot: concurrent creates mostly take different ones instead of all racing for the first.
    const { slot, previous } = free[Math.floor(Math.random() * free.length)]!;
    const turn = turnKey(quota.scope, slot, previous);
    try {
      await store.apply([
        { op: "claim", key: turn, value: holderId },
        { op: "index", key: turnsIndexKey(quota.scope), member: `${slot}:${previous ?? "-"}`, score: 0 },
        { op: "put", key: holderKey(quota.scope, slot), value: holderId },
        ...ops,
      ]);
      return slot;
    } catch (error) {
      // Lost the slot to a concurrent create (its claim is there now): read again. Any other claim taken is the caller's.
      if (!(error instanceof ClaimTakenError) || (await store.lookup(turn)) === undefined) throw error;
    }
  }
  throw new TroupeError("conflict", "too many concurrent creates in this scope; try again");
}

/**
 * The ops that give slot `slot` back, in the batch that removes its holder's
 * record (a create undone after its slot was taken). The holder document is
 * not deleted: an empty slot's takers name the turn `<slot>:-`, long since
 * claimed for a slot once taken, so they would lose that race for ever. It
 * becomes a release marker that no `counting` knows, `released:<holder>`,
 * unique as the holder was, for the next taker to name. And the turn from the
 * holder is claimed here: a create that read the holder before this batch and
 * its record as gone after would otherwise take the slot by that turn while
 * another takes it from the marker, two holders in one slot.
 */
export function slotReleaseOps(scope: string, slot: number, holderId: string): StoreOp[] {
  return [
    { op: "claim", key: turnKey(scope, slot, holderId), value: releasedHolder(holderId) },
    { op: "index", key: turnsIndexKey(scope), member: `${slot}:${holderId}`, score: 0 },
    { op: "put", key: holderKey(scope, slot), value: releasedHolder(holderId) },
  ];
}

/** The holder document of a slot given back by slotReleaseOps. */
export const releasedHolder = (holderId: string) => `released:${holderId}`;

/** Deleting the scope's owner (the organization): the ops that remove every claim, index entry and holder of the scope. */
export async function quotaErasureOps(store: DataStore, scope: string): Promise<StoreOp[]> {
  const ops: StoreOp[] = [];
  const slots = new Set<number>();
  for (const turn of await indexMembers(store, turnsIndexKey(scope))) {
    const colon = turn.indexOf(":");
    const slot = Number(turn.slice(0, colon));
    const previous = turn.slice(colon + 1);
    ops.push({ op: "release", key: turnKey(scope, slot, previous === "-" ? undefined : previous) }, { op: "unindex", key: turnsIndexKey(scope), member: turn });
    slots.add(slot);
  }
  for (const slot of slots) ops.push({ op: "delete", key: holderKey(scope, slot) });
  return ops;
}
