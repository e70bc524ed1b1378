// Schema versions of everything Troupe persists (docs/operations/upgrades.md).
// Every stored record carries the schema version it was written with; every
// reader hands what it read to `upgrade`, which runs the registered
// migrations from that version up to the current one, so data written by an
// older release reads as today's shape. Records written before versions
// existed (up to and including commit c069f89) carry none: they are version 0.
//
// How each store carries the version, chosen to cost the hot path nothing
// beyond a few bytes (a current record is returned as read):
//   - JSON text (Redis documents, actor state, the Redis ledger's records,
//     the usage journal, file metadata): `versionedJson` appends a last field
//     `"schema_version":N` to an object's JSON, a string concatenation around
//     JSON the writer serialized anyway. A reader of an older release ignores
//     the extra field (its zod schemas strip unknown keys), so replicas of the
//     previous and the next release can share the data during a rolling
//     upgrade. A value that is not an object (a timestamp string) is wrapped:
//     `{"schema_version":N,"$value":…}`;
//   - msgpack (embedded lmdb documents, ledger entries and budgets, vector
//     records): a field of the envelope or record the store writes anyway;
//   - vectors/meta.json and an Elasticsearch index's _meta: a
//     `schema_version` field.
// One version number covers every kind: a release that changes the shape of
// any record bumps SCHEMA_VERSION and registers, for each kind it changed, a
// step from the previous version; kinds it did not change take the "*" step.

/** The schema version this code writes. */
export const SCHEMA_VERSION = 1;

/**
 * What is persisted, by kind. Data-store documents are `data:` + the key's
 * prefix (`data:user`, `data:apikey`, `data:job`, …), actor states `actor:` +
 * the actor type.
 */
export type RecordKind =
  | `data:${string}`
  | `actor:${string}`
  | "usage-record"
  | "budget"
  | "file-metadata"
  | "vector-metadata"
  | "vector-record"
  | "reminder";

export interface Migration {
  /** The kind it applies to, or "*" for every kind without its own step from this version. */
  kind: RecordKind | "*";
  /** Migrates a record of version `from` to version `from + 1`. */
  from: number;
  /** Why the step exists: what changed in the shape. */
  why: string;
  up(value: unknown): unknown;
}

/**
 * The one list of migrations, oldest first. To change a record's shape: bump
 * SCHEMA_VERSION, add the step for that kind (and a "*" step, the identity,
 * for every other kind), and commit the fixtures the previous release wrote
 * (scripts/make-upgrade-fixtures.ts).
 */
export const migrations: readonly Migration[] = [
  {
    kind: "*",
    from: 0,
    why: "version 1 only adds the version mark: records of releases up to c069f89 (no mark) have today's shape",
    up: (value) => value,
  },
];

export class SchemaVersionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SchemaVersionError";
  }
}

/** Runs `list`'s steps for `kind` from `version` up to `target` (upgrade with the registered list; tests pass their own). */
export function migrateAlong(list: readonly Migration[], target: number, kind: RecordKind, version: number, value: unknown): unknown {
  if (!Number.isInteger(version) || version < 0 || version > target) {
    // Newer data than this code: a rollback past a schema change. Reading on would drop fields silently.
    throw new SchemaVersionError(`${kind} has schema version ${version}; this Troupe reads up to ${target} (roll forward, or restore a backup)`);
  }
  let current = value;
  for (let from = version; from < target; from++) {
    const step = list.find((m) => m.kind === kind && m.from === from) ?? list.find((m) => m.kind === "*" && m.from === from);
    if (!step) throw new SchemaVersionError(`no migration registered for ${kind} from schema version ${from} (core/schema-version.ts)`);
    current = step.up(current);
  }
  return current;
}

/** The record as today's code reads it: `value`, written with `version`, migrated forward. */
export function upgrade(kind: RecordKind, version: number, value: unknown): unknown {
  // The common case, every record this release wrote: returned as read, nothing allocated.
  if (version === SCHEMA_VERSION) return value;
  return migrateAlong(migrations, SCHEMA_VERSION, kind, version, value);
}

const versionField = `"schema_version":${SCHEMA_VERSION}`;

/** An already-serialized JSON value marked with the current version (see the top of this file). */
export function versionedJson(json: string): string {
  if (json.charCodeAt(0) !== 123 /* { */) return `{${versionField},"$value":${json}}`;
  return json.length === 2 ? `{${versionField}}` : `${json.slice(0, -1)},${versionField}}`;
}

/**
 * Reads a parsed record of `kind` (marked by versionedJson, or unmarked:
 * version 0) as today's shape, without its version field. For JSON text,
 * parseVersioned is cheaper: it drops a current mark before parsing.
 */
export function readVersioned(kind: RecordKind, parsed: unknown): unknown {
  if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) {
    const record = parsed as { schema_version?: unknown; $value?: unknown };
    const version = record.schema_version;
    if (typeof version === "number") {
      if ("$value" in record) return upgrade(kind, version, record.$value);
      delete record.schema_version;
      return upgrade(kind, version, record);
    }
  }
  return upgrade(kind, 0, parsed);
}

const currentTail = `,${versionField}}`;

/** Parses JSON text written by `versionedJson` (or before versions existed) and migrates it. */
export function parseVersioned(kind: RecordKind, text: string): unknown {
  // A current object record ends with its mark (an escaped quote inside a
  // string can never look like it): parsed without it, nothing to delete.
  // Deleting a property from a parsed object costs ~2 µs (bench/schema-version.ts).
  if (text.endsWith(currentTail)) return JSON.parse(`${text.slice(0, text.length - currentTail.length)}}`) as unknown;
  return readVersioned(kind, JSON.parse(text) as unknown);
}

/**
 * For records that carry the version as a field of their own (`schema_version`
 * in vectors/meta.json and an Elasticsearch index's `_meta`, `s` in msgpack
 * records): the record without that field, migrated.
 */
export function readVersionField(kind: RecordKind, parsed: unknown, field = "schema_version"): unknown {
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return upgrade(kind, 0, parsed);
  const { [field]: version, ...rest } = parsed as Record<string, unknown>;
  return upgrade(kind, typeof version === "number" ? version : 0, rest);
}

/** The data-store kind of a document key: its prefix before the first ':'. */
export function dataKind(key: string): RecordKind {
  const colon = key.indexOf(":");
  return `data:${colon === -1 ? key : key.slice(0, colon)}`;
}
