// The embedded host's durable store: actor states and reminders in one lmdb
// database file under <dataDir>/actors. States are stored as the JSON text
// the turn committed, marked with their schema version (core/schema-version.ts);
// reminders as msgpack records with the version in `s`, parsed back with zod.
// The file is mapped in chunks (remapChunks): with a million conversations the
// store outgrows what the process should keep resident, and a whole-file map
// kept about twice the store's size in the process's RSS (measured: 200,000
// states of 500 bytes, a 192 MiB file: ~356 MiB file-backed RSS; in chunks
// ~178 MiB). lmdb keeps at most 16,384 chunks of 64 KiB mapped per
// environment (1 GiB), dropping unused ones beyond that. States are read
// only on activation, so the slower reads cost little.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { open, type Database, type RootDatabase } from "lmdb";
import { z } from "zod";
import { parseVersioned, readVersionField, SCHEMA_VERSION, versionedJson } from "../../../core/schema-version.ts";

export const storedReminder = z.object({
  type: z.string(),
  id: z.string(),
  name: z.string(),
  method: z.string(),
  input: z.unknown(),
  /** Wall-clock time of the next firing. */
  dueAtMs: z.number(),
  periodMs: z.number().positive().optional(),
});
export type StoredReminder = z.infer<typeof storedReminder>;

export class ActorStore {
  private readonly root: RootDatabase;
  private readonly states: Database<string, [string, string]>;
  /** `s`: the schema version (absent in reminders of releases before versions). */
  private readonly reminders: Database<StoredReminder & { s?: number }, [string, string, string]>;

  constructor(dataDir: string) {
    const dir = join(dataDir, "actors");
    mkdirSync(dir, { recursive: true });
    this.root = open({ path: join(dir, "actors.mdb"), compression: false, remapChunks: true });
    this.states = this.root.openDB({ name: "states", encoding: "string" });
    this.reminders = this.root.openDB({ name: "reminders", encoding: "msgpack" });
  }

  /** The stored state, migrated to today's schema version. */
  readState(type: string, id: string): unknown {
    const text = this.states.get([type, id]);
    return text === undefined ? undefined : parseVersioned(`actor:${type}`, text);
  }

  async writeState(type: string, id: string, stateJson: string): Promise<void> {
    await this.states.put([type, id], versionedJson(stateJson));
  }

  async deleteState(type: string, id: string): Promise<void> {
    await this.states.remove([type, id]);
  }

  async putReminder(reminder: StoredReminder): Promise<void> {
    await this.reminders.put([reminder.type, reminder.id, reminder.name], { ...reminder, s: SCHEMA_VERSION });
  }

  async removeReminder(type: string, id: string, name: string): Promise<void> {
    await this.reminders.remove([type, id, name]);
  }

  /** Every stored reminder; records that no longer parse are skipped and reported. */
  allReminders(onInvalid: (key: unknown, error: z.ZodError) => void): StoredReminder[] {
    const out: StoredReminder[] = [];
    for (const { key, value } of this.reminders.getRange()) {
      const parsed = storedReminder.safeParse(readVersionField("reminder", value, "s"));
      if (parsed.success) out.push(parsed.data);
      else onInvalid(key, parsed.error);
    }
    return out;
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
