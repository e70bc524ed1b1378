import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { systemClock } from "../../core/clock.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import type { DataStore } from "../../core/data-store.ts";
import { storeSuite } from "./data-store-suite.ts";

const dirs = new WeakMap<DataStore, string>();

storeSuite(t, {
  name: "embedded",
  async create() {
    const dir = mkdtempSync(join(tmpdir(), "troupe-store-"));
    const store = new EmbeddedDataStore(dir, systemClock);
    dirs.set(store, dir);
    return store;
  },
  async reopen(store) {
    const dir = dirs.get(store);
    if (!dir) throw new Error("unknown store");
    await store.close();
    const reopened = new EmbeddedDataStore(dir, systemClock);
    dirs.set(reopened, dir);
    return reopened;
  },
});

t.test("embedded: every acknowledged write survives kill -9", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-kill-"));
  const writer = join(import.meta.dirname, "../support/store-writer.ts");
  const child = spawn(process.execPath, [writer, dir], { stdio: ["ignore", "pipe", "inherit"] });
  const acked: number[] = [];
  await new Promise<void>((resolve) => {
    let buffer = "";
    child.stdout.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split("\n");
      buffer = lines.pop() ?? "";
      for (const line of lines) if (line.startsWith("ack ")) acked.push(Number(line.slice(4)));
      if (acked.length >= 200) {
        child.kill("SIGKILL");
        resolve();
      }
    });
  });
  await new Promise((r) => child.once("exit", r));
  const store = new EmbeddedDataStore(dir, systemClock);
  const values = await store.getMany(acked.map((i) => `doc:${i}`));
  t.equal(values.filter((v) => v === undefined).length, 0, `all ${acked.length} acknowledged writes are there after kill -9`);
  await store.close();
});
