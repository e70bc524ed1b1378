// Saved HNSW graphs of the embedded index, so a restart loads a partition's
// graph instead of rebuilding it (minutes at a million vectors). Per
// partition, in <index directory>/graphs/:
//   <base>.<generation>.usearch  the usearch graph (its own format)
//   <base>.map                   which record each graph node is: a JSON header
//                                naming the graph file, then labels (f64),
//                                vector checksums (u32) and ids, in row order
// The map is written last and renamed into place, so it only ever names a
// complete graph file; a crash mid-save leaves the previous pair in use. The
// records themselves stay in LMDB: on load the partition checks each record's
// checksum against the map and re-inserts only what changed since the save
// (embedded-partition.ts adoptGraph).
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import type { GraphSnapshotRows, SavedGraphEntry } from "./embedded-partition.ts";
import { graphFileBytes } from "./partition-graph.ts";

const headerSchema = z.object({
  format: z.literal("troupe-graph-map-1"),
  organization_id: z.string(),
  kind: z.string(),
  dimensions: z.number().int().positive(),
  connectivity: z.number().int().positive(),
  graph_file: z.string().regex(/^[0-9a-f]+\.[0-9a-z]+\.usearch$/),
  /** The graph file's length when saved (checked before usearch reads it). */
  graph_bytes: z.number().int().nonnegative(),
  count: z.number().int().nonnegative(),
});
export type GraphMapHeader = z.infer<typeof headerSchema>;

/** Graph files are named by a hash: organization ids and kinds are caller text. */
export function graphBase(organizationId: string, kind: string): string {
  return createHash("sha256").update(`${organizationId}\n${kind}`).digest("hex").slice(0, 32);
}

export interface SavedGraph {
  header: GraphMapHeader;
  graphPath: string;
  entries: Map<string, SavedGraphEntry>;
}

/** Writes the graph (`writeGraph`: on the graph thread), then its map (atomically), then removes older graph files of this partition. */
export async function saveGraphSnapshot(
  directory: string,
  identity: Omit<GraphMapHeader, "format" | "graph_file" | "graph_bytes" | "count">,
  rows: GraphSnapshotRows,
  writeGraph: (path: string) => Promise<unknown>,
): Promise<void> {
  mkdirSync(directory, { recursive: true });
  const base = graphBase(identity.organization_id, identity.kind);
  const graphFile = `${base}.${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}.usearch`;
  await writeGraph(join(directory, graphFile));
  const header: GraphMapHeader = {
    format: "troupe-graph-map-1",
    ...identity,
    graph_file: graphFile,
    graph_bytes: graphFileBytes(join(directory, graphFile)),
    count: rows.ids.length,
  };
  const headerBytes = Buffer.from(JSON.stringify(header));
  const lengthBytes = Buffer.alloc(4);
  lengthBytes.writeUInt32LE(headerBytes.length);
  const mapPath = join(directory, `${base}.map`);
  const temp = `${mapPath}.${process.pid}.tmp`;
  writeFileSync(temp, Buffer.concat([lengthBytes, headerBytes, u8(rows.labels), u8(rows.checksums), Buffer.from(rows.ids.join("\n"))]), { flush: true });
  renameSync(temp, mapPath);
  for (const name of readdirSync(directory)) {
    if (name.startsWith(`${base}.`) && name.endsWith(".usearch") && name !== graphFile) rmSync(join(directory, name), { force: true });
  }
}

/** The saved map of this partition, or undefined when there is none; throws when it is unreadable. */
export function readGraphSnapshot(directory: string, organizationId: string, kind: string): SavedGraph | undefined {
  const base = graphBase(organizationId, kind);
  let bytes: Buffer;
  try {
    bytes = readFileSync(join(directory, `${base}.map`));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const headerLength = bytes.readUInt32LE(0);
  const header = headerSchema.parse(JSON.parse(bytes.subarray(4, 4 + headerLength).toString("utf8")));
  if (header.organization_id !== organizationId || header.kind !== kind) throw new Error(`graph map ${base}.map belongs to another partition`);
  let offset = 4 + headerLength;
  // Copies: typed arrays need aligned offsets, the header's length is arbitrary.
  const labels = new Float64Array(bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + header.count * 8));
  offset += header.count * 8;
  const checksums = new Uint32Array(bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + header.count * 4));
  offset += header.count * 4;
  const ids = header.count === 0 ? [] : bytes.subarray(offset).toString("utf8").split("\n");
  if (labels.length !== header.count || checksums.length !== header.count || ids.length !== header.count) throw new Error(`graph map ${base}.map is truncated`);
  const entries = new Map<string, SavedGraphEntry>();
  ids.forEach((id, i) => entries.set(id, { label: labels[i] as number, checksum: checksums[i] as number }));
  return { header, graphPath: join(directory, header.graph_file), entries };
}

/** Removes the saved graph and map of a partition (its organization was deleted). */
export function removeGraphSnapshot(directory: string, organizationId: string, kind: string): void {
  const base = graphBase(organizationId, kind);
  let names: string[];
  try {
    names = readdirSync(directory);
  } catch {
    return;
  }
  for (const name of names) if (name.startsWith(`${base}.`)) rmSync(join(directory, name), { force: true });
}

function u8(array: Float64Array | Uint32Array): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}
