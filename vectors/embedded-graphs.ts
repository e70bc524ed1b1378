// The embedded index's HNSW graphs across a restart: at open, every partition
// large enough for a graph adopts its saved one (catching up on what changed
// after the save) or builds one; graphs built or repaired at open, and graphs
// changed while running, are saved (at open and at close respectively).
import type { Logger } from "../core/log.ts";
import { loadedUsearchModule, loadUsearch, type VectorPartition } from "./embedded-partition.ts";
import { readGraphSnapshot, saveGraphSnapshot } from "./graph-snapshot.ts";
import { PartitionGraph, type GraphSettings } from "./partition-graph.ts";

export interface GraphContext {
  /** <index directory>/graphs */
  directory: string;
  dimensions: number;
  /** Absent: approximate search is off, nothing to load or save. */
  settings?: Readonly<GraphSettings>;
  logger?: Logger;
}

/** What the last open did with the graphs (for the bench and the start-up log). */
export interface GraphOpenStats {
  /** Graphs read from disk and adopted. */
  loaded: number;
  /** Graphs built from scratch (none saved, or the saved one unusable). */
  built: number;
  /** Records inserted into adopted graphs because they were added or changed after the save. */
  caughtUp: number;
  ms: number;
}

type Organizations = ReadonlyMap<string, ReadonlyMap<string, VectorPartition>>;

export async function openPartitionGraphs(organizations: Organizations, context: GraphContext): Promise<GraphOpenStats> {
  const startedMs = performance.now();
  const stats: GraphOpenStats = { loaded: 0, built: 0, caughtUp: 0, ms: 0 };
  const settings = context.settings;
  if (!settings) return stats;
  for (const [organizationId, partitions] of organizations) {
    for (const [kind, partition] of partitions) {
      if (!partition.graphBehind) continue;
      await loadUsearch();
      const adopted = adoptSavedGraph(organizationId, kind, partition, settings, context);
      if (adopted) {
        stats.loaded++;
        stats.caughtUp += partition.pendingGraphRows;
      } else {
        stats.built++;
      }
      partition.syncGraph();
      if (partition.graphChanged) saveGraph(organizationId, kind, partition, context);
    }
  }
  stats.ms = Math.round(performance.now() - startedMs);
  return stats;
}

function adoptSavedGraph(organizationId: string, kind: string, partition: VectorPartition, settings: Readonly<GraphSettings>, context: GraphContext): boolean {
  try {
    const saved = readGraphSnapshot(context.directory, organizationId, kind);
    if (!saved || saved.header.dimensions !== context.dimensions || saved.header.connectivity !== settings.connectivity) return false;
    partition.adoptGraph(PartitionGraph.load(loadedUsearchModule(), context.dimensions, settings, saved.graphPath, saved.header.graph_bytes), saved.entries);
    return true;
  } catch (error) {
    context.logger?.warn("saved vector graph unusable, rebuilding it", { organization_id: organizationId, error: (error as Error).message });
    return false;
  }
}

/** Saves every graph changed since it was loaded or last saved; a failure is logged (the records are in LMDB: the next open rebuilds). */
export function saveChangedGraphs(organizations: Organizations, context: GraphContext): void {
  for (const [organizationId, partitions] of organizations) {
    for (const [kind, partition] of partitions) {
      if (!partition.graphChanged) continue;
      try {
        saveGraph(organizationId, kind, partition, context);
      } catch (error) {
        context.logger?.warn("could not save a vector graph", { organization_id: organizationId, error: (error as Error).message });
      }
    }
  }
}

function saveGraph(organizationId: string, kind: string, partition: VectorPartition, context: GraphContext): void {
  const snapshot = partition.graphSnapshot();
  if (!snapshot) return;
  saveGraphSnapshot(
    context.directory,
    { organization_id: organizationId, kind, dimensions: context.dimensions, connectivity: context.settings?.connectivity ?? 0 },
    snapshot.rows,
    snapshot.graph,
  );
  partition.graphChanged = false;
}
