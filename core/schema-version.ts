// Schema versions of everything Troupe persists (docs/operations/upgrades.md).
// Every stored record carries the schema version it was written with; every
// reader hands what it read to `upgrade`, which runs the registered
// migrations from that version up to the current one, so data written by an
// older release reads as today's shape. Records written before versions
// existed (up to and including commit c069f89) carry none: they are version 0.
//
// How each store carries the version, chosen to cost the hot path nothing
// beyond a few bytes (a current record is returned as read, untouched):
//   - JSON text (Redis documents, actor state, the Redis ledger's records,
//     the usage journal, file and vector metadata): an envelope written by
//     `versionedJson`, `{"schema_version":N,"value":…}`, built by string
//     concatenation around JSON the writer serialized anyway;
//   - msgpack (embedded lmdb documents and ledger entries): a field of the
//     envelope or entry the store writes anyway.
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
export type RecordKind = `data:${string}` | `actor:${string}` | "usage-record" | "file-metadata" | "vector-metadata";

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

function step(kind: RecordKind, from: number): Migration {
  const own = migrations.find((m) => m.kind === kind && m.from === from);
  const found = own ?? migrations.find((m) => m.kind === "*" && m.from === from);
  if (!found) throw new SchemaVersionError(`no migration registered for ${kind} from schema version ${from} (core/schema-version.ts)`);
  return found;
}

/** The record as today's code reads it: `value`, written with `version`, migrated forward. */
export function upgrade(kind: RecordKind, version: number, value: unknown): unknown {
  if (version === SCHEMA_VERSION) return value;
  if (!Number.isInteger(version) || version < 0 || version > SCHEMA_VERSION) {
    // Newer data than this code: a rollback past a schema change. Reading on would drop fields silently.
    throw new SchemaVersionError(`${kind} has schema version ${version}; this Troupe reads up to ${SCHEMA_VERSION} (roll forward, or restore a backup)`);
  }
  let current = value;
  for (let from = version; from < SCHEMA_VERSION; from++) current = step(kind, from).up(current);
  return current;
}

const envelopeStart = `{"schema_version":`;

/** The envelope of an already-serialized JSON value, at the current version. */
export function versionedJson(json: string): string {
  return `${envelopeStart}${SCHEMA_VERSION},"value":${json}}`;
}

/** A parsed envelope's version and value; anything else is an unversioned (version 0) value. */
export function openEnvelope(parsed: unknown): { version: number; value: unknown } {
  if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) {
    const record = parsed as { schema_version?: unknown; value?: unknown };
    if (typeof record.schema_version === "number" && "value" in record) return { version: record.schema_version, value: record.value };
  }
  return { version: 0, value: parsed };
}

/** Reads a parsed envelope (or a version-0 value) of `kind` as today's shape. */
export function readVersioned(kind: RecordKind, parsed: unknown): unknown {
  const { version, value } = openEnvelope(parsed);
  return upgrade(kind, version, value);
}

/** Parses JSON text written by `versionedJson` (or before versions existed) and migrates it. */
export function parseVersioned(kind: RecordKind, text: string): unknown {
  return readVersioned(kind, JSON.parse(text) as unknown);
}

/** The data-store kind of a document key: its prefix before the first ':'. */
export function dataKind(key: string): RecordKind {
  const colon = key.indexOf(":");
  return `data:${colon === -1 ? key : key.slice(0, colon)}`;
}
