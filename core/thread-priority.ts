// A worker thread's own priority. Troupe's background threads (the embedded
// ledger's, the vector graphs') run below the gateway's event loop, so that
// on a machine whose cores are all busy the scheduler runs the loop first and
// gives them what is left. Linux keeps a nice value per thread, addressed by
// the thread's id (setpriority(2); /proc/thread-self names the calling
// thread). Elsewhere the same call would renice the whole process, so it is
// not made there.
import { readlinkSync } from "node:fs";
import { getPriority, setPriority } from "node:os";

/** Nice 10: below the event loop's 0, far from the lowest (19). Threads this one starts inherit it. */
export const backgroundThreadNice = 10;

/**
 * Lowers the calling thread's priority alone, to `nice` unless it is lower
 * already (a process started under `nice 15` keeps 15: this never raises a
 * priority). Raising one's own nice value needs no privilege; should a
 * sandbox refuse it anyway, the thread keeps the process's priority (a
 * scheduling preference, never a correctness matter).
 */
export function lowerThisThreadsPriority(nice = backgroundThreadNice): void {
  if (process.platform !== "linux") return;
  try {
    const threadId = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (Number.isInteger(threadId) && threadId > 0 && getPriority(threadId) < nice) setPriority(threadId, nice);
  } catch {
    // /proc not mounted, or setpriority refused: the thread runs at the process's priority.
  }
}
