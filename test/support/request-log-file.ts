// Reads a running replica's request-log file from another process: the
// request ids one project's page holds, newest first. The replicas of a test
// run in the test's own process, and a second RequestLogStore opened there on
// a live replica's file can open a named database (a write transaction) while
// the replica's own write transaction waits for the main thread to run its
// callback: the two wait for each other (seen once in CI, the test killed at
// its timeout). In a child process the reader only waits for the lock.
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The project's request ids in the file under `dataDir`, newest first (up to 1,000). */
export async function requestIdsInFile(dataDir: string, projectId: string): Promise<string[]> {
  const { stdout } = await run(process.execPath, [import.meta.filename, dataDir, projectId], { timeout: 30_000 });
  const ids: unknown = JSON.parse(stdout);
  if (!Array.isArray(ids)) throw new Error(`the reader printed ${stdout}`);
  return ids.map(String);
}

// Run as a script: print the ids as JSON.
if (process.argv[1] === import.meta.filename) {
  const [dataDir = "", projectId = ""] = process.argv.slice(2);
  const { RequestLogStore } = await import("../../tenancy/request-log-store.ts");
  const week = 7 * 86_400_000;
  const store = new RequestLogStore(dataDir, { now: () => Date.now() }, { retentionMs: week, maxEntries: 1_000_000 });
  const ids = store.page(projectId, {}, 1_000).entries.map((e) => e.request_id);
  await store.close();
  process.stdout.write(JSON.stringify(ids));
}
