// The embedded index's HNSW graphs across a restart: at open, every partition
// large enough for a graph adopts its saved one (catching up on what changed
// after the save) or starts building one; both run on the graph thread, so
// the open returns once the saved files are loaded. A graph built or repaired
// at open is saved once it has caught up; graphs changed while running are
// saved at close (what is still unsent then is caught up after a restart).
import type { Logger } from "../core/log.ts";
import type { VectorPartition } from "./embedded-partition.ts";
import type { GraphWorker } from "./graph-worker-client.ts";
import { readGraphSnapshot, saveGraphSnapshot } from "./graph-snapshot.ts";
import type { GraphSettings } from "./partition-graph.ts";

export interface GraphContext {
  /** <index directory>/graphs */
  directory: string;
  dimensions: number;
  /** Absent: approximate search is off, nothing to load or save. */
  settings?: Readonly<GraphSettings>;
  graphs?: GraphWorker;
  logger?: Logger;
}

/** What the last open did with the graphs (for the bench and the start-up log). */
export interface GraphOpenStats {
  /** Graphs read from disk and adopted. */
  loaded: number;
  /** Graphs being built from scratch (none saved, or the saved one unusable). */
  built: number;
  /** Records queued for insertion into adopted graphs because they were added or changed after the save. */
  caughtUp: number;
  ms: number;
}

type Organizations = ReadonlyMap<string, ReadonlyMap<string, VectorPartition>>;

/** Adopts or starts every partition's graph; `background` receives the saves that follow a build or repair. */
export async function openPartitionGraphs(
  organizations: Organizations,
  context: GraphContext,
  background: (organizationId: string, work: Promise<void>) => void,
): Promise<GraphOpenStats> {
  const startedMs = performance.now();
  const stats: GraphOpenStats = { loaded: 0, built: 0, caughtUp: 0, ms: 0 };
  const { settings, graphs } = context;
  if (!settings || !graphs) return stats;
  for (const [organizationId, partitions] of organizations) {
    for (const [kind, partition] of partitions) {
      if (!partition.graphBehind) continue;
      if (await adoptSavedGraph(organizationId, kind, partition, settings, graphs, context)) {
        stats.loaded++;
        stats.caughtUp += partition.pendingGraphRows;
      } else {
        stats.built++;
      }
      partition.syncGraph();
      if (partition.graphChanged) background(organizationId, saveWhenSettled(organizationId, kind, partition, context));
    }
  }
  stats.ms = Math.round(performance.now() - startedMs);
  return stats;
}

async function adoptSavedGraph(
  organizationId: string,
  kind: string,
  partition: VectorPartition,
  settings: Readonly<GraphSettings>,
  graphs: GraphWorker,
  context: GraphContext,
): Promise<boolean> {
  try {
    const saved = readGraphSnapshot(context.directory, organizationId, kind);
    if (!saved || saved.header.dimensions !== context.dimensions || saved.header.connectivity !== settings.connectivity) return false;
    await partition.adoptGraph(saved.entries, (removals) => graphs.load(context.dimensions, settings, saved.graphPath, saved.header.graph_bytes, removals));
    return true;
  } catch (error) {
    context.logger?.warn("saved vector graph unusable, rebuilding it", { organization_id: organizationId, error: (error as Error).message });
    return false;
  }
}

async function saveWhenSettled(organizationId: string, kind: string, partition: VectorPartition, context: GraphContext): Promise<void> {
  await partition.graphSettled();
  await saveLogged(organizationId, kind, partition, context);
}

/** Saves every graph changed since it was loaded or last saved; a failure is logged (the records are in LMDB: the next open rebuilds). */
export async function saveChangedGraphs(organizations: Organizations, context: GraphContext): Promise<void> {
  for (const [organizationId, partitions] of organizations) {
    for (const [kind, partition] of partitions) {
      if (partition.graphChanged) await saveLogged(organizationId, kind, partition, context);
    }
  }
}

async function saveLogged(organizationId: string, kind: string, partition: VectorPartition, context: GraphContext): Promise<void> {
  try {
    await saveGraph(organizationId, kind, partition, context);
  } catch (error) {
    context.logger?.warn("could not save a vector graph", { organization_id: organizationId, error: (error as Error).message });
  }
}

async function saveGraph(organizationId: string, kind: string, partition: VectorPartition, context: GraphContext): Promise<void> {
  const snapshot = partition.graphSnapshot();
  if (!snapshot) return;
  // Cleared first: a change while the graph thread writes marks it changed again.
  partition.graphChanged = false;
  try {
    await saveGraphSnapshot(
      context.directory,
      { organization_id: organizationId, kind, dimensions: context.dimensions, connectivity: context.settings?.connectivity ?? 0 },
      snapshot.rows,
      (path) => snapshot.graph.save(path),
    );
  } catch (error) {
    partition.graphChanged = true;
    throw error;
  }
}
