// The embedded host's durable store: actor states and reminders in one lmdb
// database file under <dataDir>/actors. States are stored as the JSON text
// the turn committed; reminders as records parsed back with zod.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { open, type Database, type RootDatabase } from "lmdb";
import { z } from "zod";

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
  private readonly reminders: Database<StoredReminder, [string, string, string]>;

  constructor(dataDir: string) {
    const dir = join(dataDir, "actors");
    mkdirSync(dir, { recursive: true });
    this.root = open({ path: join(dir, "actors.mdb"), compression: false });
    this.states = this.root.openDB({ name: "states", encoding: "string" });
    this.reminders = this.root.openDB({ name: "reminders", encoding: "msgpack" });
  }

  readState(type: string, id: string): unknown {
    const text = this.states.get([type, id]);
    return text === undefined ? undefined : (JSON.parse(text) as unknown);
  }

  async writeState(type: string, id: string, stateJson: string): Promise<void> {
    await this.states.put([type, id], stateJson);
  }

  async deleteState(type: string, id: string): Promise<void> {
    await this.states.remove([type, id]);
  }

  async putReminder(reminder: StoredReminder): Promise<void> {
    await this.reminders.put([reminder.type, reminder.id, reminder.name], reminder);
  }

  async removeReminder(type: string, id: string, name: string): Promise<void> {
    await this.reminders.remove([type, id, name]);
  }

  /** Every stored reminder; records that no longer parse are skipped and reported. */
  allReminders(onInvalid: (key: unknown, error: z.ZodError) => void): StoredReminder[] {
    const out: StoredReminder[] = [];
    for (const { key, value } of this.reminders.getRange()) {
      const parsed = storedReminder.safeParse(value);
      if (parsed.success) out.push(parsed.data);
      else onInvalid(key, parsed.error);
    }
    return out;
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
