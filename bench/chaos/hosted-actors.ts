// Which actors a replica hosts, and which failures a rolling restart may
// therefore blame on it. Each replica's Dapr host answers
// GET /troupe/active-actors on its loopback actor callback port (the ids in
// memory there, by type: actors/README.md); only the replica hosting a
// conversation's actor can fail its turns when it stops or when placement
// moves actors back to it.
import { z } from "zod";
import type { RequestRecord } from "./steady-load.ts";

const activeActorsSchema = z.record(z.string(), z.array(z.string()));

/** The ids of `type` in memory on the replica whose callback server listens on `callbackPort`. */
export async function hostedActorIds(callbackPort: number, type: string): Promise<Set<string>> {
  const res = await fetch(`http://127.0.0.1:${callbackPort}/troupe/active-actors`, { signal: AbortSignal.timeout(2_000) });
  if (res.status !== 200) throw new Error(`GET /troupe/active-actors on callback port ${callbackPort}: ${res.status}`);
  return new Set(activeActorsSchema.parse(await res.json())[type] ?? []);
}

/** One moment when a replica's actors moved: its SIGTERM, or its rejoin (start to ready). */
export interface Handover {
  /** The instant (SIGTERM) or interval (start → ready: placement moves actors back somewhere in it) when actors moved. */
  fromMs: number;
  toMs: number;
  /** Conversations whose actor the replica hosted then. */
  hosted: ReadonlySet<string>;
}

/**
 * Agent-turn failures that a handover explains: the turn's conversation was
 * hosted by the replica and the request was in flight at the handover.
 * Returns the explained records (each once) and the others.
 */
export function attributeTurnFailures(failures: readonly RequestRecord[], handovers: readonly Handover[]): { explained: RequestRecord[]; unexplained: RequestRecord[] } {
  const explained: RequestRecord[] = [];
  const unexplained: RequestRecord[] = [];
  for (const f of failures) {
    const hit = handovers.some((h) => f.resource !== undefined && h.hosted.has(f.resource) && f.startMs <= h.toMs && f.endMs > h.fromMs);
    (hit ? explained : unexplained).push(f);
  }
  return { explained, unexplained };
}

/** The top reasons of some failures, "2× agents 503 …; 1× …". */
export function reasonsOf(failures: readonly RequestRecord[], top = 3): string | undefined {
  const counts = new Map<string, number>();
  for (const f of failures) {
    const reason = `${f.workload} ${(f.detail ?? "").replace(/\{"error":\{"code":"([a-z_]+)","message":/, "$1 ").slice(0, 240)}`;
    counts.set(reason, (counts.get(reason) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1]).slice(0, top).map(([r, n]) => `${n}× ${r}`).join("; ") || undefined;
}
