// The base of the tenancy services (accounts, sessions, organizations,
// invitations, API keys and their cache): each reads and writes the data
// store, mostly through its typed records, and stamps times from the clock.
// A base class because erasableSyntaxOnly rules out constructor parameter
// properties: without it every service declares and assigns the same three
// fields.
import type { Clock } from "../core/clock.ts";
import type { DataStore } from "../core/data-store.ts";
import { recordsOf, type Records } from "./records.ts";

export abstract class TenancyService {
  protected readonly store: DataStore;
  protected readonly records: Records;
  protected readonly clock: Clock;

  constructor(store: DataStore, clock: Clock) {
    this.store = store;
    this.records = recordsOf(store);
    this.clock = clock;
  }
}
